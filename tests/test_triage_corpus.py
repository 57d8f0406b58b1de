"""Precision and recall of ``npudoctor triage`` on a corpus of real log lines (issues 17 and 28).

The corpus (``tests/fixtures/triage_corpus/lines.toml``) holds log lines copied from public
reports, each with the label a precise triage should give it.  This test writes the lines to a
log, runs the CLI on it (``npudoctor triage LOG --json --no-facts``, in-process, from the repository
root), maps the JSON it prints back to one prediction per line, and scores the predictions:

* precision       lines named correctly / lines triage named (any known signature)
* recall          lines named correctly / lines that carry a known label
* unknown_kept    lines labelled ``unknown`` that triage did not name / all such lines

The figures, and the set of lines scored right, are compared with ``baseline.json``: any drop
fails.  A gain passes with a hint; ``NPUDOCTOR_UPDATE_BASELINE=1`` rewrites the baseline.

Triage groups repeats: a group reports its first and last line and a count, not every line.
Lines are therefore written sorted by label (lines of one label tend to fall into one group) and
the members of a group are deduced from its first/last line, its count and the lines nothing
else claims; lines still ambiguous are triaged again on their own (a few runs of ~0.2 s: fewer as
triage stops merging unrelated lines into one signature).  The attribution equals triaging every
line on its own (checked when the corpus was built).
"""

import hashlib
import json
import os
import re
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from clirun import npudoctor

try:
    import tomllib  # type: ignore[import-not-found]
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
CORPUS_DIR = Path(__file__).resolve().parent / "fixtures" / "triage_corpus"
LINES = CORPUS_DIR / "lines.toml"
BASELINE = CORPUS_DIR / "baseline.json"
UPDATE_ENV = "NPUDOCTOR_UPDATE_BASELINE"
MAX_RUNS = 6
AMBIGUOUS = "ambiguous"  # a line triage grouped with others that could not be told apart

#: The label vocabulary of lines.toml (documented in its header and in README.md).
LABEL_RE = re.compile(
    r"^(?:unknown|context"
    r"|acl:\d{6}|aclnn:\d{6}|cann:E[A-Z0-9]\d{4}|pta:ERR\d{5}|hccl:\d+|dcmi:-\d+"
    r"|loader:(?:cannot-open|undefined-symbol|version-not-found|static-tls)"
    r"|api:missing-function|python:no-module|msg:[a-z0-9-]+|sys:(?:crash|no-space))$"
)

#: Signature ids of today's triage whose label cannot be read off the id itself.  A signature
#: that is missing here and carries no code is scored as ``other:<id>`` (a wrong name).
ID_LABELS = {
    "libgomp-static-tls": "loader:static-tls",
    "cann-library-not-found": "loader:cannot-open",
    "atb-library-not-found": "loader:cannot-open",
    "driver-library-not-found": "loader:cannot-open",
    "torch-library-not-found": "loader:cannot-open",
    "library-not-found": "loader:cannot-open",
    "undefined-symbol-torch": "loader:undefined-symbol",
    "undefined-symbol-c10-npu": "loader:undefined-symbol",
    "undefined-symbol-atb": "loader:undefined-symbol",
    "undefined-symbol-cann": "loader:undefined-symbol",
    "undefined-symbol": "loader:undefined-symbol",
    "hccl-function-missing": "api:missing-function",
    "no-module-torch-npu-c": "python:no-module",
    "no-module-tbe": "python:no-module",
    "no-module-cann-dependency": "python:no-module",
    "init-env-failed-eh9999": "msg:init-env-failed",
    "op-has-no-binary": "msg:op-no-binary",
    "visible-devices-out-of-range": "cann:EE1001",
    "hccl-root-info-19": "hccl:19",
    "dcmi-8020-device-used": "dcmi:-8020",
    "dcmi-8005-init-failed": "dcmi:-8005",
    "no-space-left": "sys:no-space",
    "process-crashed": "sys:crash",
    "torch-npu-attribute-missing": "msg:torch-npu-attribute-missing",
    "owner-mismatch-warning": "msg:owner-mismatch",
}

_ID_CODE = (
    (re.compile(r"^acl-(\d{6})\b"), "acl:{}"),
    (re.compile(r"^pta-err(\d{5})\b"), "pta:ERR{}"),
    (re.compile(r"^(e[a-z0-9]\d{4})\b"), "cann:{}"),
)


def code_label(code: str) -> Optional[str]:
    """The label of a bare code as triage may print it (``507033``, ``EZ1001``, ``ERR02005``)."""
    code = code.strip()
    if re.fullmatch(r"[1-5]\d{5}", code):
        return ("aclnn:" if code[:3] in ("161", "361", "561") else "acl:") + code
    if re.fullmatch(r"E[A-Z0-9]\d{4}", code, re.I):
        return "cann:" + code.upper()
    if re.fullmatch(r"ERR\d{5}", code, re.I):
        return "pta:" + code.upper()
    return None


def record_label(record: Dict[str, Any]) -> str:
    """Map one ``known`` record of ``triage --json`` to the corpus vocabulary."""
    if record.get("severity") == "noise":
        return "unknown"  # known and harmless: triage names no error
    label = record.get("label")
    if isinstance(label, str) and LABEL_RE.match(label):
        return label
    code = record.get("code")
    if isinstance(code, str) and code_label(code):
        return code_label(code)  # type: ignore[return-value]
    rid = str(record.get("id", ""))
    captured = (record.get("captures") or {}).get("code")
    if captured and rid.startswith("hccl") and str(captured).isdigit():
        return f"hccl:{captured}"
    if rid in ID_LABELS:
        return ID_LABELS[rid]
    for rx, fmt in _ID_CODE:
        m = rx.match(rid)
        if m:
            return fmt.format(m.group(1).upper() if fmt.startswith("cann") else m.group(1))
    return f"other:{rid}"


# ----------------------------------------------------------------------------- corpus


def load_corpus(path: Path = LINES) -> List[Dict[str, str]]:
    with open(path, "rb") as fh:
        doc = tomllib.load(fh)
    lines = doc["line"]
    for entry in lines:
        entry["key"] = hashlib.sha1((entry["source"] + "\n" + entry["text"]).encode()).hexdigest()[:12]
    return lines


def test_corpus_is_well_formed():
    lines = load_corpus()
    assert len(lines) >= 300
    reports = {e["source"] for e in lines}
    assert len(reports) >= 80
    labels = Counter(e["label"] for e in lines)
    assert labels["unknown"] * 3 >= len(lines), "at least a third of the lines must stay unknown"
    for e in lines:
        assert LABEL_RE.match(e["label"]), e
        assert e["source"].startswith("https://"), e
        assert e["text"].strip() and "\n" not in e["text"] and "\r" not in e["text"], e
    dupes = [k for k, n in Counter(e["key"] for e in lines).items() if n > 1]
    assert not dupes, f"the same line of the same report twice: {dupes}"


# --------------------------------------------------------------------------- triage runs


def run_triage(texts: List[str], log: Path) -> Dict[str, Any]:
    log.write_text("\n".join(texts) + "\n", encoding="utf-8")
    proc = npudoctor("triage", str(log), "--json", "--no-facts", cwd=REPO)
    assert proc.returncode in (0, 1), f"triage failed ({proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout)


def attribute(doc: Dict[str, Any], n: int) -> Tuple[Dict[int, str], List[int]]:
    """One prediction per line (1-based positions) from a triage result over ``n`` lines.

    Returns ``(resolved, ambiguous)``: lines in no group are unknown to triage (it named
    nothing); a group's first and last line are its members; the rest of its members are
    deduced where only as many unclaimed lines lie inside its span as it has members left.
    """
    groups: List[List[Any]] = []  # [first, last, members left, prediction]
    resolved: Dict[int, str] = {}
    records = [(r, record_label(r)) for r in doc["known"]] + [(u, "unknown") for u in doc["unknown"]]
    for rec, pred in records:
        first, last, count = rec["first"]["line"], rec["last"]["line"], rec["count"]
        resolved[first] = resolved[last] = pred
        left = count - (1 if first == last else 2)
        if left > 0:
            groups.append([first, last, left, pred])
    if doc.get("unknown_dropped"):
        return resolved, [p for p in range(1, n + 1) if p not in resolved]
    changed = True
    while changed:
        changed = False
        for g in groups:
            if g[2] <= 0:
                continue
            free = [p for p in range(g[0] + 1, g[1]) if p not in resolved]
            if len(free) == g[2]:
                for p in free:
                    resolved[p] = g[3]
                g[2] = 0
                changed = True
        for p in range(1, n + 1):
            if p not in resolved and not any(g[2] > 0 and g[0] < p < g[1] for g in groups):
                resolved[p] = "unknown"  # in no group: triage did not name it
                changed = True
    return resolved, [p for p in range(1, n + 1) if p not in resolved]


def predict(lines: List[Dict[str, str]], workdir: Path) -> Tuple[List[str], int]:
    """Triage's label for every corpus line, and the number of CLI runs it took."""
    pending = sorted(range(len(lines)), key=lambda i: (lines[i]["label"], i))
    predictions: Dict[int, str] = {}
    runs = 0
    while pending and runs < MAX_RUNS:
        runs += 1
        doc = run_triage([lines[i]["text"] for i in pending], workdir / f"corpus-run{runs}.log")
        resolved, ambiguous = attribute(doc, len(pending))
        for pos, pred in resolved.items():
            predictions[pending[pos - 1]] = pred
        pending = [pending[pos - 1] for pos in ambiguous]
    for i in pending:  # not attributable within MAX_RUNS: scored as wrong, never as right
        predictions[i] = AMBIGUOUS
    if pending:
        warnings.warn(f"{len(pending)} corpus lines could not be attributed in {runs} triage runs", stacklevel=1)
    return [predictions[i] for i in range(len(lines))], runs


# ------------------------------------------------------------------------------ scores


def score(lines: List[Dict[str, str]], preds: List[str]) -> Dict[str, Any]:
    named = correct = expected_known = unknown_total = unknown_kept = 0
    right: List[str] = []
    misses: Counter = Counter()
    false_names: Counter = Counter()
    for entry, pred in zip(lines, preds):
        label = entry["label"]
        if label == "context":
            continue
        if label == "unknown":
            unknown_total += 1
            if pred == "unknown":
                unknown_kept += 1
                right.append(entry["key"])
            else:
                named += 1
                false_names[pred] += 1
            continue
        expected_known += 1
        if pred != "unknown":
            named += 1
        if pred == label:
            correct += 1
            right.append(entry["key"])
        else:
            misses[f"{label} -> {pred}"] += 1
    return {
        "lines": len(lines),
        "reports": len({e["source"] for e in lines}),
        "scored": expected_known + unknown_total,
        "expected_known": expected_known,
        "named": named,
        "correct": correct,
        "precision": round(correct / named, 4) if named else 0.0,
        "recall": round(correct / expected_known, 4) if expected_known else 0.0,
        "unknown_lines": unknown_total,
        "unknown_kept": round(unknown_kept / unknown_total, 4) if unknown_total else 0.0,
        "misses": dict(misses.most_common()),
        "false_names": dict(false_names.most_common()),
        "right": sorted(right),
    }


FIGURES = ("precision", "recall", "unknown_kept")


def report(result: Dict[str, Any], runs: int) -> str:
    out = [
        f"triage corpus: {result['lines']} lines from {result['reports']} reports, {runs} triage run(s)",
        f"  precision    {result['precision']:.3f}  ({result['correct']}/{result['named']} named lines right)",
        f"  recall       {result['recall']:.3f}  ({result['correct']}/{result['expected_known']} known lines named right)",
        f"  unknown_kept {result['unknown_kept']:.3f}  (of {result['unknown_lines']} lines that must stay unknown)",
    ]
    if result["misses"]:
        out.append("  misses (expected -> triage): " + ", ".join(f"{k} x{n}" for k, n in result["misses"].items()))
    if result["false_names"]:
        out.append("  named but must stay unknown: " + ", ".join(f"{k} x{n}" for k, n in result["false_names"].items()))
    return "\n".join(out)


def test_triage_corpus_precision_recall(tmp_path):
    lines = load_corpus()
    preds, runs = predict(lines, tmp_path)
    result = score(lines, preds)
    print(report(result, runs))

    if os.environ.get(UPDATE_ENV) == "1":
        BASELINE.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"baseline written: {BASELINE}")
        return
    if not BASELINE.exists():
        pytest.fail(f"no baseline: run with {UPDATE_ENV}=1 to write {BASELINE}")
    base = json.loads(BASELINE.read_text(encoding="utf-8"))

    drops = [f"{k} {base[k]:.4f} -> {result[k]:.4f}" for k in FIGURES if result[k] < base[k] - 1e-9]
    by_key = {e["key"]: e for e in lines}
    lost = sorted(set(base.get("right", [])) & set(by_key) - set(result["right"]))
    lost_text = [f"{by_key[k]['label']} -> {preds[lines.index(by_key[k])]}: {by_key[k]['text'][:120]}" for k in lost]
    assert not drops and not lost, (
        "triage got worse on the corpus:\n  "
        + "\n  ".join(drops + [f"line now wrong: {t}" for t in lost_text])
        + "\n"
        + report(result, runs)
    )
    gains = [k for k in FIGURES if result[k] > base[k] + 1e-9]
    if gains or set(result["right"]) - set(base.get("right", [])):
        hint = (
            "triage improved on the corpus ("
            + ", ".join(f"{k} {base[k]:.3f} -> {result[k]:.3f}" for k in gains)
            + f"): record it with {UPDATE_ENV}=1 python -m pytest tests/test_triage_corpus.py"
        )
        print(hint)
        warnings.warn(hint, stacklevel=1)
