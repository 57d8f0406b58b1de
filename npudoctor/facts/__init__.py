"""Typed, read-only views of a snapshot's facts: the only code that knows section shapes.

``Facts(snapshot.facts)`` gives one view per section (``facts.host``, ``facts.cann``, …),
built on first use and cached.  A section that is absent gives the all-defaults view with
``facts.state(name) == "absent"``; a malformed one (not an object, or fields of the wrong
type) gives the view of what could be read, ``state == "malformed"`` and the problems in
``facts.problems(name)`` — never an exception.  :func:`facts_schema` is the JSON Schema of
every section, generated from the same view classes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from npudoctor.facts._typed import Problems, load, schema_of
from npudoctor.facts.deep import DeepFacts, ProbeErrors
from npudoctor.facts.devices import DevicesFacts
from npudoctor.facts.hccl import HcclFacts
from npudoctor.facts.runtime_env import ContainerFacts, EnvironmentFacts, HygieneFacts, LibrariesFacts
from npudoctor.facts.stack import CannFacts, DriverFacts
from npudoctor.facts.system import HostFacts, PackagesFacts, PythonFacts

#: Section name → view class (``_errors``: a plain map), in probe order.
SECTIONS: Dict[str, Any] = {
    "host": HostFacts,
    "python": PythonFacts,
    "packages": PackagesFacts,
    "cann": CannFacts,
    "driver": DriverFacts,
    "environment": EnvironmentFacts,
    "libraries": LibrariesFacts,
    "devices": DevicesFacts,
    "container": ContainerFacts,
    "hccl": HcclFacts,
    "hygiene": HygieneFacts,
    "deep": DeepFacts,
    "_errors": ProbeErrors,
}


class Facts:
    """Typed access to ``snapshot.facts`` (a JSON object of sections)."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self._raw = raw if isinstance(raw, Mapping) else {}
        self._views: Dict[str, Tuple[Any, Problems]] = {}

    def _view(self, name: str) -> Any:
        cached = self._views.get(name)
        if cached is None:
            cached = load(SECTIONS[name], self._raw.get(name, {}))
            self._views[name] = cached
        return cached[0]

    def state(self, name: str) -> str:
        """``"absent"`` (not probed), ``"malformed"`` (read with problems) or ``"ok"``."""
        if name not in self._raw:
            return "absent"
        self._view(name)
        return "malformed" if self._views[name][1] else "ok"

    def problems(self, name: str) -> List[str]:
        """What could not be read in section ``name`` (``"path: message"`` lines)."""
        if name not in self._raw:
            return []
        self._view(name)
        return self._views[name][1].as_list()

    @property
    def host(self) -> HostFacts:
        return self._view("host")  # type: ignore[no-any-return]

    @property
    def python(self) -> PythonFacts:
        return self._view("python")  # type: ignore[no-any-return]

    @property
    def packages(self) -> PackagesFacts:
        return self._view("packages")  # type: ignore[no-any-return]

    @property
    def cann(self) -> CannFacts:
        return self._view("cann")  # type: ignore[no-any-return]

    @property
    def driver(self) -> DriverFacts:
        return self._view("driver")  # type: ignore[no-any-return]

    @property
    def environment(self) -> EnvironmentFacts:
        return self._view("environment")  # type: ignore[no-any-return]

    @property
    def libraries(self) -> LibrariesFacts:
        return self._view("libraries")  # type: ignore[no-any-return]

    @property
    def container(self) -> ContainerFacts:
        return self._view("container")  # type: ignore[no-any-return]

    @property
    def devices(self) -> DevicesFacts:
        return self._view("devices")  # type: ignore[no-any-return]

    @property
    def hccl(self) -> HcclFacts:
        return self._view("hccl")  # type: ignore[no-any-return]

    @property
    def hygiene(self) -> HygieneFacts:
        return self._view("hygiene")  # type: ignore[no-any-return]

    @property
    def deep(self) -> DeepFacts:
        return self._view("deep")  # type: ignore[no-any-return]

    @property
    def errors(self) -> ProbeErrors:
        """``_errors``: section → the exception of a probe that raised (empty when none did)."""
        return self._view("_errors")  # type: ignore[no-any-return]


def facts_schema(sections: Optional[List[str]] = None) -> Dict[str, Any]:
    """JSON Schema of the ``facts`` object: one property per section (``sections``: a
    subset), with every nested record under ``$defs``."""
    defs: Dict[str, Any] = {}
    props = {name: schema_of(cls, defs) for name, cls in SECTIONS.items() if sections is None or name in sections}
    return {"type": "object", "properties": props, "$defs": defs}
