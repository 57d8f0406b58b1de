"""Partial reads of the facts views (``Facts.present``, ``fields_of``, ``packages_of``), the
view construction without ``__init__``, and ``dump`` (a view back to the snapshot's JSON)."""

from __future__ import annotations

from npudoctor.facts import SECTIONS, Facts
from npudoctor.facts._typed import dump, load

RAW = {
    "host": {"arch": "aarch64", "glibc": "2.34", "os": {"id": "ubuntu"}},
    "packages": {
        "installed": {
            "torch": [{"name": "torch", "version": "2.1.0"}],
            "Torch_NPU": [{"name": "torch_npu", "version": "2.1.0.post3", "requires_dist": ["pyyaml"]}],
            "pkg-1": [{"name": "pkg-1", "version": 7}],
        },
        "count": 3,
    },
    "devices": {
        "chips": [{"name": "910B3", "npu_id": 0, "hbm_used_mb": "garbled"}],
        "visibility": {"ASCEND_RT_VISIBLE_DEVICES": "0,1"},
        "npu_smi": {"version": "24.1.rc2"},
    },
}


def test_present_builds_nothing_and_fields_of_reads_only_the_fields_asked() -> None:
    facts = Facts(RAW)
    assert facts.present("host") and not facts.present("cann")
    host = facts.fields_of("host", "arch")
    assert host.arch == "aarch64" and host.glibc is None and host.os.id is None
    devices = facts.fields_of("devices", "chips", "visibility")
    assert devices.chips[0].name == "910B3" and devices.chips[0].hbm_used_mb is None
    assert devices.visibility.ascend_rt_visible_devices == "0,1" and devices.npu_smi.version is None
    assert facts.host.glibc == "2.34"  # the full view is built on its own
    assert facts.fields_of("host", "arch") is facts.host  # and then answers partial reads


def test_packages_of_converts_only_the_projects_asked_any_spelling() -> None:
    facts = Facts(RAW)
    packages = facts.packages_of("torch-npu")
    assert list(packages.installed) == ["Torch_NPU"] and packages.count is None
    assert packages.torch_npu is not None and packages.torch_npu.version == "2.1.0.post3"
    assert packages.first("torch") is None
    assert facts.packages.first("pkg-1") is not None and facts.packages_of("torch").count == 3


def test_views_built_without_init_equal_the_views_built_with_it() -> None:
    from npudoctor.facts._view import view_fields

    for name in ("host", "packages", "devices"):
        view = Facts(RAW)._view(name)
        rebuilt = type(view)(**{name: getattr(view, name) for name, _key in view_fields(type(view))})
        assert rebuilt == view and repr(rebuilt) == repr(view), name


def test_dump_gives_the_snapshot_shape_back() -> None:
    devices = Facts(RAW).devices
    raw = dump(devices)
    assert raw["visibility"]["ASCEND_RT_VISIBLE_DEVICES"] == "0,1"  # the snapshot key, not the attribute
    assert raw["chips"][0]["name"] == "910B3" and raw["chips"][0]["hbm_used_mb"] is None
    assert isinstance(raw["chips"], list) and raw["npu_smi"]["commands"] == []
    assert load(SECTIONS["devices"], raw)[0] == devices
