"""Typed, read-only views of a snapshot's facts: the only code that knows section shapes.

``Facts(snapshot.facts)`` gives one view per section (``facts.host``, ``facts.cann``, …),
built on first use and cached.  A section that is absent gives the all-defaults view with
``facts.state(name) == "absent"``; a malformed one (not an object, or fields of the wrong
type) gives the view of what could be read, ``state == "malformed"`` and the problems in
``facts.problems(name)`` — never an exception.  :func:`facts_schema` is the JSON Schema of
every section, generated from the same view classes.
"""

from __future__ import annotations

import importlib
from collections import abc
from functools import lru_cache
from typing import TYPE_CHECKING

from npudoctor.facts._typed import Problems, load, schema_of
from npudoctor.parsers.metadata import canonical_name

if TYPE_CHECKING:  # imported on first use (below): a command defines only the views it reads
    from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

    from npudoctor.facts.container import ContainerFacts
    from npudoctor.facts.deep import DeepFacts, ProbeErrors
    from npudoctor.facts.devices import DevicesFacts
    from npudoctor.facts.environment import EnvironmentFacts
    from npudoctor.facts.frameworks import FrameworksFacts
    from npudoctor.facts.hccl import HcclFacts
    from npudoctor.facts.host_limits import HostLimitsFacts
    from npudoctor.facts.hygiene import HygieneFacts
    from npudoctor.facts.numa import NumaFacts
    from npudoctor.facts.runtime_env import LibrariesFacts
    from npudoctor.facts.stack import CannFacts, DriverFacts
    from npudoctor.facts.system import AccessFacts, HostFacts, PackagesFacts, PythonFacts
    from npudoctor.facts.tunables import TunablesFacts

#: ``canonical_name`` remembered: the same few hundred project names recur in every snapshot.
_canonical = lru_cache(maxsize=4096)(canonical_name)

#: Section name → (module under npudoctor.facts, view class), in probe order.
_WHERE: Dict[str, Tuple[str, str]] = {
    "host": ("system", "HostFacts"),
    "python": ("system", "PythonFacts"),
    "packages": ("system", "PackagesFacts"),
    "cann": ("stack", "CannFacts"),
    "driver": ("stack", "DriverFacts"),
    "environment": ("environment", "EnvironmentFacts"),
    "libraries": ("runtime_env", "LibrariesFacts"),
    "devices": ("devices", "DevicesFacts"),
    "container": ("container", "ContainerFacts"),
    "hccl": ("hccl", "HcclFacts"),
    "hygiene": ("hygiene", "HygieneFacts"),
    "tunables": ("tunables", "TunablesFacts"),
    "host_limits": ("host_limits", "HostLimitsFacts"),
    "numa": ("numa", "NumaFacts"),
    "frameworks": ("frameworks", "FrameworksFacts"),
    "deep": ("deep", "DeepFacts"),
    "access": ("system", "AccessFacts"),
    "_errors": ("deep", "ProbeErrors"),
}


if TYPE_CHECKING:
    _SectionsBase = Mapping[str, Any]
else:
    _SectionsBase = abc.Mapping


class _Sections(_SectionsBase):
    """Section name → view class (``_errors``: a plain map), in probe order; a view's
    module is imported when its class is first asked for (``compare`` reads 7 sections,
    ``env`` 2), so nobody pays for the classes it never reads."""

    def __init__(self) -> None:
        self._classes: Dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        cls = self._classes.get(name)
        if cls is None:
            module, attr = _WHERE[name]
            cls = self._classes[name] = getattr(importlib.import_module(f"npudoctor.facts.{module}"), attr)
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)


#: Section name → view class (``_errors``: a plain map), in probe order.
SECTIONS: Mapping[str, Any] = _Sections()


if TYPE_CHECKING:
    #: Views shared by the :class:`Facts` of one run's successive snapshots (the quick path
    #: judges the sections finished so far several times, then all of them): section name
    #: -> ``(raw section, (view, problems))``, reused while a snapshot holds that same raw
    #: section (a probe's result is never changed once stored).
    SharedViews = Dict[str, Tuple[Any, Tuple[Any, Problems]]]


class Facts:
    """Typed access to ``snapshot.facts`` (a JSON object of sections); ``shared``: see
    :data:`SharedViews`."""

    def __init__(self, raw: Mapping[str, Any], shared: Optional[SharedViews] = None) -> None:
        self._raw = raw if isinstance(raw, abc.Mapping) else {}
        self._views: Dict[str, Tuple[Any, Problems]] = {}
        self._shared = shared

    def _view(self, name: str) -> Any:
        cached = self._views.get(name)
        if cached is None:
            section = self._raw.get(name, {})
            kept = self._shared.get(name) if self._shared is not None else None
            if kept is not None and kept[0] is section:
                cached = kept[1]
            else:
                cached = load(SECTIONS[name], section)
                if self._shared is not None:
                    self._shared[name] = (section, cached)
            self._views[name] = cached
        return cached[0]

    def fields_of(self, name: str, *fields: str) -> Any:
        """The view of section ``name`` with only its top-level ``fields`` (attribute names)
        read; the other fields keep their defaults and are not converted.  For readers that
        need a little of big sections many times over (``compare``); the full view, when it
        is built already.  Problems of a partial read are not recorded."""
        built = self._views.get(name)
        if built is not None:
            return built[0]
        return load(SECTIONS[name], self._raw.get(name, {}), only=frozenset(fields))[0]

    def present(self, name: str) -> bool:
        """Whether section ``name`` is in the snapshot (was probed), without building its
        view (``state(name) != "absent"`` converts the section)."""
        return name in self._raw

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

    def unread(self, name: str, field: str) -> bool:
        """Whether field ``field`` of section ``name`` could not be read: the section is not
        a table, or a problem names that field (its value is the default, not a fact)."""
        return any(p.startswith(("<section>:", f"{field}:", f"{field}[", f"{field}.")) for p in self.problems(name))

    @property
    def host(self) -> HostFacts:
        return self._view("host")  # type: ignore[no-any-return]

    def packages_of(self, *names: str) -> PackagesFacts:
        """A ``packages`` view whose ``installed`` holds only the records of the projects
        ``names`` (any spelling); its other fields are the defaults.  For readers that need
        a few projects out of hundreds (``compare`` over 1,000 snapshots): only those
        records are converted.  When the whole section's view is built already, that view."""
        built = self._views.get("packages")
        if built is not None:
            return built[0]  # type: ignore[no-any-return]
        raw = self._raw.get("packages")
        installed = raw.get("installed") if isinstance(raw, dict) else None
        if not isinstance(installed, dict):
            return self.packages
        from npudoctor.facts.system import PackagesFacts

        want = {_canonical(name) for name in names}
        subset = {key: recs for key, recs in installed.items() if isinstance(key, str) and _canonical(key) in want}
        return load(PackagesFacts, {"installed": subset})[0]

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
    def tunables(self) -> TunablesFacts:
        return self._view("tunables")  # type: ignore[no-any-return]

    @property
    def host_limits(self) -> HostLimitsFacts:
        return self._view("host_limits")  # type: ignore[no-any-return]

    @property
    def numa(self) -> NumaFacts:
        return self._view("numa")  # type: ignore[no-any-return]

    @property
    def frameworks(self) -> FrameworksFacts:
        return self._view("frameworks")  # type: ignore[no-any-return]

    @property
    def deep(self) -> DeepFacts:
        return self._view("deep")  # type: ignore[no-any-return]

    @property
    def access(self) -> AccessFacts:
        """``access``: the paths this process was refused while probing (absent: none)."""
        return self._view("access")  # type: ignore[no-any-return]

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
