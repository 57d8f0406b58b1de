"""Redaction (issue 20): one module, a corpus, and the outputs that leave the machine."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
from clirun import npudoctor

from npudoctor.redact import SECRET, Redactor, conceal, conceal_text, pseudonym
from npudoctor.snapshot import Snapshot, redact

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
CORPUS = tomllib.loads((REPO / "tests" / "fixtures" / "redaction" / "corpus.toml").read_text())["case"]
SCENARIO = REPO / "tests" / "scenarios" / "k01-control-matched-aarch64"
SITE = "usr/local/python3.10.14/lib/python3.10/site-packages"


def _redactor() -> Redactor:
    return Redactor(hosts=["gpu-node-17", "master.cluster.local"], users=["alice", "bob"])


@pytest.mark.parametrize("case", CORPUS, ids=[c["what"] for c in CORPUS])
def test_corpus(case: Dict[str, Any]) -> None:
    out = _redactor().text(case["text"])
    for gone in case.get("gone", []):
        assert gone not in out, (case["what"], out)
    for kept in case.get("kept", []):
        assert kept in out, (case["what"], out)
    if case.get("secret"):  # secrets go in every output, not only redacted ones
        concealed = conceal_text(case["text"])
        for gone in case.get("gone", []):
            assert gone not in concealed, (case["what"], concealed)


# Lines no corpus case holds alone: one mark of one substitution each (an option without
# ``=``/``:``, a bare token, three dots, two colons, a home directory, a known name).
_MARK_LINES = [
    "--password hunter2 --verbose",
    "ghp_ABCDEFGHIJKLMNOPQRSTUVWX0123 in a log",
    "cloned with github_pat_11ABCDEFG0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "sk-ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "peer 192.168.20.31 and 2001:db8::7",
    "via fe80::1",
    "10.2.3.4",
    "/homes/carol/venv/bin/python /Users/dave/x /users/erin/y",
    "alice on gpu-node-17",
    "torch 2.13.0+cpu",
    "",
]


def _every_substitution(redactor: Redactor, text: str) -> str:
    """Redactor.text as it was before the literal-mark checks and the memo: every
    substitution run unconditionally (the oracle the fast path must equal)."""
    from npudoctor import redact as r

    out = r._URL_USERINFO.sub(lambda m: f"{m.group(1)}{SECRET}@", text)
    out = r._BEARER.sub(lambda m: f"{m.group(1)}{SECRET}", r._TOKENS.sub(SECRET, out))
    out = r._QUERY.sub(r._query, r._HEADER.sub(r._header, out))
    out = r._assignments(r._OPTION.sub(r._assignment, out))
    out = r._HOME_LIKE.sub(lambda m: f"{m.group(1)}/{redactor._user_token(m.group(2))}", out)
    if redactor._user_re is not None:
        out = redactor._user_re.sub(lambda m: redactor.user(m.group(0)), out)
    if redactor._host_re is not None:
        out = redactor._host_re.sub(lambda m: redactor.host(m.group(0)), out)
    out = redactor._ipv4_in(out, False)
    return r._IPV6.sub(lambda m: redactor.ipv6(m.group(0)), out)


@pytest.mark.parametrize("text", [c["text"] for c in CORPUS] + _MARK_LINES)
def test_skipped_substitutions_change_nothing(text: str) -> None:
    """conceal_text and Redactor.text skip a substitution when the text lacks the literal
    characters its every match holds, and remember their results (issue 18's speed work):
    the output is the one of running every substitution, on first and repeated use."""
    redactor = _redactor()
    expected = _every_substitution(_redactor(), text)
    assert redactor.text(text) == expected
    assert redactor.text(text) == expected  # from the memo
    assert Redactor().text(text) == _every_substitution(Redactor(), text)


def _secret_substitutions(text: str) -> str:
    """conceal_text's substitutions, each run unconditionally over the whole text (its oracle)."""
    from npudoctor import redact as r

    out = r._URL_USERINFO.sub(lambda m: f"{m.group(1)}{SECRET}@", text)
    out = r._BEARER.sub(lambda m: f"{m.group(1)}{SECRET}", r._TOKENS.sub(SECRET, out))
    out = r._QUERY.sub(r._query, r._HEADER.sub(r._header, out))
    return r._assignments(r._OPTION.sub(r._assignment, out))


def test_long_text_is_concealed_line_by_line_as_whole() -> None:
    """Past LINEWISE characters the substitutions run only on the lines holding a
    NAME_WORDS word or a mark: a JSON document of filler lines with every corpus case and
    mark line among them comes out as the whole-text substitutions make it, and as the
    short-text path (no line skipped) does."""
    from npudoctor import redact as r

    filler = [f'    "site_{i}": ["/usr/lib/python3/x{i}.so", {i}, "torch 2.13.0+cpu", "a=b: c"],' for i in range(900)]
    texts = [c["text"] for c in CORPUS] + _MARK_LINES
    lines = []
    for i, text in enumerate(texts):
        lines += filler[i * 20 : i * 20 + 20] + [text]
    doc = "\n".join(lines + filler[len(texts) * 20 :]) + "\n"
    assert len(doc) > r.LINEWISE
    got = conceal_text(doc)
    assert got == _secret_substitutions(doc)
    assert got != doc and SECRET in got
    old = r.LINEWISE, r.BLOCK, r.BLOCK_MAX
    try:
        # hundreds of blocks of whole lines, some longer than the longest block (taken whole)
        r.BLOCK, r.BLOCK_MAX = 200, 260
        assert conceal_text(doc) == got
        r.LINEWISE = 1 << 40
        assert conceal_text(doc) == got
    finally:
        r.LINEWISE, r.BLOCK, r.BLOCK_MAX = old


@pytest.mark.parametrize(
    "name",
    [
        "GITHUB_TOKEN",
        "my_secret",
        "DB_PASSWORD",
        "x-passwd",
        "GPG_PASSPHRASE",
        "AWS_CREDENTIALS",
        "OPENAI_API_KEY",
        "ACCESS-KEY",
        "PRIVATEKEY",
        "ssh_key",
        "KEY",
        "AUTH",
        "X_PASS",
        "pass",
        "DB_PWD",
        "ACCOUNTKEY",
        "Cookie",
        "SESSION_ID",
        "sig",
        "signature",
        "x-amz-signature",
        "\u017fecret",
        "pa\u017f\u017f",
        "AUTHOR\u0130ZATION",
        "author\u0131zation",
        "coo\u212aie",
        "X-Api-Token",
    ],
)
def test_every_secret_name_holds_a_name_word(name: str) -> None:
    """The line-by-line path's premise: a name SECRET_NAME, _QUERY_SECRETS or _HEADER takes
    for a secret holds a NAME_WORDS word once folded (ignore-case letters included)."""
    from npudoctor import redact as r

    secret = bool(r.SECRET_NAME.search(name)) or name.lower() in r._QUERY_SECRETS
    secret = secret or bool(r._HEADER.search(f"{name}: value"))
    assert secret, name
    assert any(w in r.folded(name) for w in r.NAME_WORDS), name


def test_pseudonyms_are_stable_and_salted() -> None:
    one, two = _redactor(), _redactor()
    assert one.text("alice@gpu-node-17 10.1.2.3") == two.text("alice@gpu-node-17 10.1.2.3")
    assert one.host("gpu-node-17") == pseudonym("gpu-node-17") == "node-" + pseudonym("gpu-node-17")[5:]
    salted = Redactor(hosts=["gpu-node-17"], salt="site-a")
    assert salted.host("gpu-node-17") != one.host("gpu-node-17")
    assert salted.host("gpu-node-17") == Redactor(salt="site-a").host("gpu-node-17")
    # an address stays an address: same /24 → same pseudonymous /24, last octet kept
    a, b, c = one.ipv4("192.168.20.31"), one.ipv4("192.168.20.32"), one.ipv4("192.168.21.31")
    assert ipaddress.IPv4Address(a) in ipaddress.IPv4Network("10.0.0.0/8")
    assert a.rsplit(".", 1)[0] == b.rsplit(".", 1)[0] and a.endswith(".31") and b.endswith(".32")
    assert c.rsplit(".", 1)[0] != a.rsplit(".", 1)[0]
    v6 = one.ipv6("2001:db8::7")
    assert ipaddress.IPv6Address(v6) in ipaddress.IPv6Network("fd00::/8") and v6 == two.ipv6("2001:db8::7")


def test_a_glob_in_a_home_path_is_no_user_name() -> None:
    """``/home/*/Ascend`` is where npudoctor looked for NNAL, not a user's home: kept as
    written, while a real user's home in the same text is still replaced."""
    one = _redactor()
    text = one.text("looked under ~/Ascend, /home/*/Ascend and /home/alice/Ascend")
    assert "/home/*/Ascend" in text
    assert "alice" not in text and "/home/user-" in text


def test_conceal_says_a_secret_is_set_not_what_it_is() -> None:
    doc = {"vars": {"ASCEND_API_TOKEN": "abc", "EMPTY_TOKEN": "", "PATH": "/bin"}, "n": [{"password": "x"}]}
    assert conceal(doc) == {
        "vars": {"ASCEND_API_TOKEN": SECRET, "EMPTY_TOKEN": "", "PATH": "/bin"},
        "n": [{"password": SECRET}],
    }


def test_snapshot_redaction_keeps_hccl_addresses_comparable() -> None:
    snap = Snapshot(
        facts={
            "host": {"hostname": "gpu-node-17", "identity": {"name": "alice"}},
            "environment": {
                "vars": {
                    "MASTER_ADDR": "master.cluster.local",
                    "HCCL_IF_IP": "10.1.2.3",
                    "HOME": "/data/alice",
                    "PIP_INDEX_URL": "https://bob:pw0rd@pypi.corp/simple",
                }
            },
            "hccl": {"hccn": [{"device_ip": "10.1.2.3"}], "rank_table": {"server_id": "10.1.2.3"}},
        },
        node="gpu-node-17",
    )
    safe = redact(snap)
    text = json.dumps(safe.to_dict())
    for gone in ("gpu-node-17", "alice", "master.cluster.local", "10.1.2.3", "pw0rd"):
        assert gone not in text
    ip = safe.facts["environment"]["vars"]["HCCL_IF_IP"]
    assert ip == safe.facts["hccl"]["hccn"][0]["device_ip"] == safe.facts["hccl"]["rank_table"]["server_id"]
    assert ipaddress.ip_address(ip) and ip.endswith(".3")
    assert safe.node == pseudonym("gpu-node-17") == redact(snap).node


# ------------------------------------------------------------------ the outputs
def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(SCENARIO / "root", root, symlinks=True)
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc" / "pip.conf").write_text("[global]\nindex-url = https://bob:S3cr3tPw@pypi.corp.example/simple\n")
    dist = next((root / SITE).glob("torch-*.dist-info"))
    (dist / "direct_url.json").write_text(
        json.dumps(
            {
                "url": "https://x-access-token:ghs_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/torch.git",
                "vcs_info": {"vcs": "git", "commit_id": "0" * 40},
            }
        )
    )
    return root


SECRETS = ["S3cr3tPw", "ghs_16C7e42F292c6912E7710c838347Ae178B4a", "Pa55", "tok-42", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0"]
PERSONAL = ["carol", "master.cluster.local", "2001:db8:85a3::8a2e:370:7334", "192.168.20.31"]


def _env(tmp_path: Path) -> Dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": "/data/users/carol",
        "USER": "carol",
        "PIP_INDEX_URL": "https://deploy:Pa55@mirrors.example.com/simple",
        "ASCEND_API_TOKEN": "tok-42",
        "HF_TOKEN": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123",
        "MASTER_ADDR": "master.cluster.local",
        "HCCL_IF_IP": "192.168.20.31",
        "NCCL_SOCKET_IFNAME": "eth0",
        "GLOO_SOCKET_ADDR": "2001:db8:85a3::8a2e:370:7334",
        "VIRTUAL_ENV": "/data/users/carol/venv",
    }


def _missing(text: str, words: List[str]) -> List[str]:
    return [w for w in words if w in text]


def test_collect_and_markdown_leak_neither_secrets_nor_personal_data(tmp_path: Path) -> None:
    root, env = _root(tmp_path), _env(tmp_path)
    out = tmp_path / "snap.json"
    proc = npudoctor("collect", "--root", str(root), "-o", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    snap = out.read_text()
    assert _missing(snap, SECRETS + PERSONAL) == []
    assert "mirrors.example.com/simple" in snap  # the index itself is still judged
    md = npudoctor("check", "--root", str(root), "--markdown", env=env)
    assert _missing(md.stdout, SECRETS + PERSONAL) == []
    # a redacted snapshot still replays
    again = npudoctor("check", "--from", str(out), "--json", env=env)
    assert again.returncode in (0, 1), again.stderr


def test_outputs_without_redaction_still_conceal_secrets(tmp_path: Path) -> None:
    root, env = _root(tmp_path), _env(tmp_path)
    doc = npudoctor("check", "--root", str(root), "--json", env=env)
    assert doc.returncode in (0, 1), doc.stderr
    assert _missing(doc.stdout, SECRETS) == []
    facts = json.loads(doc.stdout)["facts"]
    assert SECRET in json.dumps(facts)  # presence shown
    text = npudoctor("check", "--root", str(root), "-v", env=env)
    assert _missing(text.stdout, SECRETS) == []
    raw = tmp_path / "raw.json"
    assert npudoctor("collect", "--root", str(root), "--no-redact", "-o", str(raw), env=env).returncode == 0
    assert _missing(raw.read_text(), SECRETS) == []
    assert "carol" in raw.read_text()  # personal data kept as asked


def test_triage_does_not_repeat_secrets_of_log_lines(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "INFO HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123 downloading\n"
        "RuntimeError: ACL stream synchronize failed, error code:507015 url https://u:Pa55@h.example/x\n"
        "ERROR some unknown failure password=Pa55\n"
    )
    for args in ([], ["--json"]):
        proc = npudoctor("triage", str(log), "--no-facts", *args, env={"PATH": os.environ["PATH"]})
        assert _missing(proc.stdout, SECRETS) == [], proc.stdout


# ------------------------------------------------------------------ versions are never addresses
def _matrix_versions() -> List[str]:
    """Every version-looking string of the matrix and the knowledge tables."""
    found: List[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str):
            found.extend(VERSION.findall(value))

    for path in sorted((REPO / "matrix").glob("*.toml")) + sorted((REPO / "npudoctor" / "knowledge").rglob("*.toml")):
        walk(tomllib.loads(path.read_text(encoding="utf-8")))
    return sorted(set(found))


def _scenario_distributions() -> List[Any]:
    """(name, version, path) of every dist-info/egg-info of every scenario root."""
    out = set()
    for info in sorted((REPO / "tests" / "scenarios").glob("*/root/**/*.*-info")):
        if not info.name.endswith((".dist-info", ".egg-info")):
            continue
        stem = info.name.rsplit(".", 1)[0]
        name, _, version = stem.partition("-")
        if version:
            out.add((name, version.split("-")[0], str(info.relative_to(info.parents[0].parents[0]))))
    return sorted(out)


#: A version in text: ``4.11.0.86``, ``8.0.RC3``, ``2.1.0.post4``, ``24.1.rc1``, ``2.7.1+cpu``.
VERSION = re.compile(r"(?<![\w.])\d+(?:\.[0-9A-Za-z]+)+(?:[+][0-9A-Za-z.]+)?")
MATRIX_VERSIONS = _matrix_versions()
DISTRIBUTIONS = _scenario_distributions() + [
    ("opencv-python-headless", "4.11.0.86", "site-packages/opencv_python_headless-4.11.0.86.dist-info"),
    ("nvidia-cudnn-cu12", "9.1.0.70", "site-packages/nvidia_cudnn_cu12-9.1.0.70.dist-info"),
]


def test_the_property_tests_see_four_part_versions() -> None:
    quads = [v for v in MATRIX_VERSIONS if re.fullmatch(r"(?:\d{1,3}\.){3}\d{1,3}", v)]
    assert len(quads) >= 5 and "7.2.0.1" in quads, quads
    assert ("opencv_python_headless", "4.11.0.86") in [(n, v) for n, v, _ in DISTRIBUTIONS]


def test_no_version_of_the_matrix_changes() -> None:
    redactor = _redactor()
    changed = []
    for version in MATRIX_VERSIONS:
        for text in (version, f"CANN {version}", f"version {version}", f"torch_npu=={version}", f"{version}:"):
            if redactor.text(text) != text:
                changed.append((text, redactor.text(text)))
        if redactor.value({"version": version, "versions": [version]}) != {"version": version, "versions": [version]}:
            changed.append((version, redactor.value({"version": version})))
    assert changed == []


def test_no_distribution_of_any_scenario_changes() -> None:
    redactor = _redactor()
    changed = []
    for name, version, path in DISTRIBUTIONS:
        record = {"name": name, "version": version, "path": f"/usr/local/lib/python3.10/{path}/METADATA"}
        texts = [f"{name} {version}", f"{name}=={version}", f"pip install '{name}=={version}'", record["path"]]
        texts.append(f"{name} {version} requires numpy>=2")
        for text in texts:
            if redactor.text(text) != text:
                changed.append((text, redactor.text(text)))
        if redactor.value({"packages": [record]}) != {"packages": [record]}:
            changed.append((name, redactor.value(record)))
    assert changed == []


def test_addresses_are_rewritten_where_addresses_are_expected() -> None:
    redactor = _redactor()
    for text, gone in [
        ("HCCL_IF_IP=192.168.20.31,192.168.20.32", ["192.168.20.31", "192.168.20.32"]),
        ("device_ip 10.20.0.5 and inet 172.16.3.4/24", ["10.20.0.5", "172.16.3.4"]),
        ("connect to 172.16.3.4:29500 failed", ["172.16.3.4"]),
        ("pip download from http://172.16.3.4/simple", ["172.16.3.4"]),
        ('"server_id": "172.16.3.4"', ["172.16.3.4"]),
    ]:
        out = redactor.text(text)
        assert all(g not in out for g in gone), (text, out)
    # an address the network facts hold is rewritten wherever free text quotes it
    snap = Snapshot(facts={"hccl": {"hccn_conf": {"devices": {"0": {"address": "172.16.9.8"}}}}}, node="n1")
    safe = redact(snap)
    assert "172.16.9.8" not in json.dumps(safe.to_dict())
    from npudoctor.snapshot import redactor_for

    assert "172.16.9.8" not in redactor_for(snap).text("device 0 has 172.16.9.8, not in the rank table")
    # the same dotted quad after a package name is a version
    assert redactor.text("opencv-python-headless 4.11.0.86") == "opencv-python-headless 4.11.0.86"


SCENARIOS = sorted(p.parent for p in (REPO / "tests" / "scenarios").glob("*/scenario.toml"))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_markdown_shows_the_versions_check_shows(scenario: Path, tmp_path: Path) -> None:
    """``check --markdown`` (redacted) of every scenario shows the versions ``check --json``
    shows: every version of the Markdown is one of the JSON document's, every version of a
    finding's title is in the Markdown; only addresses differ (a run's timings are not
    versions: only versions of three parts or with letters are compared)."""
    from scenario_runner import environment, prepare

    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    if spec.get("setup"):
        scenario = prepare(scenario, tmp_path)
    env = environment(scenario, spec)
    args = ["check", "--root", str(scenario / "root")] + [str(a) for a in spec.get("setup", {}).get("args", [])]
    md = npudoctor(*args, "--markdown", env=env, cwd=scenario)
    doc = npudoctor(*args, "--json", env=env, cwd=scenario)
    assert md.returncode == doc.returncode, md.stderr

    def versions(text: str) -> set:
        return {v for v in VERSION.findall(text) if v.count(".") >= 2 or re.search("[A-Za-z]", v)}

    pasted, known = versions(md.stdout), versions(doc.stdout)
    facts = json.loads(doc.stdout)
    titles = versions(" ".join(f["title"] for f in facts["findings"]))
    # the addresses of the network facts, and their pseudonyms (same last octet, in 10/8)
    network = set(re.findall(r"(?:\d{1,3}\.){3}\d{1,3}", json.dumps(facts["facts"].get("hccl"))))
    octets = {a.rsplit(".", 1)[1] for a in network}
    pseudonyms = {v for v in pasted - known if v.startswith("10.") and v.rsplit(".", 1)[1] in octets}
    assert pasted - known - pseudonyms == set()
    assert titles - pasted - network == set()


def test_markdown_keeps_the_culprits_version() -> None:
    scenario = REPO / "tests" / "scenarios" / "k07-numpy-2-with-cann-8.2.RC1"
    plain = npudoctor("check", "--root", str(scenario / "root"), env={"PATH": "/usr/bin:/bin"})
    md = npudoctor("check", "--root", str(scenario / "root"), "--markdown", env={"PATH": "/usr/bin:/bin"})
    assert "opencv_python_headless 4.11.0.86 requires numpy>=2" in plain.stdout
    assert "opencv_python_headless 4.11.0.86 requires numpy>=2" in md.stdout


def test_a_collected_snapshot_keeps_four_part_versions(tmp_path: Path) -> None:
    """``collect`` (redacted by default) keeps the culprit's version, so ``check --from``,
    ``compare`` and ``plan`` see the real one."""
    scenario = REPO / "tests" / "scenarios" / "k07-numpy-2-with-cann-8.2.RC1"
    out = tmp_path / "snap.json"
    proc = npudoctor("collect", "--root", str(scenario / "root"), "-o", str(out), env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(out.read_text())
    assert snap["redacted"] is True
    assert [r["version"] for r in snap["facts"]["packages"]["installed"]["opencv-python-headless"]] == ["4.11.0.86"]
    again = npudoctor("check", "--from", str(out), env={"PATH": "/usr/bin:/bin"}, width=200)
    assert "opencv_python_headless 4.11.0.86 requires numpy>=2" in again.stdout


def test_names_address_from_its_memo() -> None:
    """A name's parts are split once and remembered: the answer is the split's, first and
    later, for both word sets, and the memo never outgrows its bound."""
    from npudoctor import redact as r

    names = ["HCCL_IF_IP", "MASTER_ADDR", "device_ip", "hostname", "server-id", "torch.version", "IpAddr", "x"]
    plain = {n: re.split(r"[_.\-]+", n.lower()) for n in names}
    for _round in range(2):
        for n in names:
            assert r._names_address(n) == any(p in r._ADDRESS_PARTS for p in plain[n])
            assert r._names_address(n, r._ADDRESS_WORDS) == any(p in r._ADDRESS_WORDS for p in plain[n])
    assert [n for n in names if r._names_address(n)] == [
        "HCCL_IF_IP",
        "MASTER_ADDR",
        "device_ip",
        "server-id",
        "IpAddr",
    ]
    for i in range(r._NAME_MEMO_MAX + 10):
        r._names_address(f"k{i}")
    assert len(r._NAME_PARTS) <= r._NAME_MEMO_MAX
