"""The compatibility matrix in memory: :class:`Matrix`, its rows and the queries rules use."""

from __future__ import annotations

import re
from functools import cached_property
from typing import TYPE_CHECKING

from npudoctor.knowledge.grades import Grade, Verdict
from npudoctor.knowledge.matrix import verdicts as _verdicts
from npudoctor.knowledge.matrix.hdk import DriverVerdict, HdkJudge, Packages
from npudoctor.knowledge.matrix.model import (
    CannFloor,
    Chip,
    DriverRequirement,
    Family,
    TorchNpuRow,
    _cann_in,
    _hdk_norm,
    _hdk_sort_key,
    _newest_first,
    _torch_npu_row,
    _unique_hdk,
    _valid_date,
)
from npudoctor.knowledge.versions import parse_cann, pep440_public, same_cann, tokens
from npudoctor.record import replace

if TYPE_CHECKING:
    import datetime as _dt
    from typing import Any, Callable, Dict, List, Optional, Set, Tuple


# ------------------------------------------------------------------ the matrix
class Matrix:
    """Rows of the compatibility matrix, their provenance, and the queries rules use.

    ``data`` is the merged matrix document (``schema_version``, ``metas`` and every table);
    ``provenance`` is ``{source, retrieved, sha256, origin ("bundled"|"cache"|"file"),
    files, sources}``.
    """

    def __init__(self, data: Dict[str, Any], provenance: Dict[str, Any]) -> None:
        self.data = data
        self.provenance = provenance
        self._cann_lines: Optional[Set[Tuple[int, int]]] = None

    def table(self, name: str) -> List[Dict[str, Any]]:
        """The rows of table ``name`` (``"torch_npu"``, ``"cann"``, ``"chip"``, ``"metas"``...);
        ``[]`` when the matrix has no such table."""
        value = self.data.get(name)
        return value if isinstance(value, list) else []

    @cached_property
    def torch_npu_rows(self) -> List[TorchNpuRow]:
        """The ``[[torch_npu]]`` rows, typed."""
        return [_torch_npu_row(r) for r in self.table("torch_npu")]

    @cached_property
    def cann_rows(self) -> List[Dict[str, Any]]:
        """The ``[[cann]]`` rows."""
        return list(self.table("cann"))

    @cached_property
    def families(self) -> Dict[str, Family]:
        """The ``[[family]]`` rows by family name."""
        out: Dict[str, Family] = {}
        for r in self.table("family"):
            fam = Family(
                family=r["family"],
                label=r["label"],
                bf16=bool(r["bf16"]),
                kernels_dir=r["kernels_dir"],
                package_chip=r["package_chip"],
                kernels_package=r.get("kernels_package", ""),
                ops_package=r.get("ops_package", ""),
                supported=r["supported"],
                since_torch_npu=list(r.get("since_torch_npu", [])),
                since_ext=r.get("since_ext", ""),
                note=r.get("note", ""),
                source=r.get("source", ""),
                product_line=r.get("product_line", ""),
                product_line_source=r.get("product_line_source", ""),
                products=r.get("products", ""),
            )
            out[fam.family] = fam
        return out

    @cached_property
    def chips(self) -> List[Chip]:
        """The ``[[chip]]`` rows, with their family's bf16, kernels directory and note."""
        out: List[Chip] = []
        for r in self.table("chip"):
            family = self.families.get(r["family"])
            out.append(
                Chip(
                    name=r["name"],
                    soc_version=r["soc_version"] or None,
                    family=r["family"],
                    bf16=family.bf16 if family else False,
                    kernels_dir=family.kernels_dir if family else "",
                    kernels_package_chip=family.package_chip if family else "",
                    note=r.get("note", "") or (family.note if family else ""),
                    source=r.get("source", ""),
                    product_line=r.get("product_line", "") or (family.product_line if family else ""),
                    product_line_source=r.get("product_line_source", "")
                    or (family.product_line_source if family else ""),
                )
            )
        return out

    @cached_property
    def cann_floors(self) -> List[CannFloor]:
        """The ``[[cann_floor]]`` rows: the first CANN release of each product line."""
        return [
            CannFloor(
                family=r["family"],
                chips=tuple(r.get("chips", [])),
                product=r["product"],
                cann=r["cann"],
                statement=r["statement"],
                chips_inferred=bool(r.get("chips_inferred", False)),
                note=r.get("note", ""),
                source=r.get("source", ""),
                retrieved=r.get("retrieved", ""),
            )
            for r in self.table("cann_floor")
        ]

    def floors_for(self, chip: Chip) -> List[CannFloor]:
        """The CANN floors that apply to ``chip`` (:meth:`CannFloor.covers`), in data order."""
        return [f for f in self.cann_floors if f.covers(chip)]

    @cached_property
    def _deps(self) -> List[Dict[str, Any]]:
        return list(self.table("python_dep"))

    # ---- compatibility with the bootstrap API
    @property
    def torch_npu(self) -> List[Dict[str, Any]]:
        """The raw ``[[torch_npu]]`` tables."""
        return list(self.table("torch_npu"))

    # ---- provenance
    def age_days(self, today: Optional[_dt.date] = None) -> Optional[int]:
        """Days from the newest ``retrieved`` date to ``today`` (default: today);
        ``None`` when no date is recorded."""
        ret = self.provenance.get("retrieved")
        if not isinstance(ret, str) or not _valid_date(ret):
            return None
        import datetime as _dt  # here, not on every start: only a date to age needs it

        today = today or _dt.date.today()
        return (today - _dt.date.fromisoformat(ret)).days

    # ---- torch_npu queries
    def find_torch_npu(self, version: str) -> Optional[TorchNpuRow]:
        """The row of this exact torch_npu version (PEP 440 normalised: ``2.1.0rc1`` ==
        ``2.1.0.rc1``; a local tag ``+git…`` is ignored), or ``None``."""
        want = pep440_public(version)
        if want is None:
            return None
        for row in self.torch_npu_rows:
            if row.version == want:
                return row
        return None

    def rows_for_torch(self, torch_version: str) -> List[TorchNpuRow]:
        """Rows whose torch is ``torch_version`` (``2.1.0+cpu`` matches ``2.1.0``), newest first."""
        want = pep440_public(torch_version)
        if want is None:
            return []
        return _newest_first([r for r in self.torch_npu_rows if pep440_public(r.torch) == want])

    def rows_for_cann(self, cann: str) -> List[TorchNpuRow]:
        """Rows whose official pairing (the mapping table's CANN column) is ``cann``,
        newest first.  ``8.0.0`` -> 2.4.0.post2, 2.3.1.post4, 2.1.0.post10."""
        return _newest_first([r for r in self.torch_npu_rows if r.cann and _cann_in(cann, r.cann)])

    def cann_fit(self, row: TorchNpuRow, cann: str) -> str:
        """How ``cann`` fits ``row``, in the words of the older API: ``"paired"`` (the
        official pairing), ``"compatible"`` (declared compatible, or the same release line
        of an official build), ``"incompatible"`` (documented incompatible: older than every
        declared CANN, or far outside every documented window) or ``"unknown"`` (not
        documented either way).  The graded form is :meth:`cann_verdict`."""
        grade = self.cann_verdict(row.torch_npu, cann).grade
        if grade is Grade.PAIRED:
            return "paired"
        if grade in (Grade.DECLARED, Grade.SAME_LINE):
            return "compatible"
        if grade in (Grade.INCOMPATIBLE, Grade.BROKEN):
            return "incompatible"
        return "unknown"

    def known_cann_lines(self) -> Set[Tuple[int, int]]:
        """The CANN X.Y lines the matrix knows (``[[cann]]`` rows and every CANN a torch_npu
        row names): the scale of "CANN lines beyond" (AUDIT §7 (a))."""
        if self._cann_lines is not None:
            return self._cann_lines
        out: Set[Tuple[int, int]] = set()
        texts = [str(r.get("version", "")) for r in self.cann_rows]
        texts += [c for r in self.torch_npu_rows for c in list(r.cann) + list(r.cann_compatible)]
        for t in texts:
            parts = tokens(t)
            if len(parts) >= 2 and parts[0].isdecimal() and parts[1].isdecimal():
                out.add((int(parts[0]), int(parts[1])))
        self._cann_lines = out
        return out

    def cann_verdict(self, torch_npu: str, cann: str, torch: Optional[str] = None) -> Verdict:
        """The graded verdict of installed torch_npu ``torch_npu`` on CANN ``cann``
        (:func:`.verdicts.torch_npu_cann`): paired, declared compatible (wildcards such as
        ``8.5.X``), same release line (maintenance/alpha/beta/hotfix of a listed CANN; a
        tag-built ``.postN`` inheriting its line; rc/dev/``+git`` builds, unofficial),
        undocumented or documented incompatible.  ``torch``: the installed torch, to name a
        build for it first in ``recommend``.  Never raises."""
        tags: List[Dict[str, Any]] = list(self.table("release_tag"))
        statement = _verdicts.line_statement(self.torch_npu_rows, tags, torch_npu)
        if torch is None and statement is not None and statement.row is not None:
            torch = statement.row.torch
        builds = _verdicts.paired_builds(self.torch_npu_rows, cann, torch, exclude=torch_npu)
        return _verdicts.torch_npu_cann(statement, cann, self.known_cann_lines(), builds, torch)

    def python_verdict(self, torch_npu: str, python: str, platform: Optional[str] = None) -> Verdict:
        """Whether torch_npu ``torch_npu`` has a wheel for CPython ``python`` on ``platform``
        (:func:`.verdicts.python_wheels`; PyPI wheel list, else the documented Pythons)."""
        row = self.find_torch_npu(_verdicts.split_build(torch_npu)[0])
        others: List[TorchNpuRow] = []
        if row is not None:
            others = [r for r in self.fits(python=python, platform=platform) if r.on_pypi]
            same = [r for r in others if pep440_public(r.torch) == pep440_public(row.torch)]
            others = same + [r for r in others if r not in same]
        return _verdicts.python_wheels(row, python, platform, others)

    def numpy_verdict(self, numpy: str, cann: str, python: str) -> Optional[Verdict]:
        """How installed ``numpy`` fits CANN ``cann`` on Python ``python``
        (:func:`.verdicts.numpy_cann`, ranges from the ``[[cann]]`` numpy fields), or
        ``None`` when no CANN row documents numpy."""
        req = self.numpy_requirement(cann, python)
        if req is None:
            return None
        spec, source, exact = req
        row = self.cann_row(cann) if exact else None
        tested = str((row or {}).get("numpy_tested_max") or "")
        if not tested:
            m = re.match(r"^\s*numpy\s+[0-9.]+\s*-\s*([0-9.]+)\s*(?:\(|$)", str((row or {}).get("numpy_doc", "")))
            tested = m.group(1) if m else ""
        return _verdicts.numpy_cann(numpy, spec, source, exact, tested, cann)

    def fits(
        self,
        torch: Optional[str] = None,
        python: Optional[str] = None,
        platform: Optional[str] = None,
        cann: Optional[str] = None,
    ) -> List[TorchNpuRow]:
        """torch_npu rows that fit all given constraints, newest first.  Pre-release
        rows are left out.  ``python`` ("3.10") is checked against the PyPI wheels of
        ``platform`` (``aarch64``/``x86_64``; any platform if ``None``), falling back to
        the documented Python versions for builds that are not on PyPI.  ``cann`` must be
        ``paired`` or ``compatible`` (:meth:`cann_fit`)."""
        rows = [r for r in self.torch_npu_rows if r.status != "prerelease"]
        if torch:
            want = pep440_public(torch)
            rows = [r for r in rows if pep440_public(r.torch) == want]
        if python:
            py = ".".join(python.strip().split(".")[:2])
            rows = [r for r in rows if py in r.pythons(platform)]
        elif platform:
            rows = [r for r in rows if not r.on_pypi or r.python.get(platform)]
        if cann:
            rows = [r for r in rows if self._fits_cann(r, cann)]
        return _newest_first(rows)

    def _fits_cann(self, row: TorchNpuRow, cann: str) -> bool:
        """Whether a build to propose fits ``cann``: paired, declared compatible, or the same
        release line by the row's own CANN statement (a build whose line is only inferred,
        such as an unmapped PyPI build, is never proposed)."""
        grade = self.cann_verdict(row.torch_npu, cann).grade
        if grade in (Grade.PAIRED, Grade.DECLARED):
            return True
        return grade is Grade.SAME_LINE and bool(row.cann or row.cann_compatible)

    def torch_line(self, torch: str) -> Optional[Dict[str, Any]]:
        """The ``[[torch_line]]`` row (lifecycle, documented Python) of a PyTorch version."""
        want = pep440_public(torch)
        lines: List[Dict[str, Any]] = self.table("torch_line")
        for r in lines:
            if pep440_public(r.get("torch", "")) == want:
                return r
        return None

    def support(self, row: TorchNpuRow, today: Optional[_dt.date] = None) -> Dict[str, Any]:
        """Lifecycle of a torch_npu row's PyTorch line as of ``today`` (default: the
        later of today and the matrix's ``retrieved`` date, so a stale clock does not
        revive a line the sources already called EOL).

        Returns ``{"state": "eol"|"maintenance"|"development"|"planned"|"unknown",
        "since": date or None, "next": "EOL from 2027-01-25" or None, "text": "EOL since
        2025-12-30", "conflict": note or None, "source": ...}``.  ``state`` differs from
        ``row.status`` (whether the mapping table lists the row): 2.1.0.post10 is an
        ``active`` row of a line that is EOL since 2025-12-30.  Source: the row's ``eol``
        and the ``[[torch_line]]`` rows (Ascend/pytorch SUPPORT.md: status, EOL date,
        ``next_state`` "maintenance from D" / "EOL from D")."""
        import datetime as _dt

        ref = today or _dt.date.today()
        retrieved = self.provenance.get("retrieved")
        if today is None and isinstance(retrieved, str) and _valid_date(retrieved):
            ref = max(ref, _dt.date.fromisoformat(retrieved))
        line = self.torch_line(row.torch) or {}
        status = str(line.get("status") or "")
        eol = row.eol or line.get("eol")
        nxt = str(line.get("next_state") or "")
        m = re.match(r"^\s*(eol|maintenance)\s+from\s+([0-9]{4}-[0-9]{2}-[0-9]{2})\s*$", nxt, re.I)
        next_state, next_date = (m.group(1).lower(), m.group(2)) if m and _valid_date(m.group(2)) else (None, None)

        def passed(date: Any) -> bool:
            return isinstance(date, str) and _valid_date(date) and _dt.date.fromisoformat(date) <= ref

        out: Dict[str, Any] = {
            "state": "unknown",
            "since": None,
            "next": nxt or None,
            "conflict": line.get("conflict") or None,
            "source": line.get("source") or row.source,
        }
        if status == "eol" or passed(eol) or (next_state == "eol" and passed(next_date)):
            when = eol if isinstance(eol, str) and _valid_date(eol) else (next_date if next_state == "eol" else None)
            out.update(state="eol", since=when, next=None, text=f"EOL since {when}" if when else "EOL")
        elif status == "maintenance" or (next_state == "maintenance" and passed(next_date)):
            since = next_date if next_state == "maintenance" else line.get("released")
            out["state"] = "maintenance"
            out["since"] = since if status != "maintenance" else None
            eol_next = next_date if next_state == "eol" else (eol if isinstance(eol, str) else None)
            out["next"] = f"EOL from {eol_next}" if eol_next else None
            out["text"] = (f"maintenance since {since}" if status != "maintenance" else "maintenance") + (
                f", EOL from {eol_next}" if eol_next else ""
            )
        elif status in ("development", "planned"):
            # by date: a line released by now is in development (SUPPORT.md's state after a
            # release) whatever word was stored; one not released yet is planned
            released = line.get("released")
            if passed(released):
                out.update(state="development", since=released)
                out["text"] = f"development since {released}" + (f", {nxt}" if nxt else "")
            else:
                out["state"] = "planned" if status == "planned" or released else status
                out["text"] = out["state"] + (f", release {released}" if released else "") + (f", {nxt}" if nxt else "")
        elif isinstance(eol, str) and _valid_date(eol):
            out["next"] = f"EOL from {eol}"
            out["text"] = f"EOL from {eol}"
        else:
            out["text"] = "-"
        if out["conflict"]:
            out["text"] += " (sources disagree)"
        return out

    def ext_version_of(self, torch_npu: str) -> Optional[str]:
        """The extension (TorchNPU product) version that built ``torch_npu``, from its
        row or from the release tags (``2.1.0.post14`` -> ``7.1.0.1``)."""
        row = self.find_torch_npu(torch_npu)
        if row and row.ext_version:
            return row.ext_version
        want = pep440_public(torch_npu)
        for t in self.table("release_tag"):
            if want is not None and pep440_public(t.get("torch_npu", "")) == want and t.get("ext_version"):
                return str(t["ext_version"])
        return None

    # ---- CANN queries
    def cann_row(self, cann: str) -> Optional[Dict[str, Any]]:
        """The ``[[cann]]`` row of this CANN release (community ``.beta1`` re-releases of
        CANN <= 8.0 map to their commercial release), or ``None``."""
        for r in self.cann_rows:
            if same_cann(cann, r.get("version", "")):
                return r
        return None

    def driver_requirement(self, cann: str) -> Optional[DriverRequirement]:
        """The driver (Ascend HDK) requirement of a CANN version — its own row's statements,
        else its release line's (``8.2.RC2`` → ``8.2.RC1``) — ``None`` when the matrix has
        none.  ``compatible`` includes the Y columns of the release notes' grid.  Source per
        row (CANN release notes, MindSpore pages)."""
        r = HdkJudge(self).statement_row(cann)[0]
        if r is None:
            return None
        paired = _unique_hdk(r.get("hdk_paired", []))
        taken = {_hdk_norm(p) for p in paired}
        listed = list(r.get("hdk_compatible", [])) + [c for c, cell in (r.get("hdk_grid") or {}).items() if cell == "Y"]
        compatible = sorted(
            (c for c in _unique_hdk(listed) if _hdk_norm(c) not in taken),
            key=_hdk_sort_key,
            reverse=True,
        )
        return DriverRequirement(
            cann=r["version"],
            paired=paired,
            compatible=compatible,
            minimum=r.get("hdk_minimum") or None,
            source=r.get("source", ""),
            note=r.get("note", ""),
        )

    def driver_verdict(
        self,
        cann: str,
        driver: str,
        packages: Packages = Packages(),
        family: Optional[str] = None,
        chip: Optional[str] = None,
    ) -> DriverVerdict:
        """The graded CANN ↔ driver verdict (:class:`~npudoctor.knowledge.matrix.hdk.HdkJudge`):
        the packages' own declarations, the release notes' grids and lists, documented floors,
        then the tables; ``family`` is the chip family (``"910B"``, ``"950"``) or ``None``."""
        return HdkJudge(self).verdict(cann, driver, packages, family=family, chip=chip)

    def driver_fit(self, cann: str, driver: str) -> str:
        """How an installed driver version fits a CANN version, from :meth:`driver_verdict`
        without package files or product line:

        * ``"paired"``: the paired HDK, or a patch build of it (same release line);
        * ``"compatible"``: declared compatible (release-note grid or list, another official
          statement, a tested install combination);
        * ``"too-old"``: documented incompatible and older (an explicit N, a documented floor,
          more than about a year older than every documented HDK);
        * ``"incompatible"``: documented incompatible otherwise;
        * ``"unknown"``: not documented either way.
        """
        v = self.driver_verdict(cann, driver).verdict
        if v.grade in (Grade.PAIRED, Grade.SAME_LINE):
            return "paired"
        if v.grade is Grade.DECLARED:
            return "compatible"
        if v.grade in (Grade.INCOMPATIBLE, Grade.BROKEN):
            return "too-old" if v.newer is False else "incompatible"
        return "unknown"

    def _row_stating(
        self, cann: str, states: Callable[[Dict[str, Any]], bool], same_line: bool
    ) -> Tuple[Optional[Dict[str, Any]], bool]:
        """``(row, exact)``: the CANN row whose field ``states`` what CANN ``cann`` needs --
        its own row, or for an alpha/beta/hotfix without one its release's (``exact``
        True); else the newest row before it that states it (``same_line``: of its X.Y
        release line only), ``exact`` False; ``(None, False)`` when none does."""
        v = parse_cann(cann)
        if v is None:
            return None, False
        own = self.cann_row(cann)
        if own is not None and states(own):
            return own, True
        if v.release != v.text:  # an alpha/beta/hotfix without a statement of its own
            rel = self.cann_row(".".join(v.release.split(".")[:3]))
            if rel is not None and states(rel):
                return rel, True
        best: Optional[Dict[str, Any]] = None
        for r in self.cann_rows:
            rv = parse_cann(r.get("version", ""))
            if not states(r) or rv is None or (same_line and rv.base != v.base) or rv.compare(v) not in (-1, 0):
                continue
            if best is None or parse_cann(best["version"]).compare(rv) == -1:  # type: ignore[union-attr]
                best = r
        return best, False

    def numpy_requirement(self, cann: str, python: str) -> Optional[Tuple[str, str, bool]]:
        """``(spec, source, exact)`` of the numpy range CANN's Python components need
        with this Python: from the CANN's own row or, for an alpha/beta/hotfix without a
        row of its own, its release's row (``exact`` True); else from the newest
        documented CANN release before it (``exact`` False).  ``None`` when no
        documented row applies (unknown or internal CANN build older than all rows)."""
        from packaging.specifiers import SpecifierSet

        row, exact = self._row_stating(cann, lambda r: bool(r.get("numpy")), same_line=False)
        if row is None:
            return None
        py = ".".join(python.strip().split(".")[:2]) if python else ""
        for entry in row.get("numpy", []):
            if not py or py in SpecifierSet(entry["python"]):
                return entry["spec"], f"CANN {row['version']}: {row.get('source', '')}", exact
        return None

    def numpy_spec(self, cann: str, python: str) -> Optional[str]:
        """pip specifier for numpy that this CANN needs with this Python, e.g.
        ``">=1.19.2,<2"`` (CANN 8.0.0), ``">2.1"`` (CANN 8.5.0 + Python 3.13),
        ``">=1.19.2"`` (9.x, no upper bound); ``None`` when undocumented.  Source: the CANN
        install guides."""
        req = self.numpy_requirement(cann, python)
        return req[0] if req else None

    def protobuf_requirement(self, cann: str) -> Optional[Tuple[str, str, str]]:
        """``(spec, row, source)`` of the protobuf CANN ``cann``'s Python components need:
        ``spec`` a pip specifier (``"==3.20.*"``), or ``""`` when the install guide lists
        protobuf without a version; ``row`` the CANN row that states it, ``source`` where it
        says so.  From the CANN's own ``protobuf`` field; for an alpha/beta/hotfix without
        one, its release's (as :meth:`numpy_requirement`); else the newest statement of its
        X.Y release line not newer than it (``8.5.1`` -> ``8.5.0``).  ``None`` when nothing
        documents it (``9.2.0``): never a guess from another release line."""
        best, _exact = self._row_stating(cann, lambda r: isinstance(r.get("protobuf"), str), same_line=True)
        if best is None:
            return None
        return str(best["protobuf"]), str(best["version"]), str(best.get("protobuf_source") or best.get("source", ""))

    def protobuf_pin(self, cann: Optional[str]) -> str:
        """The pip requirement of protobuf for CANN ``cann``: ``protobuf==3.20.*`` where its
        row (or its line's) states a version, else plain ``protobuf``
        (:meth:`protobuf_requirement`)."""
        req = self.protobuf_requirement(cann) if cann else None
        return f"protobuf{req[0]}" if req and req[0] else "protobuf"

    def cann_python_range(self, cann: str) -> Optional[str]:
        """pip-style range of CPython versions the CANN install guide supports, or None."""
        r = self.cann_row(cann)
        return (r.get("python") or None) if r else None

    def cann_python_deps(self, cann: Optional[str] = None) -> List[str]:
        """pip distribution names CANN's Python components need at runtime (required
        ones; ``pathlib2`` and other optional entries left out).  The list does not vary
        by CANN version in the documented range (6.2.RC2 … 9.1.0)."""
        return [d["dist"] for d in self._deps if not d.get("optional")]

    def python_dep_spec(self, dist: str) -> str:
        """Documented requirement of a CANN Python dependency (``">=4.4.0"``) or ``""``."""
        for d in self._deps:
            if d["dist"] == dist:
                return str(d.get("spec", ""))
        return ""

    def import_name(self, dist: str) -> str:
        """Import name of a dependency: ``absl-py`` -> ``absl``, ``pyyaml`` -> ``yaml``,
        ``protobuf`` -> ``google.protobuf``; unknown names -> dashes to underscores."""
        for d in self._deps:
            if d["dist"].lower() == dist.lower():
                return str(d["import"])
        return dist.replace("-", "_")

    # ---- chips
    def chip(self, npu_smi_name: str) -> Optional[Chip]:
        """The chip for an npu-smi Name ("910B3", "Ascend 910B3", "910B4-1", "310P3",
        "Ascend910" (A3), "910B" (legacy 910)) or a SoC name ("Ascend910B3",
        "Ascend910_9391"); ``None`` when unknown."""
        if not isinstance(npu_smi_name, str):
            return None
        raw = npu_smi_name.strip()
        squashed = re.sub(r"\s+", "", raw)
        candidates = [raw, squashed]
        if squashed.lower().startswith("ascend"):
            candidates.append(squashed[6:])
        for cand in candidates:
            for c in self.chips:
                if c.name.lower() == cand.lower() or (c.soc_version and c.soc_version.lower() == cand.lower()):
                    return c
        if squashed.lower().startswith("ascend950"):
            family950 = [c for c in self.chips if c.family == "950"]
            for c in sorted(family950, key=lambda c: len(c.name), reverse=True):
                if squashed.lower().startswith(c.name.lower()):
                    return c  # a board name of a known 950 chip ("Ascend950DT_9582")
            if family950:
                # another 950-family name: the family is known, the chip's own product is not
                fam = self.families.get("950")
                return replace(
                    family950[0],
                    name=raw,
                    product_line=fam.product_line if fam else "",
                    product_line_source=fam.product_line_source if fam else "",
                )
        return None

    def family_supported(self, family: str, torch_npu: Optional[str]) -> Optional[bool]:
        """Whether torch_npu (a package version; ``None`` = any current release) supports
        a chip family.  ``None`` when the sources conflict (legacy 310) or the family is
        unknown.  From torch_npu's README hardware tables and SoC table per branch: A3
        (``910_93``) from the 6.0.rc3 line (2.1.0.post8, 2.3.1.post2, 2.4.0 and every later
        line), 950 from 26.0.0."""
        fam = self.families.get(family)
        if fam is None:
            return None
        if fam.supported == "yes":
            return True
        if fam.supported == "no":
            return False
        if fam.supported != "since":
            return None
        if torch_npu is None:
            return True
        v = pep440_public(torch_npu)
        if v is None:
            return None
        firsts = [x for x in (pep440_public(s) for s in fam.since_torch_npu) if x is not None]
        if not firsts:
            return None
        for first in firsts:
            if first.release == v.release:
                return v >= first
        newest_line = max(f.release for f in firsts)
        return v.release > newest_line

    def newest_for(
        self, family: str, platform: Optional[str], python: Optional[str], driver: Optional[str] = None
    ) -> Optional[TorchNpuRow]:
        """The newest officially paired torch_npu row for a chip family, platform and
        Python (and, given a driver version, whose paired CANN has a driver requirement in
        the matrix that the driver does not rule out: ``driver_fit`` not
        ``too-old``/``incompatible``).  ``None`` when none fits."""
        for row in self.fits(python=python, platform=platform):
            if row.status not in ("active", "historical", "release-notes-only") or not row.cann:
                continue
            if self.family_supported(family, row.torch_npu) is not True:
                continue
            if driver and (
                self.driver_requirement(row.cann[0]) is None
                or self.driver_fit(row.cann[0], driver) in ("too-old", "incompatible")
            ):
                continue
            return row
        return None
