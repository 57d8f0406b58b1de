"""Lint Python source with the stdlib ``ast``: imports and aliases are tracked, so
``import torch.cuda as tc`` then ``tc.synchronize()`` is ``torch.cuda.synchronize``.

What is silent (the code is right, or not code):

* a branch that only runs without an NPU: every arm of an ``if``/``elif``/conditional
  expression chain whose test looks at the NPU, and the statements after an
  ``if <npu test>: return`` in the same block;
* the body of ``if torch.cuda.is_available():`` (never runs on the NPU: the test is the one
  finding) and imports inside ``try: ... except ImportError``;
* device-agnostic code (``.to(device)``, ``torch.accelerator``, ``device_type`` variables),
  comparisons ``x.device.type == "cuda"``;
* docstrings, comments, and the text of log, print, warning and exception messages (the
  expressions interpolated into an f-string are code, and are linted);
* reads of cuDNN flags (``if cudnn.benchmark:``; only setting one is reported), CUDA variables
  read with a fallback (``os.getenv("CUDA_VISIBLE_DEVICES", "0")``), and "cuda" given to a str
  method that searches or cuts text (``device.replace("cuda:", "")``);
* with ``torch_npu.contrib.transfer_to_npu`` imported: what it remaps (its documented limits are
  still reported, LNT015).
"""

from __future__ import annotations

import ast
import re
from typing import Dict, Iterable, List, Optional, Set, Tuple

from npudoctor import lazyre
from npudoctor.knowledge.torch_autoload import autoload
from npudoctor.knowledge.versions import major_minor
from npudoctor.lint import rules
from npudoctor.lint.knowledge import LintKnowledge
from npudoctor.lint.model import Edit

_MESSAGE_FUNCS = {"print", "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "fatal"}
_DEVICE_PREFIXES = ("cuda:", "cuda")
_CUDNN_FLAGS = {"benchmark", "deterministic", "enabled", "allow_tf32"}
#: Other device types: a literal collection that names one of them beside "cuda" enumerates
#: device types (a table of backends), it does not place anything on CUDA.
_OTHER_DEVICES = {"cpu", "xpu", "npu", "mps", "hpu", "mlu", "musa", "xla", "meta", "sdaa", "mtia", "ipu"}
#: str methods whose arguments are patterns searched in (or cut from) a string.
_STRING_SEARCH = {
    "replace",
    "startswith",
    "endswith",
    "split",
    "rsplit",
    "strip",
    "lstrip",
    "rstrip",
    "removeprefix",
    "removesuffix",
    "find",
    "rfind",
    "index",
    "rindex",
    "count",
    "partition",
    "rpartition",
}
#: The AMP API each torch.cuda.amp name maps to (a field of the lint knowledge's AmpApi).
_AMP_PICK = {
    "autocast": "autocast",
    "GradScaler": "grad_scaler",
    "custom_fwd": "custom_fwd",
    "custom_bwd": "custom_bwd",
}
#: torch.cuda.amp.autocast's positional parameters, in order.
_AUTOCAST_ARGS = ("enabled", "dtype", "cache_enabled")
#: What a torch.cuda.amp name does on the NPU ({} is the name as called).
_AMP_MESSAGE = {
    "": "{} is CUDA's mixed precision: disabled on the NPU, training runs in float32",
    "custom_fwd": "{} reads CUDA's autocast state, which is off on the NPU: under NPU autocast its cast_inputs "
    "is not applied and backward does not get forward's autocast state",
    "custom_bwd": "{} replays CUDA's autocast state, which is off on the NPU: backward does not run in "
    "forward's NPU autocast state",
}
_HCCL_LITERAL = lazyre.pattern(r"""['"]hccl['"]""", re.IGNORECASE)
_EXIT = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_SEED_OK = {
    "torch.manual_seed",
    "torch.npu.manual_seed",
    "torch.npu.manual_seed_all",
    "torch_npu.npu.manual_seed",
    "torch_npu.npu.manual_seed_all",
    "torch.random.manual_seed",
}


def _mentions_npu(node: ast.AST) -> bool:
    """Whether a test expression looks at the NPU (a name, attribute or string with "npu")."""
    for sub in ast.walk(node):
        text = ""
        if isinstance(sub, ast.Name):
            text = sub.id
        elif isinstance(sub, ast.Attribute):
            text = sub.attr
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            text = sub.value
        if "npu" in text.lower() or "ascend" in text.lower():
            return True
    return False


def _on_cpu(node: ast.AST) -> bool:
    """Whether ``node`` is a tensor just moved to the CPU (``x.cpu()``, ``x.detach().cpu()``)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "cpu"


def _turns_off(call: ast.Call) -> bool:
    """Whether an autocast call says ``enabled=False`` (by keyword or as its first argument)."""
    values = [k.value for k in call.keywords if k.arg == "enabled"] + list(call.args[:1])
    return any(isinstance(v, ast.Constant) and v.value is False for v in values)


def _is_device_string(text: str) -> bool:
    if text == "cuda":
        return True
    return text.startswith("cuda:") and (text[5:].isdigit() or text[5:] in ("", "{}", "%d", "%s", "{0}"))


class _Scan(ast.NodeVisitor):
    def __init__(
        self,
        knowledge: LintKnowledge,
        lines: List[str],
        torch_npu: Optional[Tuple[int, int]],
        no_bf16: Optional[str] = None,
        npus: Optional[int] = None,
    ) -> None:
        self.no_bf16 = no_bf16
        self.npus = npus
        self.k = knowledge
        self.lines = lines
        self.text = "\n".join(lines)
        low = self.text.lower()
        self.has_available = "is_available" in self.text
        self.has_cuda = "cuda" in low
        self.has_npu = "npu" in low or "ascend" in low
        self.torch_npu = torch_npu
        self.aliases: Dict[str, str] = {}
        self.hits: List[Tuple[ast.AST, str, str, str, Optional[Edit], Optional[str]]] = []
        self.silent: List[Tuple[int, int]] = []
        self.skip: Set[int] = set()
        self.message_depth = 0
        self.compare_depth = 0
        self.transfer = False
        self.seeded = False
        self.cuda_seeds: List[ast.AST] = []
        self.guarded_imports: Set[int] = set()
        self.cuda_flags: Set[str] = set()
        self.top_level: Set[int] = set()
        self.libraries_seen: Set[str] = set()
        self.knows_hccl = False
        self.f64_names: Dict[str, ast.AST] = {}
        self.decorators: Set[int] = set()
        self.calls: Dict[int, ast.Call] = {}  # a called function's node -> its call
        self.assigned: Dict[int, ast.expr] = {}  # an assignment's target -> the value assigned

    # -- helpers ---------------------------------------------------------------------------
    def qual(self, node: ast.AST) -> Optional[str]:
        """The dotted name ``node`` refers to through the imports, or ``None``."""
        parts: List[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        parts.append(self.aliases[node.id])
        return ".".join(reversed(parts))

    def add(
        self,
        node: ast.AST,
        code: str,
        message: str,
        fix: str,
        edit: Optional[Edit] = None,
        severity: Optional[str] = None,
    ) -> None:
        self.hits.append((node, code, message, fix, edit, severity))

    # -- imports ---------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                self.aliases[top] = top
            if alias.name == "torch_npu.contrib.transfer_to_npu":
                self.transfer = True
            self._library(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}" if module else alias.name
            if module == "torch_npu.contrib" and alias.name == "transfer_to_npu":
                self.transfer = True
        if node.level == 0:
            self._library(node, module)

    def _library(self, node: ast.AST, module: str) -> None:
        if id(node) in self.guarded_imports or id(node) not in self.top_level:
            return  # an import in a function, a branch or a try is optional: not reported
        lib = self.k.libraries.get(module.split(".")[0])
        if lib is None or lib.module in self.libraries_seen:
            return  # one finding per library and file: its first import
        self.libraries_seen.add(lib.module)
        fix = f"on the NPU: {lib.npu_replacement}" if lib.npu_replacement else "no NPU build is published: remove it"
        self.add(node, "LNT008", lib.short, fix, severity=lib.severity)

    def visit_Try(self, node: ast.Try) -> None:
        caught = set()
        for handler in node.handlers:
            if handler.type is None:
                caught.add("*")
            for sub in ast.walk(handler.type) if handler.type is not None else ():
                if isinstance(sub, ast.Name):
                    caught.add(sub.id)
        if caught & {"ImportError", "ModuleNotFoundError", "Exception", "*"}:
            for stmt in node.body:
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    self.guarded_imports.add(id(stmt))
        self.generic_visit(node)

    # -- control flow ----------------------------------------------------------------------
    def _block(self, stmts: List[ast.stmt]) -> None:
        for i, stmt in enumerate(stmts):
            if (
                isinstance(stmt, ast.If)
                and self.has_npu
                and _mentions_npu(stmt.test)
                and stmt.body
                and isinstance(stmt.body[-1], _EXIT)
                and i + 1 < len(stmts)
            ):
                last = stmts[-1]
                self.silent.append((stmts[i + 1].lineno, getattr(last, "end_lineno", last.lineno) or last.lineno))

    def generic_visit(self, node: ast.AST) -> None:
        if not isinstance(node, (ast.stmt, ast.Module, ast.excepthandler)):
            super().generic_visit(node)
            return
        for name in ("body", "orelse", "finalbody"):
            stmts = getattr(node, name, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                self._block(stmts)
        super().generic_visit(node)

    def _chain_tests(self, node: ast.If) -> List[ast.expr]:
        tests = [node.test]
        while len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
            tests.append(node.test)
        return tests

    def visit_If(self, node: ast.If) -> None:
        if self.has_npu and any(_mentions_npu(t) for t in self._chain_tests(node)):
            self.silent.append((node.lineno, node.end_lineno or node.lineno))
            return
        if self._cuda_available_test(node.test):
            self.visit(node.test)
            for stmt in node.body:
                self.silent.append((stmt.lineno, stmt.end_lineno or stmt.lineno))
            for stmt in node.orelse:
                self.visit(stmt)
            return
        if self._cuda_only_test(node.test):
            self.visit(node.test)
            for stmt in node.orelse:
                self.visit(stmt)
            return  # the body runs only where the tensor is on a CUDA device
        self.generic_visit(node)

    def _cuda_only_test(self, test: ast.AST) -> bool:
        """True only on CUDA: ``x.device.type == "cuda"``, ``x.is_cuda``, ``torch.version.cuda``,
        or a name assigned from ``torch.cuda.is_available()`` (reported where it is assigned)."""
        if not self.has_cuda:
            return False
        if isinstance(test, ast.Call) and self.qual(test.func) != "torch.cuda.is_available":
            func = test.func
            name = (
                func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            ).lower()
            if "cuda" in name and "avail" in name:
                return True  # is_torch_cuda_available(): a project's own CUDA check guards its body
        for sub in ast.walk(test):
            if isinstance(sub, ast.Name) and sub.id in self.cuda_flags:
                return True
            if isinstance(sub, ast.Attribute) and self.qual(sub) in ("torch.version.cuda", "torch.version.hip"):
                return True
            if isinstance(sub, ast.Attribute) and sub.attr == "is_cuda":
                return True
            if isinstance(sub, ast.Compare) and any(
                isinstance(c, ast.Constant) and c.value == "cuda" for c in [sub.left, *sub.comparators]
            ):
                return True
        return False

    def _decorators(self, node: ast.AST) -> None:
        """Strings in decorators are metadata (``@pytest.mark.runs_on(["cuda"])``), not placements."""
        for deco in getattr(node, "decorator_list", ()):
            self.decorators.add(id(deco))
            self.skip.update(id(n) for n in ast.walk(deco) if isinstance(n, (ast.Constant, ast.JoinedStr)))
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._decorators(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._decorators(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._decorators(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        value = node.value
        for target in node.targets:
            self.assigned[id(target)] = value
            if (
                isinstance(target, ast.Subscript)
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
                and any(
                    isinstance(n, ast.Constant) and n.value == "ASCEND_RT_VISIBLE_DEVICES" for n in ast.walk(target)
                )
            ):
                problem = rules.visible_devices_problem(value.value, self.npus)
                if problem is not None:
                    self.add(
                        value,
                        "LNT018",
                        f"ASCEND_RT_VISIBLE_DEVICES={problem}",
                        "comma-separated ascending IDs, no spaces, below the NPU count",
                    )
        if (
            isinstance(value, ast.Constant)
            and isinstance(value.value, str)
            and any(isinstance(t, ast.Name) and t.id.lower() == value.value for t in node.targets)
        ):
            return  # CUDA = "cuda": a named constant of a device-type table
        if self._cuda_available_test(node.value):
            self.cuda_flags.update(t.id for t in node.targets if isinstance(t, ast.Name))
        chosen = self._f64_choice(node.value)
        if chosen is not None:  # a dtype variable: reported where it is given as a dtype
            self.f64_names.update((t.id, chosen) for t in node.targets if isinstance(t, ast.Name))
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        """In ``a and b and c``, the operands after a CUDA-only guard run only on CUDA."""
        if not isinstance(node.op, ast.And):
            self.generic_visit(node)
            return
        for value in node.values:
            self.visit(value)
            if self._cuda_available_test(value) or self._cuda_only_test(value):
                break

    def _enumeration(self, elts: List[Optional[ast.expr]]) -> None:
        names = {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        if names & _OTHER_DEVICES:
            self.skip.update(id(e) for e in elts if e is not None)

    def visit_List(self, node: ast.List) -> None:
        self._enumeration(list(node.elts))
        self.generic_visit(node)

    def visit_Tuple(self, node: ast.Tuple) -> None:
        self._enumeration(list(node.elts))
        self.generic_visit(node)

    def visit_Set(self, node: ast.Set) -> None:
        self._enumeration(list(node.elts))
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        self._enumeration(list(node.keys))
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.value, (ast.Name, ast.Attribute)) and (
            getattr(node.value, "id", None) == "Literal" or getattr(node.value, "attr", None) == "Literal"
        ):
            return  # a type: Literal["cpu", "cuda"]
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        if self.has_npu and _mentions_npu(node.test):
            self.skip.update(id(n) for n in ast.walk(node))
            return
        self.generic_visit(node)

    def _cuda_available_test(self, test: ast.AST) -> bool:
        if not self.has_available:
            return False
        return any(
            isinstance(sub, ast.Call) and self.qual(sub.func) == "torch.cuda.is_available" for sub in ast.walk(test)
        ) and not isinstance(test, ast.UnaryOp)

    # -- module docstrings, messages, comparisons --------------------------------------------
    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring or a bare string: not code
        self.generic_visit(node)

    def _message_call(self, node: ast.Call) -> bool:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in _MESSAGE_FUNCS

    def visit_Raise(self, node: ast.Raise) -> None:
        self.message_depth += 1
        self.generic_visit(node)
        self.message_depth -= 1

    def visit_Assert(self, node: ast.Assert) -> None:
        self.visit(node.test)
        if node.msg is not None:
            self.message_depth += 1
            self.visit(node.msg)
            self.message_depth -= 1

    def visit_Compare(self, node: ast.Compare) -> None:
        self.compare_depth += 1
        self.generic_visit(node)
        self.compare_depth -= 1

    # -- strings ---------------------------------------------------------------------------
    def visit_Constant(self, node: ast.Constant) -> None:
        if id(node) in self.skip or self.message_depth or not isinstance(node.value, str):
            return
        text = node.value
        if self.no_bf16 and text in ("bfloat16", "bf16") and not self.compare_depth:
            self._bf16(node)
            return
        if text == "nccl":
            if self.compare_depth and self.transfer:
                self.add(
                    node,
                    "LNT015",
                    'transfer_to_npu replaces the backend "nccl" by "hccl" at init_process_group, so this '
                    'comparison against "nccl" no longer matches',
                    'compare against "hccl"',
                    rules.replace_string(node, self.lines, "hccl"),
                )
            elif self.knows_hccl:
                pass  # the code knows HCCL too: "nccl" is its CUDA branch
            elif not self.transfer or self.compare_depth:
                self.add(
                    node,
                    "LNT002",
                    'backend "nccl" is NVIDIA\'s collective library; the NPU backend is "hccl"',
                    'use "hccl"',
                    rules.replace_string(node, self.lines, "hccl"),
                )
            return
        if text in self.k.commands:
            npu = self.k.commands[text]
            self.add(
                node,
                "LNT014",
                f"{text} is an NVIDIA tool, absent on an Ascend host",
                npu or "remove it (no NPU counterpart)",
            )
            return
        var = self.k.env_var(text)
        if var is not None and not self.message_depth:
            self._env(node, text, var.npu)
            return
        if self.compare_depth or self.transfer:
            return
        if _is_device_string(text):
            new = "npu" + text[4:]
            self.add(
                node,
                "LNT001",
                f'device "{text}" is a CUDA device; the NPU is "npu"',
                f'use "{new}" (or a device variable)',
                rules.replace_string(node, self.lines, new),
            )

    def _env(self, node: ast.AST, name: str, npu: str) -> None:
        if npu and npu in self.text:
            return  # the NPU variable is set too: a script for both stacks
        if npu:
            self.add(node, "LNT013", f"{name} is read by the CUDA stack only", f"use {npu}")
        else:
            self.add(
                node,
                "LNT013",
                f"{name} configures NCCL; HCCL does not read it",
                "remove it, or set the HCCL_* variable that matches",
                severity="info",
            )

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        # the text is a message or a device string; the interpolated expressions are code
        # (f"{torch.cuda.max_memory_allocated()}" calls CUDA's allocator even inside a log call)
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                self.visit(part.value)
        if id(node) in self.skip or self.message_depth or self.compare_depth or self.transfer:
            return
        first = node.values[0] if node.values else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("cuda:"):
            self.add(node, "LNT001", "device string built as cuda:<index> is a CUDA device", 'use f"npu:{...}"')

    def visit_BinOp(self, node: ast.BinOp) -> None:
        left = node.left
        if (
            id(node) not in self.skip
            and not (self.message_depth or self.compare_depth or self.transfer)
            and isinstance(node.op, (ast.Add, ast.Mod))
            and isinstance(left, ast.Constant)
            and isinstance(left.value, str)
            and left.value in ("cuda:", "cuda:%d", "cuda:%s")
        ):
            self.skip.add(id(left))
            self.add(node, "LNT001", "device string built as cuda:<index> is a CUDA device", 'use "npu:" + the index')
        self.generic_visit(node)

    # -- calls and attributes --------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        if id(node) in self.skip:
            return
        self.calls[id(node.func)] = node
        if self._message_call(node):
            self.message_depth += 1
            self.generic_visit(node)
            self.message_depth -= 1
            return
        func = node.func
        q = self.qual(func)
        if isinstance(func, ast.Attribute) and func.attr in _STRING_SEARCH:
            # "cuda:" searched, stripped or split off a string is text handling, not a device
            # (only the pattern of replace: its replacement is a new string)
            args = node.args[:1] if func.attr == "replace" else node.args
            self.skip.update(id(a) for a in args if isinstance(a, ast.Constant))
        if q in ("os.getenv", "os.environ.get") and len(node.args) == 2 and isinstance(node.args[0], ast.Constant):
            self.skip.add(id(node.args[0]))  # a read with a fallback: the code copes with its absence
        if isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant):
            value = func.value.value
            if isinstance(value, str) and value.startswith("cuda:") and not (self.message_depth or self.transfer):
                self.skip.add(id(func.value))
                self.add(node, "LNT001", "device string built as cuda:<index> is a CUDA device", '"npu:{}".format(...)')
        if isinstance(func, ast.Attribute) and func.attr == "cuda" and q is None and not self.transfer:
            self.add(
                node,
                "LNT001",
                ".cuda() moves to a CUDA device",
                ".npu() or .to(device)",
                rules.rename_attr(func, self.lines, "npu"),
            )
        if q in ("torch.load",) and not any(k.arg == "map_location" for k in node.keywords) and len(node.args) < 2:
            self.add(
                node,
                "LNT005",
                "torch.load without map_location restores tensors to the device they were saved from",
                'torch.load(..., map_location="cpu")',
                rules.append_keyword(node, self.lines, 'map_location="cpu"'),
            )
        if q in _SEED_OK or (q or "").endswith("seed_everything") or (q or "").endswith("set_seed"):
            self.seeded = True
        if q in ("torch.jit.script",) and self.transfer:
            self.add(
                node,
                "LNT015",
                "transfer_to_npu masks torch.jit.script: the function runs as plain Python",
                "drop the scripting, or migrate with the tool (msFmkTransplt) instead of transfer_to_npu",
            )
        self._float64(node, q)
        if isinstance(func, ast.Attribute) and func.attr == "to" and self.transfer:
            for arg in list(node.args) + [k.value for k in node.keywords if k.arg == "memory_format"]:
                if self.qual(arg) == "torch.channels_last":
                    self.add(node, "LNT015", "transfer_to_npu does not support channels_last", "use .contiguous()")
        for kw in node.keywords:
            if self.no_bf16 and kw.arg == "bf16" and isinstance(kw.value, ast.Constant) and kw.value.value is True:
                self._bf16(kw.value)
            if kw.arg == "enabled" and any(
                isinstance(s, ast.Call) and self.qual(s.func) == "torch.cuda.is_available" for s in ast.walk(kw.value)
            ):
                self.skip.update(id(s) for s in ast.walk(kw.value))
                self.add(
                    kw.value,
                    "LNT012",
                    "enabled=torch.cuda.is_available() is False on the NPU: mixed precision is off",
                    "enabled=torch.npu.is_available()",
                )
        self.generic_visit(node)

    def _float64(self, node: ast.Call, q: Optional[str]) -> None:
        """float64 asked for: ``dtype=torch.float64``, ``.to(torch.double)``, ``.double()``,
        ``torch.set_default_dtype(torch.float64)`` (a comparison or NumPy's float64 is not)."""
        f64 = self.k.float64
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in f64.methods and q is None and not node.args:
            if not _on_cpu(func.value):
                self._f64(node, f".{func.attr}()")
            return
        candidates = [k.value for k in node.keywords if k.arg == "dtype"]
        if (isinstance(func, ast.Attribute) and func.attr == "to" and q is None) or q in f64.dtype_calls:
            candidates.extend(node.args)
        for value in candidates:
            name = self.qual(value)
            if name in f64.dtypes:
                self._f64(value, name)
            elif isinstance(value, ast.Name) and value.id in self.f64_names:
                where = self.f64_names.pop(value.id)  # reported once, where float64 is chosen
                self._f64(where, str(self.qual(where)))

    def _f64_choice(self, value: ast.AST) -> Optional[ast.AST]:
        """The float64 dtype node that ``value`` gives (``torch.float64``, or an arm of a
        conditional expression whose test does not look at the NPU), else ``None``."""
        if self.qual(value) in self.k.float64.dtypes:
            return value
        if isinstance(value, ast.IfExp) and not (self.has_npu and _mentions_npu(value.test)):
            return self._f64_choice(value.body) or self._f64_choice(value.orelse)
        return None

    def _f64(self, node: ast.AST, what: str) -> None:
        self.add(
            node,
            "LNT019",
            f"{what} makes float64 tensors: many NPU operators have no float64 kernel "
            "(EZ1001 ... not implemented for DT_DOUBLE)",
            "float32 (dtype=torch.float32, .float()) for tensors on the NPU, or keep the float64 math on the CPU",
        )

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if id(node) in self.skip:
            return
        q = self.qual(node)
        if q is None:
            self.generic_visit(node)
            return
        if q == "torch.bfloat16" and self.no_bf16:
            self._bf16(node)
            return
        if q.startswith("torch.cuda.") or q == "torch.cuda.amp":
            self._torch_cuda(node, q[len("torch.cuda.") :])
            return
        if q.startswith("torch.backends.cudnn.") or q.startswith("torch.backends.cuda.matmul."):
            flag = q.split(".")[-1]
            if flag in _CUDNN_FLAGS and isinstance(node.ctx, ast.Store):  # a read is a test, not a setting
                self._backend_flag(node, q)
            return
        if q == "torch.channels_last" and self.transfer:
            return
        self.generic_visit(node)

    def _backend_flag(self, node: ast.Attribute, q: str) -> None:
        """A cuDNN / cuBLAS flag set: the NPU setting that does what the value assigned asks
        (``deterministic = False`` asks for nothing the NPU does not already do)."""
        message = f"{q} configures cuDNN/cuBLAS and has no effect on the NPU"
        spec = self.k.flags.get(q)
        if spec is None:
            self.add(node, "LNT006", message, "remove it (no effect on the NPU)")
            return
        value = self.assigned.get(id(node))
        setting = spec.npu.split(" = ")[0].split("(")[0]
        line = self.torch_npu
        if spec.since is not None and line is not None and line < spec.since:
            self.add(
                node,
                "LNT006",
                message,
                f"remove it: torch_npu {line[0]}.{line[1]} has no {setting} "
                f"(torch_npu {spec.since[0]}.{spec.since[1]} and later have it)",
            )
            return
        if isinstance(value, ast.Constant) and value.value is spec.npu_default:
            self.add(
                node,
                "LNT006",
                f"{q} = {value.value} configures cuDNN/cuBLAS only; on the NPU {setting} is {value.value} by default",
                "nothing to do on the NPU: remove it",
                severity="info",
            )
            return
        text = self._segment(value) if value is not None else None
        if text is None:
            self.add(node, "LNT006", message, f"on the NPU: {spec.npu.format('...')}, with the value assigned here")
            return
        notes = [spec.note] if spec.note else []
        if spec.since is not None and line is None:
            notes.insert(0, f"torch_npu >= {spec.since[0]}.{spec.since[1]}")
        fix = spec.npu.format(text) + (f"  # {'; '.join(notes)}" if notes else "")
        self.add(node, "LNT006", message, fix)

    def visit_Name(self, node: ast.Name) -> None:
        if id(node) in self.skip:
            return
        q = self.aliases.get(node.id)
        if q is not None and q.startswith("torch.cuda."):
            self._torch_cuda(node, q[len("torch.cuda.") :])

    def _torch_cuda(self, node: ast.AST, rest: str) -> None:
        head = rest.split(".")[0]
        if head == "amp":
            self._amp(node, rest)
            return
        if head == "is_available":
            if not self.transfer:
                self.add(
                    node,
                    "LNT009",
                    "torch.cuda.is_available() is False on the NPU: this code takes its non-CUDA (CPU) path",
                    "torch.npu.is_available()",
                    rules.replace_node(node, self.lines, "torch.npu.is_available"),
                )
            return
        if head == "device_count":
            if not self.transfer:
                self.add(
                    node,
                    "LNT010",
                    "torch.cuda.device_count() is 0 on the NPU (no worker is started, world size 0)",
                    "torch.npu.device_count()",
                    rules.replace_node(node, self.lines, "torch.npu.device_count"),
                )
            return
        if head in ("manual_seed", "manual_seed_all"):
            self.cuda_seeds.append(node)
            return
        if head == "nvtx":
            self._nvtx(node, rest)
            return
        if head in self.k.graphs:
            if not self.transfer:
                self.add(node, "LNT007", f"torch.cuda.{head} captures CUDA graphs", self.k.graphs[head])
            return
        if head == "default_generators" and self.transfer:
            self.add(
                node,
                "LNT015",
                "transfer_to_npu does not remap torch.cuda.default_generators",
                "torch_npu.npu.default_generators",
            )
            return
        npu = self.k.cuda_api.get(head)
        if npu == "":
            self.add(node, "LNT003", f"torch.cuda.{head} has no NPU counterpart", "remove it or guard it for CUDA only")
        elif not self.transfer:
            target = npu or f"torch.npu.{head}"
            note = "" if npu else " (check Ascend's API support list)"
            self.add(
                node,
                "LNT003",
                f"torch.cuda.{head} is CUDA's",
                f"{target}{note}",
                rules.replace_node(node, self.lines, target) if npu and "." not in rest else None,
            )

    def _nvtx(self, node: ast.AST, rest: str) -> None:
        """``torch.cuda.nvtx.*``: the torch_npu.npu.mstx counterpart, where the torch_npu
        release line has one."""
        name = rest.split(".")[1] if "." in rest else ""
        how = self.k.nvtx.get(name, self.k.nvtx.get("", ""))
        call = self.calls.get(id(node))
        text = self._segment(call.args[0]) if call is not None and len(call.args) == 1 else None
        if text is not None:
            how = how.replace("(msg)", f"({text})")  # the call's own message
        message = f"torch.cuda.{rest} is CUDA's profiler annotation (NVTX), which torch without CUDA does not have"
        releases = self.k.mstx_in(self.torch_npu)
        line = self.torch_npu
        if releases is None and line is not None:
            fix = (
                f"remove it or guard it for CUDA only: torch_npu {line[0]}.{line[1]} has no torch_npu.npu.mstx ranges "
                f"(torch_npu {self.k.mstx_in(None)})"
            )
        else:
            fix = how + (f" (torch_npu {releases})" if releases else "")
        self.add(node, "LNT003", message, fix)

    def _bf16(self, node: ast.AST) -> None:
        self.add(node, "LNT017", f"bfloat16 on this machine: {self.no_bf16}", "use float16 (torch.float16, fp16=True)")

    def _segment(self, node: ast.AST) -> Optional[str]:
        """The source text of a one-line ``node`` (``None`` when it spans lines)."""
        text = ast.get_source_segment(self.text, node)
        return None if text is None or "\n" in text else text

    def _amp_call(self, call: ast.Call, api: str, pick: str) -> Optional[str]:
        """``api`` (an AMP API as the lint data spells it: ``torch.amp.autocast("npu")``,
        ``torch_npu.npu.amp.custom_fwd``) called with the arguments of ``call``, the
        torch.cuda.amp call it replaces, so ``enabled=False`` or ``dtype=`` stay what the user
        asked for.  autocast's positional arguments are named (torch.amp.autocast takes the
        device first); ``None`` when an argument cannot be carried over on one line."""
        callee, _, inner = api.partition("(")
        inner = inner[:-1] if inner.endswith(")") else inner
        head = [inner] if inner and "=" not in inner else []
        tail = [inner] if inner and "=" in inner else []
        positional: List[str] = []
        named: List[str] = []
        for i, arg in enumerate(call.args):
            text = self._segment(arg)
            if text is None:
                return None
            if pick == "autocast":
                if isinstance(arg, ast.Starred) or i >= len(_AUTOCAST_ARGS):
                    return None
                named.append(f"{_AUTOCAST_ARGS[i]}={text}")
            else:
                positional.append(text)
        for kw in call.keywords:
            text = self._segment(kw.value)
            if text is None:
                return None
            named.append(f"{kw.arg}={text}" if kw.arg else f"**{text}")
        return f"{callee}({', '.join(head + positional + tail + named)})"

    def _amp(self, node: ast.AST, rest: str) -> None:
        if self.transfer:
            return
        api = self.k.amp_for(self.torch_npu)
        what = rest.split(".")[-1]
        pick = _AMP_PICK.get(what)
        call = self.calls.get(id(node))
        if pick is None:
            fix = f"the NPU AMP API ({api.autocast})" if api is not None else self.k.amp_unknown("autocast")
        elif call is not None and (call.args or call.keywords):
            found = call

            def spell(name: str) -> str:
                return self._amp_call(found, name, pick) or f"{name} with this call's arguments, by keyword"

            fix = spell(str(getattr(api, pick))) if api is not None else self.k.amp_unknown(pick, spell)
        else:
            fix = str(getattr(api, pick)) if api is not None else self.k.amp_unknown(pick)
        edit = None
        spelled = f"torch.cuda.{rest}"
        if api is not None and pick is not None:
            new = str(getattr(api, pick))
            if call is None or not call.args or not new.partition("(")[2].rstrip(")") or pick == "grad_scaler":
                # the call's own text kept: its arguments mean the same after the API's own
                # (GradScaler's positional ones follow torch.amp.GradScaler's device)
                edit = rules.rename_call(node, self.lines, spelled, new)
            elif self._segment(call.func) == spelled:
                whole = self._amp_call(call, new, pick)
                edit = rules.replace_call(call, self.lines, whole) if whole is not None else None
            if edit is None and id(node) in self.decorators and pick.startswith("custom_"):
                edit = rules.replace_node(node, self.lines, new)  # a bare @torch.cuda.amp.custom_fwd
        message = _AMP_MESSAGE.get(what, _AMP_MESSAGE[""]).format(spelled)
        if pick == "autocast" and call is not None and _turns_off(call):
            message = f"{spelled}(enabled=False) turns CUDA autocast off, not the NPU's: under NPU autocast this region runs in mixed precision"
        self.add(node, "LNT004", message, fix, edit)


Raw = Tuple[int, int, int, str, str, str, Tuple[Edit, ...], Optional[str]]


def scan(
    tree: ast.AST,
    lines: List[str],
    knowledge: LintKnowledge,
    torch_npu: Optional[Tuple[int, int]] = None,
    no_bf16: Optional[str] = None,
    npus: Optional[int] = None,
) -> List[Raw]:
    """``(line, end_line, col, code, message, fix, edit, severity)`` of each CUDA-ism in ``tree``."""
    s = _Scan(knowledge, lines, torch_npu, no_bf16, npus)
    low = s.text.lower()
    if not _may_hit(low, knowledge) and not (no_bf16 and ("bf16" in low or "bfloat16" in low)):
        return []  # nothing any rule looks for is named in the file: no walk
    body = tree.body if isinstance(tree, ast.Module) else []
    s.top_level = {id(stmt) for stmt in body if isinstance(stmt, (ast.Import, ast.ImportFrom))}
    s.knows_hccl = _HCCL_LITERAL.search(s.text) is not None
    s.visit(tree)
    if s.cuda_seeds and not s.seeded and not s.transfer:
        for node in s.cuda_seeds:
            call = s.calls.get(id(node))
            seed = s._segment(call.args[0]) if call is not None and len(call.args) == 1 else None
            s.add(
                node,
                "LNT011",
                "the seed is set for CUDA only: the NPU generator stays unseeded",
                f"torch.manual_seed({seed})" if seed is not None else "torch.manual_seed with the seed given here",
            )
    out: List[Raw] = []
    for node, code, message, fix, edit, severity in s.hits:
        line: int = getattr(node, "lineno", 1)
        if any(a <= line <= b for a, b in s.silent):
            continue
        end: int = getattr(node, "end_lineno", line) or line
        col: int = getattr(node, "col_offset", 0)
        out.append((line, end, col, code, message, fix, (edit,) if edit is not None else (), severity))
    out = _fold(out)
    if not s.transfer and "torch_npu" not in s.text:
        need = _import_torch_npu(tree, lines, out, torch_npu)
        if need is not None:
            out.append(need)
    return out


#: A fix that names an API only torch_npu provides: torch.npu / torch_npu, .npu(), device "npu", backend "hccl".
_NEEDS_TORCH_NPU = lazyre.pattern(r"""torch\.npu\b|torch_npu\b|\.npu\(|["']npu\b|["']hccl["']""")


def _import_torch_npu(
    tree: ast.AST, lines: List[str], found: List[Raw], torch_npu: Optional[Tuple[int, int]]
) -> Optional[Raw]:
    """LNT023 at the file's first top-level import of torch, when the fixes of ``found`` make
    it use what only torch_npu provides and nothing in it names torch_npu: before torch's
    backend autoload (torch_autoload.toml) ``import torch`` does not import torch_npu, so
    ``torch.npu`` and ``.npu()`` do not exist.  With the edit ``--fix`` inserts the import
    when one of its own rewrites is what needs it."""
    needing = [r for r in found if _NEEDS_TORCH_NPU.search(r[5])]
    body = tree.body if isinstance(tree, ast.Module) else []
    anchor = next((stmt for stmt in body if _imports_torch(stmt)), None)
    if not needing or anchor is None:
        return None
    numbers = sorted({r[0] for r in needing})
    where = ", ".join(str(n) for n in numbers[:5]) + (", ..." if len(numbers) > 5 else "")
    what = f"the NPU fixes on lines {where} need" if len(numbers) > 1 else f"the NPU fix on line {where} needs"
    first = major_minor(autoload().first_torch)
    if torch_npu is not None and first is not None and torch_npu >= first:
        return (
            anchor.lineno,
            anchor.lineno,
            0,
            "LNT023",
            f"{what} torch_npu, which this file never imports: "
            f"torch {torch_npu[0]}.{torch_npu[1]} imports it at `import torch` (backend autoload) unless "
            f"{autoload().variable}=0",
            "nothing to add while autoload is on; `import torch_npu` after `import torch` makes it explicit",
            (),
            "info",
        )
    line = lines[anchor.lineno - 1] if anchor.lineno <= len(lines) else ""
    edits: Tuple[Edit, ...] = ()
    fixed = any(r[6] and r[3] in rules.FIXABLE for r in needing)
    if fixed and anchor.end_lineno == anchor.lineno and not line.rstrip().endswith("\\") and "\r" not in line:
        edits = (Edit(anchor.lineno, len(line), len(line), "", "\nimport torch_npu"),)
    when = (
        f"torch {torch_npu[0]}.{torch_npu[1]} does not import it at `import torch`"
        if torch_npu is not None
        else f"before torch {autoload().first_torch} `import torch` does not import it"
    )
    return (
        anchor.lineno,
        anchor.lineno,
        0,
        "LNT023",
        f"{what} torch_npu, which this file never imports: {when}, so torch.npu and .npu() do not exist "
        "unless the program imports torch_npu before this file runs",
        "import torch_npu  # on the line after import torch",
        edits,
        None,
    )


def _imports_torch(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Import):
        return any(a.name.split(".")[0] == "torch" for a in stmt.names)
    return isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and (stmt.module or "").split(".")[0] == "torch"


def _may_hit(low: str, knowledge: LintKnowledge) -> bool:
    """Whether the lower-cased source names anything a rule looks for."""
    if (
        "cuda" in low
        or "cudnn" in low
        or "nccl" in low
        or "transfer_to_npu" in low
        or "ascend_rt_visible_devices" in low
        or ("torch" in low and "load" in low)
        or "float64" in low
        or "double" in low
    ):
        return True
    words = list(knowledge.libraries) + list(knowledge.commands) + [v.name.rstrip("*") for v in knowledge.env]
    return any(w.lower() in low for w in words)


#: A finding of the key code on a line explains these codes on the same line.
_FOLDS = {
    "LNT009": {"LNT001", "LNT003"},
    "LNT012": {"LNT009", "LNT003"},
    "LNT010": {"LNT003"},
    "LNT004": {"LNT003", "LNT001"},
    "LNT007": {"LNT003"},
    "LNT015": {"LNT002"},
}


def _fold(hits: Iterable[Raw]) -> List[Raw]:
    """One finding per occurrence (line, column and code: ``a = x.cuda(); b = y.cuda()`` is
    two, each with its own fix and edit; repeats at one place keep their edits together),
    without the codes that a more specific finding on the same line explains (:data:`_FOLDS`)."""
    ordered = sorted(set(hits), key=lambda h: (h[0], h[2], h[3]))
    by_line: Dict[int, Set[str]] = {}
    for h in ordered:
        by_line.setdefault(h[0], set()).add(h[3])
    merged: Dict[Tuple[int, int, str], Raw] = {}
    for h in ordered:
        if any(h[3] in _FOLDS.get(c, ()) for c in by_line[h[0]] if c != h[3]):
            continue
        key = (h[0], h[2], h[3])
        if key in merged:
            first = merged[key]
            merged[key] = first[:6] + (first[6] + h[6],) + first[7:]
        else:
            merged[key] = h
    return list(merged.values())
