#!/usr/bin/env python3
"""Write the official error-code tables that are read from public sources of CANN and torch_npu.

Two files of ``npudoctor/knowledge/data/error_codes/`` are generated here (the others of that
folder are written by hand, each entry with its source):

* ``cann_reference.toml``: the CANN error-code reference (E-codes: title, message format,
  possible cause, solution): one Markdown page per code in the ``docs/en`` trees of the CANN
  ``runtime`` (RTS/ACL/FE/TEFusion/Dump/Profiling errors) and ``ge`` (E1xxxx) repositories,
  then the message registries CANN prints its codes from (``error_info_list`` JSON of
  ``runtime``, ``ge`` and ``opbase``: the EE/EH/EI/EJ/EL/EZ/E1-E9 codes no page describes);
* ``acl.toml``: the ACL/runtime return codes (``aclError``): the constant names from the CANN
  runtime headers, the meaning and the solution from torch_npu's table of them
  (``torch_npu/csrc/core/npu/NPUErrorCodes.h``, Ascend's English text of the official
  ``aclError`` list); and the aclnn return codes (161xxx/361xxx/561xxx) of the opbase
  reference page.

Each argument is a git repository (a clone or a bare mirror) of the named project; the files
are read at its ``HEAD`` and every entry records the URL of its page at that commit.  This is
the refresh path: clone the repositories again and rerun the script.

Usage::

    python scripts/gen_error_codes.py --runtime DIR --ge DIR --opbase DIR --pytorch DIR [--retrieved YYYY-MM-DD]
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "npudoctor" / "knowledge" / "data" / "error_codes"

RUNTIME_URL = "https://github.com/hicann/runtime"
GE_URL = "https://github.com/hicann/ge"
OPBASE_URL = "https://github.com/hicann/opbase"
PYTORCH_URL = "https://github.com/Ascend/pytorch"

#: (folder of English pages, which repository) read for the CANN reference
REFERENCE_TREES = (("runtime", "docs/en/error_code_ref"), ("ge", "docs/en/user_guides/error_codes"))

_PAGE_NAME = re.compile(r"/((?:E|W)[A-Z0-9][0-9]{4})-[^/]*\.md$")
_HEADING = re.compile(r"^#\s+(?P<code>[EW][A-Z0-9][0-9]{4})\s+(?P<title>.+?)\s*$")


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def _describe(repo: str) -> str:
    """The release a repository's HEAD follows (``git describe --tags``: tag, commits since, hash)."""
    try:
        return _git(repo, "describe", "--tags", "HEAD").strip()
    except subprocess.CalledProcessError:
        return _git(repo, "rev-parse", "--short", "HEAD").strip()


def _unmd(text: str) -> str:
    """Markdown inline markup reduced to plain text (escapes, links, emphasis, tags)."""
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("**", "").replace("`", "")
    text = re.sub(r"\\([_\\()\[\]*#<>.-])", r"\1", text)
    return re.sub(r"[ \t]+", " ", text).strip()


def _sections(md: str) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {"": []}
    current = ""
    for line in md.splitlines():
        if line.startswith("## "):
            current = line[3:].strip().lower()
            out[current] = []
            continue
        out[current].append(line)
    return out


def _prose(lines: List[str]) -> str:
    """The paragraphs and list items of a section (code blocks left out), one string."""
    parts: List[str] = []
    fenced = False
    for line in lines:
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or not line.strip():
            continue
        parts.append(_unmd(line.strip()))
    return " ".join(p for p in parts if p)


def _first_block(lines: List[str]) -> str:
    block: List[str] = []
    inside = False
    for line in lines:
        if line.strip().startswith("```"):
            if inside:
                break
            inside = True
            continue
        if inside:
            block.append(line.strip())
    return " ".join(x for x in block if x)


def reference_codes(repo: str, url: str, tree: str) -> Dict[str, Dict[str, str]]:
    commit = _git(repo, "rev-parse", "HEAD").strip()
    out: Dict[str, Dict[str, str]] = {}
    for path in _git(repo, "ls-tree", "-r", "--name-only", "HEAD", tree).splitlines():
        if not _PAGE_NAME.search(path):
            continue
        md = _git(repo, "show", f"HEAD:{path}")
        head = next((m for m in map(_HEADING.match, md.splitlines()) if m), None)
        if head is None:
            continue
        sec = _sections(md)
        out[head["code"]] = {
            "title": _unmd(head["title"]),
            "message": _first_block(sec.get("symptom", [])),
            "cause": _prose(sec.get("possible cause", [])),
            "solution": _prose(sec.get("solution", [])),
            "source": f"{url}/blob/{commit}/{path}",
        }
    return out


#: (repository, file) of the message registries CANN prints its E-codes from (JSON
#: ``error_info_list``, in a ``.json`` file or in the raw strings of a C++ file)
REGISTRIES = (
    ("runtime", "src/dfx/error_manager/error_code.json"),
    ("ge", "base/common/error_registry/error_registry.cc"),
    ("opbase", "src/nnopbase/composite_op/log/op_error_manager.cpp"),
    ("opbase", "src/op_common/log/log.cpp"),
)
_RAW_STRING = re.compile(r'R"\((.*?)\)"', re.S)


def _na(text: str) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    # numbered steps run together in the registry ("cluster.2. If"): a space before each number
    text = re.sub(r"([.)])(\d\. [A-Z])", r"\1 \2", text)
    return "" if text.upper() in ("N/A", "NA", "") else text


def registry_codes(repo: str, url: str, path: str) -> Dict[str, Dict[str, str]]:
    commit = _git(repo, "rev-parse", "HEAD").strip()
    text = _git(repo, "show", f"HEAD:{path}")
    blobs = [text] if path.endswith(".json") else _RAW_STRING.findall(text)
    out: Dict[str, Dict[str, str]] = {}
    for blob in blobs:
        try:
            doc = json.loads(blob)
        except ValueError:
            continue
        items = doc.get("error_info_list", []) if isinstance(doc, dict) else []
        for item in items:
            code = str(item.get("ErrCode", "")).strip()
            if not re.fullmatch(r"[EW][A-Z0-9][0-9]{4}", code):
                continue
            advice = item.get("suggestion") or {}
            out.setdefault(
                code,
                {
                    "title": _na(str(item.get("errTitle", ""))),
                    "message": _na(str(item.get("ErrMessage", ""))),
                    "cause": _na(str(advice.get("Possible Cause", ""))),
                    "solution": _na(str(advice.get("Solution", ""))),
                    "source": f"{url}/blob/{commit}/{path}",
                },
            )
    return out


_C_ENTRY = re.compile(r'\{\s*(\d{6})\s*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\}')
_C_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ACL_NAME = re.compile(r"\b(ACL_ERROR_\w+)\b\s*=?\s*(\d{6})\b")


def acl_codes(runtime: str, pytorch: str) -> Tuple[Dict[str, Dict[str, str]], str, str]:
    rt_commit = _git(runtime, "rev-parse", "HEAD").strip()
    names: Dict[str, str] = {}
    headers = [
        p
        for p in _git(runtime, "ls-tree", "-r", "--name-only", "HEAD", "include/external/acl").splitlines()
        if p.endswith(".h")
    ]
    for path in headers:
        for name, num in _ACL_NAME.findall(_git(runtime, "show", f"HEAD:{path}")):
            names.setdefault(num, name)
    pt_commit = _git(pytorch, "rev-parse", "HEAD").strip()
    path = "torch_npu/csrc/core/npu/NPUErrorCodes.h"
    text = _git(pytorch, "show", f"HEAD:{path}").replace("\\\n", "")
    out: Dict[str, Dict[str, str]] = {}
    for num, literals in _C_ENTRY.findall(text):
        body = "".join(_C_LITERAL.findall(literals)).replace("\\n", "\n").replace('\\"', '"')
        lines = [re.sub(r"\s+", " ", x).strip() for x in body.split("\n")]
        lines = [x for x in lines if x]
        if not lines:
            continue
        out[num] = {
            "title": names.get(num, ""),
            "message": lines[0],
            "cause": "",
            "solution": " ".join(lines[1:]),
            "source": f"{PYTORCH_URL}/blob/{pt_commit}/{path}",
        }
    return out, f"{RUNTIME_URL}/tree/{rt_commit}/include/external/acl", f"{PYTORCH_URL}/blob/{pt_commit}/{path}"


#: the official aclnn (operator API) return codes: a Markdown table page of CANN opbase
ACLNN_PAGE = "docs/en/api/nnopbase/opdev/aclnn_return_code/aclnn_return_codes.md"
_TABLE_ROW = re.compile(r"^\|\s*(ACLNN_\w+)\s*\|\s*(\d{6})\s*\|\s*(.+?)\s*\|\s*$")


def aclnn_codes(opbase: str) -> Tuple[Dict[str, Dict[str, str]], str]:
    commit = _git(opbase, "rev-parse", "HEAD").strip()
    source = f"{OPBASE_URL}/blob/{commit}/{ACLNN_PAGE}"
    out: Dict[str, Dict[str, str]] = {}
    for line in _git(opbase, "show", f"HEAD:{ACLNN_PAGE}").splitlines():
        m = _TABLE_ROW.match(line)
        if not m or "deprecated" in m.group(3).lower():
            continue
        out.setdefault(
            m.group(2),
            {"title": m.group(1), "message": _unmd(m.group(3)), "cause": "", "solution": "", "source": source},
        )
    return out, source


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(meta: Dict[str, str], sources: List[str], codes: Dict[str, Dict[str, str]]) -> str:
    out = [
        "# GENERATED by scripts/gen_error_codes.py from the sources below: do not edit by hand.",
        "# Official facts carried over with their source (each code names its page at a commit).",
        "",
        "[meta]",
    ]
    out += [f"{k} = {_q(v)}" for k, v in meta.items()]
    out.append("sources = [" + ", ".join(_q(s) for s in sources) + "]")

    def order(code: str) -> Tuple[int, str]:
        return (0, f"{int(code):08d}") if code.isdecimal() else (1, code)

    for code in sorted(codes, key=order):
        entry = codes[code]
        out += ["", f"[codes.{_q(code)}]"]
        out += [f"{k} = {_q(v)}" for k, v in entry.items() if v]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime", required=True, help="git repository of CANN runtime (hicann/runtime)")
    parser.add_argument("--ge", required=True, help="git repository of CANN ge (hicann/ge)")
    parser.add_argument("--opbase", required=True, help="git repository of CANN opbase (hicann/opbase)")
    parser.add_argument("--pytorch", required=True, help="git repository of torch_npu (Ascend/pytorch)")
    parser.add_argument("--retrieved", default=datetime.date.today().isoformat(), help="retrieval date")
    args = parser.parse_args()
    repos = {"runtime": (args.runtime, RUNTIME_URL), "ge": (args.ge, GE_URL), "opbase": (args.opbase, OPBASE_URL)}
    codes: Dict[str, Dict[str, str]] = {}
    trees = []
    # the reference pages first; the message registries add the codes no page describes
    for name, tree in REFERENCE_TREES:
        repo, url = repos[name]
        trees.append(f"{url}/tree/{_git(repo, 'rev-parse', 'HEAD').strip()}/{tree}")
        for code, entry in reference_codes(repo, url, tree).items():
            codes.setdefault(code, entry)
    for name, path in REGISTRIES:
        repo, url = repos[name]
        trees.append(f"{url}/blob/{_git(repo, 'rev-parse', 'HEAD').strip()}/{path}")
        for code, entry in registry_codes(repo, url, path).items():
            if entry["solution"] or entry["cause"] or entry["title"]:
                codes.setdefault(code, entry)
    OUT.mkdir(parents=True, exist_ok=True)
    meta = {
        "family": "cann",
        "title": "CANN error-code reference (E-codes)",
        "version": "CANN master: " + ", ".join(f"{name} {_describe(repo)}" for name, (repo, _url) in repos.items()),
        "retrieved": args.retrieved,
    }
    (OUT / "cann_reference.toml").write_text(render(meta, trees, codes), encoding="utf-8")
    acl, names_src, text_src = acl_codes(args.runtime, args.pytorch)
    aclnn, aclnn_src = aclnn_codes(args.opbase)
    for code, entry in aclnn.items():
        acl.setdefault(code, entry)
    meta = {
        "family": "acl",
        "title": "ACL/runtime return codes (aclError)",
        "version": f"CANN master: runtime {_describe(args.runtime)}, opbase {_describe(args.opbase)}; "
        f"torch_npu master {_describe(args.pytorch)}",
        "retrieved": args.retrieved,
    }
    (OUT / "acl.toml").write_text(render(meta, [names_src, text_src, aclnn_src], acl), encoding="utf-8")
    print(f"{len(codes)} CANN codes, {len(acl)} ACL return codes written to {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
