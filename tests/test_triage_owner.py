"""The owner of an import error is the code of the traceback's last frame.

``ModuleNotFoundError: No module named 'X'`` raised inside the CANN toolkit's Python code (te,
tbe, te_fusion, the operator packages under opp/) names CANN's Python requirements as the
owner; the same error under another installed package names that package, under the user's
own file names that file.  The scanner reads the error line with the last frame before it
(one slot, a few lines back at most).

The tracebacks are real, as their reports pasted them (source beside each); the CANN ones put
an import error under frame lines of the shapes real CANN tracebacks print (the frame paths
are those of the report named beside them; the pairing with the error line is ours)."""

from __future__ import annotations

import io

from npudoctor.knowledge.signatures import load_kb
from npudoctor.triage import triage_text
from npudoctor.triage.scan import FRAME_LINES, Scanner

#: https://github.com/towhee-io/towhee/issues/1214 (scipy missing under the towhee package)
TOWHEE = """\
Traceback (most recent call last):
  File "/home/lvbin/binbin/binbin-test/towhee-3.6/lib/python3.6/site-packages/towhee/hub/builtin/operators/sklearn.py", line 21, in <module>
    from scipy import sparse
ModuleNotFoundError: No module named 'scipy'
"""

#: https://github.com/circstat/pycircstat/issues/64 (decorator, one of CANN's requirements too,
#: missing under the pycircstat package: pycircstat's requirement, not CANN's)
PYCIRCSTAT = """\
File "arc.py", line 5, in <module>
    import pycircstat
  File "/[...]/.venv/lib/python3.7/site-packages/pycircstat/__init__.py", line 6, in <module>
    from .descriptive import *
  File "/[...]/.venv/lib/python3.7/site-packages/pycircstat/descriptive.py", line 8, in <module>
    from decorator import decorator
ModuleNotFoundError: No module named 'decorator'
"""

#: https://github.com/Ascend/torchair/issues/2 (the user's own script imports the module)
TORCHAIR = """\
Traceback (most recent call last):
  File "/home/HCCL_TEST/sess_run/code/pytorch_hccl_1server_allgather_dynamic_graph_test.py", line 11, in <module>
    import torchair.ge_concrete_graph.ge_converter.c10d_functional.c10d_functional
ModuleNotFoundError: No module named 'torchair.ge_concrete_graph.ge_converter.c10d_functional'
"""

#: https://github.com/huggingface/trl/issues/3545 (trl imports through importlib: the frames of
#: the import machinery follow trl's; shortened: one more frozen frame in the report)
TRL = """\
Traceback (most recent call last):
  File "/home/ma-user/anaconda3/envs/PyTorch-2.1.0/lib/python3.9/site-packages/trl/import_utils.py", line 144, in _get_module
    return importlib.import_module("." + module_name, self.__name__)
  File "/home/ma-user/anaconda3/envs/PyTorch-2.1.0/lib/python3.9/importlib/__init__.py", line 127, in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
  File "<frozen importlib._bootstrap>", line 1030, in _gcd_import
  File "<frozen importlib._bootstrap>", line 1007, in _find_and_load
ModuleNotFoundError: No module named 'vllm_ascend.distributed.device_communicators'
"""

#: https://github.com/Ascend-Research/Turtle/issues/16 (only frames of the import machinery)
TURTLE = """\
 return _bootstrap._gcd_import(name[level:], package, level)
  File "<frozen importlib._bootstrap>", line 1050, in _gcd_import
  File "<frozen importlib._bootstrap>", line 1027, in _find_and_load
  File "<frozen importlib._bootstrap>", line 1004, in _find_and_load_unlocked
ModuleNotFoundError: No module named 'turtlesuper_t1_arch'
"""

#: frame paths of a CANN toolkit's Python code, as real tracebacks print them: the toolkit's
#: tbe package (the RayWorkerWrapper traceback of vllm-project/vllm-ascend reports), the
#: operator implementations under opp/ and te_fusion under nnae's fwkacllib (the E80000 and
#: EB0000 tracebacks of the MindSpore error-code documentation, mindspore-ai/docs)
CANN_FRAMES = [
    '  File "/usr/local/Ascend/ascend-toolkit/latest/python/site-packages/tbe/common/repository_manager/route.py", line 54, in wrapper',
    '  File "/usr/local/Ascend/opp/op_impl/built-in/ai_core/tbe/impl/strided_slice_grad_d.py", line 1101, in strided_slice_grad_d',
    '  File "/usr/local/Ascend/nnae/latest/fwkacllib/python/site-packages/te_fusion/fusion_manager.py", line 1258, in build_single_op',
    '  File "/home/miniconda3/envs/ci/lib/python3.7/site-packages/te_fusion/fusion_manager.py", line 1283, in build_single_op',
]


def _first(text: str) -> dict:
    known = triage_text(text)["known"]
    assert len(known) == 1, known
    return known[0]


def _said(group: dict) -> str:
    return " ".join([group["title"], group["meaning"], group["conclusion"] or ""] + list(group["fix"]))


def test_a_package_owns_what_it_imports() -> None:
    group = _first(TOWHEE)
    assert group["id"] == "no-module-named"
    assert group["label"] == "python:no-module"
    assert group["captures"] == {"module": "scipy", "in_package": "towhee"}
    assert group["conclusion"].startswith("the package towhee imports scipy, which this interpreter lacks")
    assert "CANN" not in group["conclusion"]


def test_a_cann_requirement_under_another_package_is_that_package_s() -> None:
    # decorator is one of CANN's requirements; without the frame it is read as CANN's
    group = _first(PYCIRCSTAT)
    assert group["id"] == "no-module-named"
    assert group["captures"]["in_package"] == "pycircstat"
    assert "the owner is pycircstat" in group["conclusion"]
    assert "CANN" not in group["title"] + group["conclusion"] + " ".join(group["fix"])
    # the frame rules the other owners out, and says so
    statuses = {c["text"].split(" (")[0]: (c["status"], c["evidence"]) for c in group["causes"]}
    assert statuses == {
        "an installed package": ("cause", ["the log line states it: in_package=pycircstat"]),
        "the CANN toolkit's own Python code": (
            "ruled_out",
            ["the traceback's last frame names another owner: in_package=pycircstat"],
        ),
        "the user's own code": ("ruled_out", ["the traceback's last frame names another owner: in_package=pycircstat"]),
    }
    bare = _first("ModuleNotFoundError: No module named 'decorator'\n")
    assert bare["id"] == "no-module-cann-dependency"


def test_the_user_s_own_code() -> None:
    group = _first(TORCHAIR)
    assert group["captures"]["in_code"] == (
        "/home/HCCL_TEST/sess_run/code/pytorch_hccl_1server_allgather_dynamic_graph_test.py"
    )
    assert group["conclusion"].startswith("your code (/home/HCCL_TEST/")


def test_the_import_machinery_owns_nothing() -> None:
    assert _first(TRL)["captures"] == {
        "module": "vllm_ascend.distributed.device_communicators",
        "in_package": "trl",
    }
    turtle = _first(TURTLE)
    assert turtle["captures"] == {"module": "turtlesuper_t1_arch"}
    assert turtle["conclusion"] is None


def test_cann_code_names_cann_s_requirements() -> None:
    for frame in CANN_FRAMES:
        for module, entry in (("decorator", "no-module-cann-dependency"), ("requests", "no-module-named")):
            text = f"Traceback (most recent call last):\n{frame}\n    import {module}\nModuleNotFoundError: No module named '{module}'\n"
            group = _first(text)
            assert group["id"] == entry, (frame, module)
            path = frame.split('"')[1]
            assert group["captures"]["in_cann"] == path
            assert "the owner is CANN's Python requirements" in group["conclusion"]
            assert any("pip install attrs cython numpy decorator" in f for f in group["fix"])


def test_only_the_last_frame_a_few_lines_back() -> None:
    far = TOWHEE.replace("    from scipy import sparse\n", "    from scipy import sparse\n" + "x\n" * FRAME_LINES)
    assert _first(far)["captures"] == {"module": "scipy"}
    # the last frame, not an earlier one
    two = CANN_FRAMES[0] + "\n    f()\n" + TOWHEE.split("\n", 1)[1]
    assert _first(two)["captures"]["in_package"] == "towhee"
    # a frame of the standard library names no owner
    stdlib = '  File "/usr/lib/python3.10/ctypes/__init__.py", line 7, in <module>\n    import _ctypes\n'
    assert _first(stdlib + "ModuleNotFoundError: No module named '_ctypes'\n")["captures"] == {"module": "_ctypes"}


def test_a_frame_does_not_cross_into_the_next_log() -> None:
    sc = Scanner(load_kb())
    head, error = TOWHEE.rsplit("\n", 2)[0], TOWHEE.rsplit("\n", 2)[1]
    sc.feed("a.log", io.BytesIO(head.encode() + b"\n"))
    sc.feed("b.log", io.BytesIO(error.encode() + b"\n"))
    (group,) = sc.groups.values()
    assert group.captures == {"module": "scipy"}


def test_a_warning_quoting_an_import_error_stays_unknown() -> None:
    # vllm-project/vllm-ascend#1991: vLLM's CUDA extension is absent on an NPU, harmless
    line = (
        "WARNING 07-24 16:14:43 [_custom_ops.py:20] Failed to import from vllm._C with "
        "ModuleNotFoundError(\"No module named 'vllm._C'\")\n"
    )
    assert triage_text(line)["known"] == []
