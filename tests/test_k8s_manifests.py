"""deploy/k8s/npd: the DaemonSet bundle validated against the Kubernetes OpenAPI schemas
shipped by the `kubernetes-validate` package (strict: unknown fields fail), and the NPD
plugin config checked against NPD's custom-plugin contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

kv = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is in the test extra")

NPD = Path(__file__).resolve().parent.parent / "deploy" / "k8s" / "npd"


def docs():
    return [d for d in yaml.safe_load_all((NPD / "daemonset.yaml").read_text()) if d]


@pytest.mark.parametrize("version", ["1.28.0", kv.latest_version()])
def test_manifests_validate_strict(version):
    kinds = []
    for doc in docs():
        kv.validate(doc, version, strict=True)  # raises ValidationError on any schema fault
        kinds.append(doc["kind"])
    assert kinds == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet"]


def test_validator_rejects_a_broken_daemonset():
    ds = next(d for d in docs() if d["kind"] == "DaemonSet")
    ds["spec"]["template"]["spec"]["containers"][0]["volumeMountz"] = []
    with pytest.raises(kv.ValidationError):
        kv.validate(ds, kv.latest_version(), strict=True)


def test_plugin_config_and_daemonset_agree():
    plugin = json.loads((NPD / "npudoctor-plugin-monitor.json").read_text())
    by_kind = {d["kind"]: d for d in docs()}
    embedded = json.loads(by_kind["ConfigMap"]["data"]["npudoctor-plugin-monitor.json"])
    assert embedded == plugin
    assert plugin["plugin"] == "custom" and plugin["pluginConfig"]["max_output_length"] == 80
    condition_types = {c["type"] for c in plugin["conditions"]}
    plugin_timeout = float(plugin["pluginConfig"]["timeout"].rstrip("s"))
    for rule in plugin["rules"]:
        assert rule["path"] == "/usr/local/bin/npudoctor" and rule["args"][0] == "npd"
        assert rule.get("condition") in condition_types | {None}
        # npudoctor answers within its own --timeout, inside NPD's rule timeout
        budget = float(rule["args"][rule["args"].index("--timeout") + 1])
        assert budget < float(rule["timeout"].rstrip("s")) <= plugin_timeout
        root = rule["args"][rule["args"].index("--root") + 1]
        container = by_kind["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]
        assert any(m["mountPath"] == root and m["readOnly"] for m in container["volumeMounts"])
    container = by_kind["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]
    flag = next(a for a in container["command"] if a.startswith("--config.custom-plugin-monitor="))
    mount = next(m for m in container["volumeMounts"] if m["name"] == "config")
    assert flag.split("=", 1)[1] == mount["mountPath"] + "/npudoctor-plugin-monitor.json"


def test_daemonset_can_run_the_hosts_npu_smi():
    """npd checks the chips with the host's npu-smi run in its pod (nothing under --root is
    executed): the pod mounts every host path a container needs for it (the same list the
    passthrough fix names, remedies/world.HOST_MOUNTS, from the standard vllm-ascend docker run)
    at the same path, read-only, with a checked hostPath type, and is privileged for the device
    nodes (a device-plugin resource would take NPUs from the workloads)."""
    from npudoctor.remedies.world import HOST_MOUNTS

    ds = next(d for d in docs() if d["kind"] == "DaemonSet")
    spec = ds["spec"]["template"]["spec"]
    container = spec["containers"][0]
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounted = {m["mountPath"]: m for m in container["volumeMounts"]}
    for path in HOST_MOUNTS:
        mount = mounted[path]
        host_path = volumes[mount["name"]]["hostPath"]
        assert mount["readOnly"] is True and host_path["path"] == path, path
        assert host_path["type"] in ("File", "Directory"), path  # a missing path fails, never created
    assert "/usr/local/bin" in HOST_MOUNTS[2] and mounted["/usr/local/bin/npu-smi"]
    security = container["securityContext"]
    assert security["privileged"] is True and security["readOnlyRootFilesystem"] is True
    # the API refuses allowPrivilegeEscalation: false together with privileged: true
    assert "allowPrivilegeEscalation" not in security
    assert not any("requests" in container["resources"] and "huawei.com" in k for k in container["resources"]["limits"])
