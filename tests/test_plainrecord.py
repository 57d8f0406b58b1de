"""The plain records on health's start-up path (``npudoctor/plainrecord.py``) behave as the
dataclasses they replaced: each is compared with a dataclass twin declared here with the
same fields and defaults (constructor, equality, hash, repr, ``replace``, ``as_dict`` vs
``dataclasses.asdict``, frozen-ness)."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Tuple

import pytest

from npudoctor.cli.request import DEFAULT_DEADLINE, MachineRequest
from npudoctor.hostio import CommandResult, FileRead
from npudoctor.plainrecord import FrozenRecord, PlainRecord
from npudoctor.runtime.healthopts import DEFAULT_TIMEOUT, HealthOptions


@dataclasses.dataclass(frozen=True)
class MachineRequestTwin:
    root: Optional[str] = None
    python: Optional[str] = None
    user: Optional[str] = None
    env_file: Optional[str] = None
    no_commands: bool = False
    from_file: Optional[str] = None
    json: bool = False
    deadline: float = DEFAULT_DEADLINE


@dataclasses.dataclass(frozen=True)
class HealthOptionsTwin:
    machine: MachineRequestTwin = dataclasses.field(default_factory=MachineRequestTwin)
    timeout: float = DEFAULT_TIMEOUT
    require: Optional[int] = None
    only: Tuple[str, ...] = ()
    skip: Tuple[str, ...] = ()
    fail_on: str = "error"
    ignore: Tuple[str, ...] = ()
    matrix: Optional[str] = None
    exec_env: bool = False
    cache_ttl: float = 0.0
    require_checked: Tuple[str, ...] = ()
    fallback_ttl: float = 0.0
    pid: Optional[int] = None
    verbose: bool = False
    fresh: bool = False


@dataclasses.dataclass
class FileReadTwin:
    path: str
    text: Optional[str] = None
    error: Optional[str] = None
    truncated: bool = False
    lossy: bool = False


@dataclasses.dataclass
class CommandResultTwin:
    argv: List[str]
    returncode: Optional[int] = None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: Optional[str] = None
    duration: float = 0.0
    abandoned: bool = False
    overflow: bool = False
    cpu_s: Optional[float] = None
    state: Optional[str] = None
    cpu_pressure: Optional[float] = None


#: (record class, its dataclass twin, the required arguments, other field values to try)
CASES: List[Tuple[type, type, Dict[str, Any], Dict[str, Any]]] = [
    (MachineRequest, MachineRequestTwin, {}, {"root": "/srv/rootfs", "json": True, "deadline": 3.0}),
    (FileRead, FileReadTwin, {"path": "/etc/os-release"}, {"text": "ID=ubuntu\n", "truncated": True}),
    (
        CommandResult,
        CommandResultTwin,
        {"argv": ["npu-smi", "info"]},
        {"returncode": -11, "stdout": "x", "cpu_s": 0.25, "state": "D"},
    ),
    (HealthOptions, HealthOptionsTwin, {}, {"timeout": 5.0, "only": ("devices",), "require": 8, "fresh": True}),
]


def _twin_value(value: Any) -> Any:
    return MachineRequestTwin(**value.as_dict()) if isinstance(value, MachineRequest) else value


@pytest.mark.parametrize(("cls", "twin", "required", "others"), CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_a_record_is_its_dataclass_twin(cls: type, twin: type, required: Dict[str, Any], others: Dict[str, Any]):
    assert tuple(f.name for f in dataclasses.fields(twin)) == cls.FIELDS
    ours, theirs = cls(**required), twin(**required)
    # defaults
    assert ours.as_dict() == dataclasses.asdict(theirs)
    assert repr(ours).replace(cls.__qualname__, "T") == repr(theirs).replace(twin.__qualname__, "T").replace(
        "MachineRequestTwin", "MachineRequest"
    )
    # equality by value, same class only
    assert ours == cls(**required) and ours != theirs and (ours == theirs) is False
    changed, changed_twin = ours.replace(**others), dataclasses.replace(theirs, **others)
    assert changed != ours and changed.as_dict() == dataclasses.asdict(changed_twin)
    assert ours.as_dict() == dataclasses.asdict(theirs)  # replace made a new record
    for name, value in others.items():
        assert getattr(changed, name) == getattr(changed_twin, name) == value
    with pytest.raises(TypeError):
        ours.replace(no_such_field=1)
    frozen = issubclass(cls, FrozenRecord)
    assert frozen == twin.__dataclass_params__.frozen  # type: ignore[attr-defined]
    if frozen:
        assert hash(ours) == hash(cls(**required)) and hash(changed) != hash(ours)
        with pytest.raises(AttributeError):
            ours.root = "/"  # type: ignore[attr-defined]
        with pytest.raises(AttributeError):
            del ours.timeout  # type: ignore[attr-defined]
    else:
        with pytest.raises(TypeError):
            hash(ours)
        name, value = next(iter(others.items()))
        setattr(ours, name, value)
        setattr(theirs, name, value)
        assert ours.as_dict() == dataclasses.asdict(theirs)


def test_as_dict_copies_nested_records_and_containers() -> None:
    options = HealthOptions(machine=MachineRequest(root="/r"), only=("devices", "container"))
    as_dict = options.as_dict()
    twin = HealthOptionsTwin(machine=MachineRequestTwin(root="/r"), only=("devices", "container"))
    assert as_dict == dataclasses.asdict(twin)
    assert as_dict["machine"] == {**MachineRequest(root="/r").as_dict()} and isinstance(as_dict["only"], tuple)
    result = CommandResult(argv=["npu-smi", "info"])
    copied = result.as_dict()
    copied["argv"].append("-m")
    assert result.argv == ["npu-smi", "info"]  # a copy, as dataclasses.asdict makes


def test_replace_runs_the_constructor() -> None:
    class Checked(FrozenRecord):
        FIELDS = ("n",)

        def __init__(self, n: int = 0) -> None:
            if n < 0:
                raise ValueError("n must not be negative")
            self._set(n=n)

    assert Checked(2).replace(n=3) == Checked(3)
    with pytest.raises(ValueError):
        Checked(2).replace(n=-1)
    assert isinstance(Checked(), PlainRecord)
