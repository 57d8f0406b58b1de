"""One concealer on every output path: secrets planted in the judged environment,
in the root's files and in a log never appear in any output format of any command --
check (text, JSON, Markdown, Prometheus), devices, collect (redacted or not, stdout or
file), health (text, JSON, its --cache-ttl file), npd, exec's stderr, triage -- on several
scenarios.  Also the secret shapes themselves: URL userinfo split at the last ``@``,
``Authorization``/``Cookie`` headers, bearer tokens, ``?token=``, quoted values with spaces,
``*_PASS``/``*_PWD``/``AccountKey``, and keys redacted like values."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
import tomllib
from clirun import npudoctor
from scenario_runner import environment

from npudoctor.redact import SECRET, Redactor, conceal, conceal_text

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "tests/scenarios"
#: Every fragment of a planted secret that must never be printed.
LEAKS = (
    "S3cr3t",
    "tail-after-at",
    "hf_Pl4ntedT0kenPl4ntedT0ken12",
    "dockpassPLANT",
    "mysqlpwdPLANT",
    "bearerPLANT",
    "akPLANT",
    "cookiePLANT",
    "qtokenPLANT",
    "quoted PLANT spaces",
    "logtokPLANT",
    "logpwPLANT",
    "optsPLANT",
)
INDEX = "https://alice:S3cr3t@tail-after-at@pypi.example.org/simple"
PLANTED_ENV = {
    "PIP_INDEX_URL": INDEX,
    "PIP_EXTRA_INDEX_URL": "https://pypi.example.org/simple?token=qtokenPLANT",
    "HF_TOKEN": "hf_Pl4ntedT0kenPl4ntedT0ken12",
    "DOCKER_PASS": "dockpassPLANT",
    "MYSQL_PWD": "mysqlpwdPLANT",
    "EXTRA_HEADER": "Authorization: Bearer bearerPLANT0123",
    "AZURE_STORAGE_CONNECTION_STRING": "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=akPLANT==;E=x",
    "HTTP_COOKIE_LINE": "Cookie: sid=cookiePLANT; theme=dark",
    "DB_PASSWORD": "quoted PLANT spaces",
    "LAUNCH_OPTS": "-Xmx2g -Dpassword=optsPLANT",
}
LOG = f"""\
pip install torch_npu --index-url {INDEX}
curl -H 'Authorization: Bearer bearerPLANT0123' https://example.org/x?token=qtokenPLANT&a=1
export DB_PASSWORD="quoted PLANT spaces"
DOCKER_PASS=dockpassPLANT MYSQL_PWD=mysqlpwdPLANT AccountKey=akPLANT==
Cookie: sid=cookiePLANT; theme=dark
ImportError: libhccl.so: cannot open shared object file: No such file or directory (index {INDEX} Cookie: sid=cookiePLANT; t=1)
[ERROR] 2024-06-20-10:41:32 (PID:59450, Device:-1, RankID:-1) ERR00008 PTA resource not found
ERROR: HF_TOKEN=logtokPLANT bad
ERROR: password: logpwPLANT
"""


def _leaks(text: str) -> List[str]:
    return [s for s in LEAKS if s in text]


def _scenario(tmp_path: Path, name: str) -> Path:
    scenario = tmp_path / name
    shutil.copytree(SCENARIOS / name, scenario, symlinks=True)
    etc = scenario / "root/etc"
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "pip.conf").write_text(f"[global]\nindex-url = {INDEX}\n")
    return scenario


def _env(scenario: Path) -> Dict[str, str]:
    env = environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text()))
    env.update(PLANTED_ENV)
    env["PATH"] = env["PATH"] + ":/home/alice/.local/bin"
    return env


@pytest.mark.parametrize("name", ["health-910b3-8npu-healthy", "dev-plain-machine-calm", "k01-control-matched-aarch64"])
def test_no_planted_secret_in_any_output(tmp_path: Path, name: str) -> None:
    scenario = _scenario(tmp_path, name)
    env = _env(scenario)
    root = str(scenario / "root")
    outputs: Dict[str, str] = {}
    runs = {
        "check": ["check", "--verbose"],
        "check --json": ["check", "--json"],
        "check --format markdown": ["check", "--format", "markdown"],
        "check --format prometheus": ["check", "--format", "prometheus"],
        "devices": ["devices"],
        "devices --json": ["devices", "--json"],
        "collect": ["collect", "-o", "-"],
        "collect --no-redact": ["collect", "--no-redact", "-o", "-"],
    }
    for label, args in runs.items():
        result = npudoctor(*args, "--root", root, env=env)
        outputs[label] = result.stdout + result.stderr
    written = tmp_path / "snapshot.json"
    npudoctor("collect", "--no-redact", "--root", root, "-o", str(written), env=env)
    outputs["collect file"] = written.read_text()
    log = tmp_path / "train.log"
    log.write_text(LOG)
    for label, args in {"triage": [str(log)], "triage --json": [str(log), "--json"]}.items():
        result = npudoctor("triage", *args, env=env)
        outputs[label] = result.stdout + result.stderr
    state = tmp_path / "state"
    state.mkdir()
    proc_env = {**env, "PYTHONPATH": str(REPO), "XDG_RUNTIME_DIR": str(state)}
    # processes: health and npd leave with os._exit, exec replaces its process
    for label, args in {
        # a generous budget: a run cut short by a loaded machine writes no --cache-ttl file
        "health": ["health", "--root", root, "--verbose", "--timeout", "120"],
        "health --json": ["health", "--root", root, "--json", "--cache-ttl", "60", "--timeout", "120"],
        "exec": ["exec", "--root", root, "--", "/bin/true"],
        "npd": ["npd", "--root", root],  # npd ends its process (os._exit): not in-process
        "npd --json": ["npd", "--root", root, "--json"],
    }.items():
        proc = subprocess.run(
            [sys.executable, "-m", "npudoctor", *args], env=proc_env, capture_output=True, text=True, timeout=300
        )
        outputs[label] = proc.stdout + proc.stderr
    for path in state.iterdir():
        outputs[f"file {path.name}"] = path.read_text(errors="replace")
    leaked = {label: _leaks(text) for label, text in outputs.items() if _leaks(text)}
    assert leaked == {}
    assert [p.name for p in state.iterdir()]  # the --cache-ttl file was written and read above
    for label in ("check --json", "collect", "collect --no-redact"):
        json.loads(outputs[label])
    assert SECRET in outputs["triage"] and SECRET in outputs["triage --json"]  # quoted, concealed
    assert "alice" not in outputs["collect"]


@pytest.mark.parametrize(
    ("text", "kept", "gone"),
    [
        (INDEX, "@pypi.example.org/simple", "tail-after-at"),
        ("Authorization: Bearer eyJhbGciOi.x.y", "Authorization: ", "eyJ"),
        ("curl -H 'Authorization: Basic dXNlcjpwYXNz' x", "'Authorization: <redacted>' x", "dXNl"),
        ("GET https://h/x?token=abc123&y=2", "&y=2", "abc123"),
        ("GET https://h/x?a=1&sig=abc123", "?a=1", "abc123"),
        ('PASSWORD="my secret pw" next', '"<redacted>" next', "secret pw"),
        ("Cookie: session=abc; other=def", "Cookie: ", "other=def"),
        ("DOCKER_PASS=hunter2 MYSQL_PWD=hunter3", "DOCKER_PASS=", "hunter"),
        ("Endpoint=x;AccountKey=xyz==;Suffix=y", ";Suffix=y", "xyz"),
        ("the Bearer abcdefghijklmn done", "Bearer <redacted> done", "abcdefghijklmn"),
        ('{"PASSWORD": "a\\"b c", "n": 1}', '"n": 1', "b c"),
    ],
)
def test_secret_shapes_are_concealed(text: str, kept: str, gone: str) -> None:
    out = conceal_text(text)
    assert gone not in out and kept in out and SECRET in out


ATB = "ImportError: libatb.so: cannot open shared object file: No such file or directory\n"


def test_triage_conceals_a_secret_right_after_a_word_and_keeps_paths(tmp_path: Path) -> None:
    """A secret-named assignment right after a word and its colon (``ERROR: HF_TOKEN=…``) is
    concealed like one after a space, in triage's text and JSON; a path or a log's file name
    holding ``passwd`` before a colon names no secret and is printed as it is."""
    (tmp_path / "no-passwd-entry.log").write_text(ATB)
    (tmp_path / "tok.log").write_text(
        "ERROR: HF_TOKEN=hf_abcdefghijklmnop bad\n"
        "ERROR: API_KEY=sk-abcdef123456 bad\n"
        "ERROR: password: hunter2\n"
        "ERROR: cannot read /etc/passwd: line 3 is malformed\n"
    )
    logs = ("no-passwd-entry.log", "tok.log")
    text = npudoctor("triage", "--no-facts", *logs, cwd=tmp_path)
    doc = json.loads(npudoctor("triage", "--no-facts", "--json", *logs, cwd=tmp_path).stdout)
    assert sorted(u["text"] for u in doc["unknown"]) == [
        f"ERROR: API_KEY={SECRET} bad",
        f"ERROR: HF_TOKEN={SECRET} bad",
        "ERROR: cannot read /etc/passwd: line 3 is malformed",
        f"ERROR: password: {SECRET}",
    ]
    for secret in ("hf_abcdefghijklmnop", "sk-abcdef123456", "hunter2"):
        assert secret not in text.stdout
    assert "[atb-library-not-found loader:cannot-open, no-passwd-entry.log:line 1]" in text.stdout
    assert "tok.log:line 4: ERROR: cannot read /etc/passwd: line 3 is malformed" in text.stdout


def test_pwd_and_json_structure_stay() -> None:
    assert conceal_text("PWD=/work/x OLDPWD=/tmp") == "PWD=/work/x OLDPWD=/tmp"
    doc = {"auth": {"method": "none"}, "api_key_count": 3, "HF_TOKEN": "x"}
    assert json.loads(conceal_text(json.dumps(doc))) == {
        "auth": {"method": "none"},
        "api_key_count": 3,
        "HF_TOKEN": SECRET,
    }


def test_keys_are_concealed_and_redacted_like_values() -> None:
    paths = {"/home/alice/bin": {"exists": True}, "https://u:pw@h/simple": 1}
    assert conceal(paths) == {"/home/alice/bin": {"exists": True}, f"https://{SECRET}@h/simple": 1}
    redacted = Redactor(users=["alice"]).value({"environment": {"paths": paths}})
    keys = list(redacted["environment"]["paths"])
    assert not [k for k in keys if "alice" in k or "pw@" in k]
    assert keys[0].startswith("/home/user-")


def test_os_environ_is_not_touched() -> None:
    assert "S3cr3t" not in os.environ.get("PIP_INDEX_URL", "")
