"""Choose one consistent install set for a site: torch_npu, torch, Python, CANN, numpy and
the CANN Python dependencies, and the driver the set needs — and explain every choice.

Inputs: a :class:`~npudoctor.plan.site.Site` (from ``npudoctor collect``), a
:class:`Request` (``--torch-npu`` exact version, ``--torch`` line, ``--cann``,
``--python``, ``--allow-driver-upgrade``), the matrix (:mod:`npudoctor.knowledge.matrix`: rows of the
official torch_npu ↔ torch ↔ CANN tables, CANN ↔ driver requirements, chips, numpy
bounds) and a :class:`~npudoctor.plan.wheels.WheelCatalog` (which wheels exist).

Every matrix row is judged as a candidate: a list of *problems* (no wheel for this
Python/arch, glibc too old, chip not supported, no CANN the driver accepts, ...).  The
first candidate without problems, newest first, is the plan; when none fits,
:class:`Resolution` carries the reasons for the asked-for rows and the nearest sets that
do fit.  Facts come from the matrix (each row with its official source) and PyPI's torch_npu wheels.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from npudoctor.knowledge.versions import cann_key, canonical_version, pep440_key, python_key
from npudoctor.plan.fit import hdk_for
from npudoctor.plan.model import (
    _STATUS_RANK,
    PLAIN_TORCH_FROM,
    TORCH_CPU_INDEX,
    TORCH_NPU_EXTRA,
    Candidate,
    DriverStep,
    Plan,
    PlanError,
    Request,
    Resolution,
    hdk_versions,
    torch_requirement,
)
from npudoctor.plan.site import Site
from npudoctor.plan.wheels import WheelCatalog, describe_pythons

#: The planner's data types live in :mod:`npudoctor.plan.model`; imported here by their users.
__all__ = [
    "PLAIN_TORCH_FROM",
    "TORCH_CPU_INDEX",
    "TORCH_NPU_EXTRA",
    "Candidate",
    "DriverStep",
    "Plan",
    "PlanError",
    "Request",
    "Resolution",
    "Resolver",
    "hdk_versions",
    "resolve",
    "torch_requirement",
]


# --------------------------------------------------------------------------- helpers


def _known_canns(matrix: Any) -> List[str]:
    """Concrete CANN versions the matrix names (paired columns), newest first."""
    seen: Dict[str, None] = {}
    for row in matrix.torch_npu_rows:
        for c in row.cann or []:
            seen.setdefault(c, None)
    return sorted(seen, key=cann_key, reverse=True)


class Resolver:
    """Judges matrix rows for one site and request."""

    def __init__(self, site: Site, request: Request, matrix: Any, catalog: Optional[WheelCatalog] = None) -> None:
        self.site = site
        self.request = request
        self.matrix = matrix
        self.catalog = catalog or WheelCatalog.from_matrix(matrix)
        self.canns = _known_canns(matrix)
        self.assumptions: List[str] = []
        if not site.arch:
            raise PlanError(
                "the snapshot tells no CPU architecture (no host.arch, python.machine, cann.selected.arch or "
                "cann.toolkits arch); cannot choose wheels (re-run `npudoctor collect` on the site)"
            )
        if site.arch not in ("aarch64", "x86_64"):
            raise PlanError(f"torch_npu wheels exist for aarch64 and x86_64 only; the site is {site.arch}")
        self.arch: str = site.arch
        python = request.python or site.python
        if request.python:
            from npudoctor.plan.site import python_xy

            if python_xy(request.python) != request.python.strip():
                raise PlanError(f"--python {request.python}: give MAJOR.MINOR, e.g. 3.10")
        if not python:
            raise PlanError("the snapshot has no python.version; give --python X.Y")
        self.python: str = python
        chip = site.chip
        self.chip_name = chip.name if chip else None
        self.family = chip.family if chip else None
        self.chip_info = None
        if chip is not None:
            try:
                self.chip_info = matrix.chip(chip.name)
            except Exception:
                self.chip_info = None
            if self.chip_info is not None and not self.family:
                self.family = self.chip_info.family

    # ---------------------------------------------------------------- rows
    def rows(self) -> List[Any]:
        """Matrix rows ordered newest first (status breaks ties)."""
        rows = list(self.matrix.torch_npu_rows)
        rows.sort(
            key=lambda r: (bool(r.cann), pep440_key(canonical_version(r.torch_npu)), -_STATUS_RANK.get(r.status, 5)),
            reverse=True,
        )
        return rows

    def driver_step(self, cann: str) -> DriverStep:
        req = None
        try:
            req = self.matrix.driver_requirement(cann)
        except Exception:
            req = None
        tested = [
            str(r.get("driver"))
            for r in self.matrix.table("install_pairing")
            if r.get("driver") and str(r.get("cann", "")) == cann
        ]
        required = hdk_versions(list(req.paired or []), list(req.compatible or []) + tested) if req is not None else []
        source = req.source if req is not None else ""
        installed = self.site.driver
        if not installed:
            return DriverStep(None, "unknown", "check", required=required, source=source)
        fit = self.matrix.driver_fit(cann, installed)
        if fit in ("paired", "compatible"):
            return DriverStep(installed, fit, "keep", required=required, source=source)
        if fit == "unknown" and self.matrix.driver_verdict(cann, installed).verdict.newer is not False:
            return DriverStep(installed, fit, "check", required=required, source=source)
        # incompatible, or older than every documented HDK: a plan recommends documented sets (hdk_for)
        target = hdk_for(self.matrix, cann)
        return DriverStep(installed, fit, "upgrade", target=target, required=required, source=source)

    @staticmethod
    def _driver_words(step: DriverStep) -> str:
        """How the installed driver relates to the HDKs the CANN needs, in words: the fit
        (too-old, incompatible...), and "older than every HDK documented for it" when it is
        (never "unknown" for a driver older than all of them)."""
        from npudoctor.knowledge.matrix.model import _hdk_sort_key

        have = _hdk_sort_key(step.installed or "")
        known = [r for r in step.required if _hdk_sort_key(r)[0]]
        if have[0] and known and all(have < _hdk_sort_key(r) for r in known):
            oldest = min(known, key=_hdk_sort_key)
            words = f"older than every HDK documented for it, the oldest {oldest}"
            return words if step.fit == "unknown" else f"{step.fit}: {words}"
        return step.fit

    def cann_options(self, row: Any) -> List[Tuple[str, str]]:
        """(CANN, fit) choices for ``row`` in preference order: the asked one; the
        installed one if the row accepts it; the officially paired ones; then concrete
        versions the row's line is declared compatible with, newest first."""
        fits = ("paired", "compatible")
        if self.request.cann:
            fit = self.matrix.cann_fit(row, self.request.cann)
            return [(self.request.cann, fit)] if fit in fits else []
        out: List[Tuple[str, str]] = []
        if self.site.cann:
            fit = self.matrix.cann_fit(row, self.site.cann)
            if fit in fits:
                out.append((self.site.cann, fit))
        for c in row.cann or []:
            out.append((c, "paired"))
        for c in self.canns:
            fit = self.matrix.cann_fit(row, c)
            if fit == "compatible":
                out.append((c, fit))
        seen = set()
        uniq = []
        for c, f in out:
            if c not in seen:
                seen.add(c)
                uniq.append((c, f))
        return uniq

    def judge(self, row: Any, python: Optional[str] = None) -> Candidate:
        """Judge one row for ``python`` (default: the request's / site's)."""
        py = python or self.python
        cand = Candidate(row=row, python=py)
        arch = self.arch
        version = row.torch_npu
        # wheels
        if not self.catalog.known(version):
            cand.problems.append(f"torch_npu {version} has no wheel on PyPI ({self.catalog.source})")
        else:
            pythons = self.catalog.pythons(version, arch)
            wheel = self.catalog.wheel(version, py, arch)
            if wheel is None:
                cand.problems.append(
                    f"torch_npu {version} has no cp{py.replace('.', '')} wheel for {arch} "
                    f"(its {arch} wheels: {describe_pythons(pythons)})"
                )
            elif wheel.min_glibc and self.site.glibc:
                from npudoctor.plan.wheels import parse_glibc

                have = parse_glibc(self.site.glibc)
                if have is not None and have < wheel.min_glibc:
                    cand.problems.append(
                        f"the torch_npu {version} wheel for {arch} is built for glibc ≥ {wheel.glibc_text} "
                        f"({wheel.filename.split('-')[-1][:-4]}); the site has glibc {self.site.glibc}"
                    )
        # chip
        if self.family:
            try:
                supported = self.matrix.family_supported(self.family, version)
            except Exception:
                supported = None
            if supported is False:
                cand.problems.append(
                    f"torch_npu {version} does not support {self.chip_name} chips ({self.family} family)"
                )
        # status
        if row.status == "prerelease" and canonical_version(self.request.torch_npu or "") != canonical_version(version):
            cand.problems.append(f"torch_npu {version} is a pre-release (ask for it with --torch-npu {version})")
        # CANN + driver
        options = self.cann_options(row)
        if not options:
            if self.request.cann:
                cand.problems.append(
                    f"torch_npu {version} is not paired with or declared compatible with CANN {self.request.cann} "
                    f"(paired: {', '.join(row.cann) or 'undocumented'})"
                )
            else:
                cand.problems.append(f"the CANN that torch_npu {version} was built for is not documented")
            return cand
        refused = []
        for cann, fit in options:
            step = self.driver_step(cann)
            if step.action == "upgrade":
                refused.append((cann, fit, step))
                continue
            cand.cann, cand.cann_fit, cand.driver = cann, fit, step
            break
        if cand.cann is None and self.request.allow_driver_upgrade:
            # no CANN works with the installed driver: take the preferred one, upgrading
            cand.cann, cand.cann_fit, cand.driver = refused[0]
        elif cand.cann is None:
            cann, _fit, step = refused[0]
            need = ", ".join(step.required) or step.target or "a newer driver"
            cand.cann = cann
            cand.problems.append(
                f"CANN {cann} (for torch_npu {version}) needs driver {need}; the site has {step.installed} "
                f"({self._driver_words(step)}); a driver upgrade is refused without --allow-driver-upgrade"
            )
        return cand

    # ---------------------------------------------------------------- resolve
    def selected_rows(self) -> Tuple[List[Any], Optional[str]]:
        """Rows the request allows, and a reason when the request names nothing known."""
        rows = self.rows()
        if not self.request.torch_npu:  # pre-releases only when asked for by exact version
            rows = [r for r in rows if r.status != "prerelease"]
        if self.request.torch_npu:
            want = canonical_version(self.request.torch_npu)
            rows = [r for r in rows if canonical_version(r.torch_npu) == want]
            if not rows:
                return [], f"torch_npu {self.request.torch_npu} is not in the compatibility matrix"
        if self.request.torch:
            want_t = canonical_version(self.request.torch)
            rows = [r for r in rows if canonical_version(r.torch) == want_t]
            if not rows:
                return [], f"no torch_npu build for torch {self.request.torch} is in the compatibility matrix"
        if self.request.cann:
            from npudoctor.knowledge.versions import parse_cann

            if parse_cann(self.request.cann) is None:
                raise PlanError(f"--cann {self.request.cann}: not a CANN version (e.g. 8.0.0, 8.0.RC3, 9.1.0)")
            rows = [r for r in rows if self.matrix.cann_fit(r, self.request.cann) in ("paired", "compatible")]
            if not rows:
                return (
                    [],
                    f"no torch_npu build in the matrix is paired with or declared compatible with CANN {self.request.cann}",
                )
        return rows, None

    def resolve(self) -> Resolution:
        res = Resolution(self.request, self.site)
        rows, why_none = self.selected_rows()
        judged = [self.judge(r) for r in rows]
        pool, note = self._pool(judged)
        if self.request.cann and not self.request.torch_npu:
            pool = self._by_pairing(pool, self.request.cann)
            chosen = next((c for c in pool if c.ok), None)
        else:
            chosen = self._prefer_paired(pool)
        if chosen is None:
            if why_none:
                res.reasons.append(why_none)
            # reasons: the problems of the asked-for rows (the newest few)
            for cand in judged[:3]:
                res.reasons.append("; ".join(cand.problems))
            if len(judged) > 3:
                res.reasons.append(f"... and {len(judged) - 3} older builds for the same request do not fit either")
            if not rows and not why_none:
                res.reasons.append("no torch_npu build matches the request")
            res.alternatives = self.alternatives(rows)
            return res
        for cand in pool:
            if cand is chosen:
                break
            if cand.problems and len(res.rejected) < 5:
                res.rejected.append(f"not torch_npu {cand.row.torch_npu}: {cand.problems[0]}")
        res.plan = self.build_plan(chosen, res)
        if note:
            res.plan.reasons.insert(0, note)
        return res

    def _site_line(self) -> Optional[str]:
        """The torch line installed on the site, when no target was asked and not --newest."""
        if self.request.targeted or self.request.newest:
            return None
        torch = self.site.packages.get("torch")
        return canonical_version(torch) if torch else None

    def _pool(self, judged: List[Candidate]) -> Tuple[List[Candidate], str]:
        """The candidates to choose from (newest first) and why: with no target the site's
        own torch line when a build of it fits (moving forward only with --newest or when
        no build of that line fits the site, saying why); else every judged row."""
        line = self._site_line()
        if line is None:
            return judged, ""
        same = [c for c in judged if canonical_version(c.row.torch) == line]
        installed = f"torch {self.site.packages.get('torch')}"
        if self.site.packages.get("torch-npu"):
            installed += f", torch_npu {self.site.packages['torch-npu']}"
        if any(c.ok for c in same):
            return same, f"torch {line} line kept: the site's ({installed}); --newest plans the newest set"
        if same:
            why = "; ".join(same[0].problems) or "no build of it fits"
        else:
            why = f"no torch_npu build for torch {line} is in the compatibility matrix"
        return judged, f"moving off the site's torch {line} line ({installed}): {why}"

    def _torch_line(self) -> Optional[str]:
        """The torch line installed on the site (whatever was asked), or None."""
        torch = self.site.packages.get("torch")
        return canonical_version(torch) if torch else None

    def _pairing(self, cand: Candidate, cann: str) -> Tuple[int, bool]:
        """How ``cand``'s row holds CANN ``cann``, best first: 0 officially paired with it;
        1 paired with another release of its X.Y line (8.2.RC1 for 8.2.RC2); 2 only declared
        compatible.  And whether the row is of the site's own torch line."""
        from npudoctor.knowledge.versions import parse_cann

        row = cand.row
        same_line = canonical_version(row.torch) == self._torch_line()
        if any(c == cann for c in row.cann or []):
            return 0, same_line
        want = parse_cann(cann)
        paired = [parse_cann(c) for c in row.cann or []]
        if want is not None and any(p is not None and p.base == want.base for p in paired):
            return 1, same_line
        return 2, same_line

    def _by_pairing(self, pool: List[Candidate], cann: str) -> List[Candidate]:
        """``pool`` in the order a ``--cann`` request chooses from: builds officially paired
        with that CANN first, then those paired with its release line, then those only
        declared compatible; within each, the site's own torch line first, then newest
        first (the pool's order)."""
        order = {id(c): n for n, c in enumerate(pool)}

        def key(c: Candidate) -> Tuple[int, bool, int]:
            tier, own = self._pairing(c, cann)
            return tier, not own, order[id(c)]

        return sorted(pool, key=key)

    @staticmethod
    def _prefer_paired(pool: List[Candidate]) -> Optional[Candidate]:
        """The first fitting candidate, or a build of the same torch line officially paired
        with its CANN when the first is only declared compatible (official pairings first)."""
        first = next((c for c in pool if c.ok), None)
        if first is None or first.cann_fit == "paired":
            return first
        line = canonical_version(first.row.torch)
        paired = (c for c in pool if c.ok and c.cann_fit == "paired" and canonical_version(c.row.torch) == line)
        return next(paired, first)

    def _variant(self, request: Request) -> Resolver:
        other = Resolver.__new__(Resolver)
        other.__dict__.update(self.__dict__)
        other.request = request
        other.python = request.python or self.site.python or self.python
        return other

    def alternatives(self, asked: List[Any], limit: int = 5) -> List[str]:
        """Nearest sets that fit, each with what changes: other builds of the asked torch
        line; the asked build with another Python; with a driver upgrade; with another
        CANN; another torch line."""
        req = self.request
        out: List[str] = []
        seen = set()

        def add(cand: Candidate, why: str) -> bool:
            key = (cand.row.torch_npu, cand.python, cand.cann)
            if key in seen or len(out) >= limit:
                return False
            seen.add(key)
            out.append(f"{cand.label()}: {why}")
            return True

        def first_ok(resolver: Resolver, rows: List[Any], why: Any, count: int = 1) -> None:
            n = 0
            for row in rows:
                cand = resolver.judge(row)
                if cand.ok and add(cand, why(cand) if callable(why) else why):
                    n += 1
                    if n >= count:
                        return

        lines = {canonical_version(r.torch) for r in asked}
        if req.torch:
            lines.add(canonical_version(req.torch))
        base: Dict[str, Any] = {
            "cann": req.cann,
            "python": req.python,
            "allow_driver_upgrade": req.allow_driver_upgrade,
        }
        # 1. other builds of the same torch line
        if req.torch_npu:
            for line in sorted(lines):
                same = self._variant(Request(torch=line, **base))
                rows = [r for r in same.rows() if canonical_version(r.torch) == line and r not in asked]
                first_ok(
                    same,
                    rows,
                    lambda c: f"same torch line; has a {self._py_tag(c.python)} wheel for {self.arch}",
                    2,
                )
        # 2. the asked builds with another Python
        for row in asked[:3]:
            for py in sorted(self.catalog.pythons(row.torch_npu, self.arch), key=python_key, reverse=True):
                if py == self.python:
                    continue
                cand = self.judge(row, python=py)
                if cand.ok:
                    add(
                        cand,
                        f"the asked build with Python {py} (plan with --python {py}; install that interpreter there)",
                    )
                    break
        # 3. with a driver upgrade
        if not req.allow_driver_upgrade:
            up = self._variant(
                Request(
                    torch_npu=req.torch_npu,
                    torch=req.torch,
                    cann=req.cann,
                    python=req.python,
                    allow_driver_upgrade=True,
                )
            )
            first_ok(
                up,
                asked,
                lambda c: f"needs a driver upgrade to {c.driver.target if c.driver else '?'} (--allow-driver-upgrade)",
            )
        # 4. without the asked CANN / torch line
        if req.cann:
            free = self._variant(
                Request(
                    torch_npu=req.torch_npu,
                    torch=req.torch,
                    python=req.python,
                    allow_driver_upgrade=req.allow_driver_upgrade,
                )
            )
            first_ok(free, free.selected_rows()[0], f"with another CANN than {req.cann}")
        if req.torch_npu or req.torch:
            free = self._variant(
                Request(cann=req.cann, python=req.python, allow_driver_upgrade=req.allow_driver_upgrade, newest=True)
            )
            first_ok(free, free.selected_rows()[0], "newest set for this site (another torch line)")
        if not (req.torch_npu or req.torch or req.cann):
            for row in asked:
                if len(out) >= limit:
                    break
                for py in sorted(self.catalog.pythons(row.torch_npu, self.arch), key=python_key, reverse=True):
                    cand = self.judge(row, python=py)
                    if cand.ok:
                        add(cand, f"newest set with Python {py} (plan with --python {py})")
                        break
                if out:
                    break
        return out

    def _basis(self) -> str:
        """What the newest-build choice was checked against: the chip (its family's
        support in the matrix) and the installed driver, each only when the snapshot
        knows it."""
        chip = self.chip_name if self.family else None
        driver = self.site.driver
        unchecked = "the driver requirement is listed, not checked"
        if chip and driver:
            return f"that supports this site's {chip} and whose CANN its driver {driver} accepts"
        if chip:
            return f"that supports this site's {chip}; no driver version known for this site: {unchecked}"
        if driver:
            return (
                f"whose CANN this site's driver {driver} accepts; no chip known for this site: chip support not checked"
            )
        return f"(no chip or driver known for this site: chip support not checked and {unchecked})"

    @staticmethod
    def _py_tag(python: str) -> str:
        return "cp" + python.replace(".", "")

    def build_plan(self, cand: Candidate, res: Resolution) -> Plan:
        row, site = cand.row, self.site
        assert cand.cann is not None and cand.driver is not None
        torch_req, torch_index = torch_requirement(row.torch, row.torch_npu, self.arch)
        reasons: List[str] = []
        warnings: List[str] = []
        self._why_torch_npu(cand, res, reasons)
        reasons.append(self._why_torch(row, torch_req, torch_index))
        self._why_python(cand, reasons, warnings)
        keep = bool(site.cann) and site.cann == cand.cann
        self._why_cann(cand, keep, reasons)
        self._why_driver(cand, reasons, warnings)
        numpy_req, deps = self._python_requirements(cand, reasons)
        pchip, packages = self._packages(cand, keep, warnings)
        if site.missing:
            warnings.append("the snapshot lacks: " + ", ".join(site.missing))
        return Plan(
            torch_npu=row.torch_npu,
            torch=row.torch,
            torch_requirement=torch_req,
            torch_index=torch_index,
            python=cand.python,
            arch=self.arch,
            glibc=site.glibc,
            cann=cand.cann,
            cann_action="keep" if keep else "install",
            cann_fit=cand.cann_fit,
            numpy=numpy_req,
            python_deps=deps,
            driver=cand.driver,
            chip=self.chip_name,
            chip_family=self.family,
            package_chip=pchip,
            packages=packages,
            reasons=reasons,
            warnings=warnings,
            row_source=row.source,
        )

    def _why_torch_npu(self, cand: Candidate, res: Resolution, reasons: List[str]) -> None:
        """Why this torch_npu build (and the architecture, and the builds passed over)."""
        row, req, arch = cand.row, self.request, self.arch
        if req.torch_npu:
            reasons.append(f"torch_npu {row.torch_npu}: asked for with --torch-npu")
        elif req.cann:
            reasons.append(self._why_for_cann(cand, req.cann))
        elif req.torch:
            reasons.append(f"torch_npu {row.torch_npu}: the newest build for torch {row.torch} that fits this site")
        else:
            line = self._site_line()
            of_line = f" of the site's torch {line} line" if line == canonical_version(row.torch) else ""
            reasons.append(
                f"torch_npu {row.torch_npu}: the newest build{of_line} with a {self._py_tag(cand.python)} wheel "
                f"for {arch} " + self._basis()
            )
        if self.site.arch_source and self.site.arch_source != "host.arch":
            reasons.append(f"architecture {arch}: from {self.site.arch_source}; the snapshot has no host.arch")
        if res.rejected:
            first = (
                "builds preferred to it passed over" if req.cann and not req.torch_npu else "newer builds passed over"
            )
            reasons.append(f"{first}: " + "; ".join(res.rejected))

    def _why_for_cann(self, cand: Candidate, cann: str) -> str:
        """Why this build for ``--cann``: its official pairing (or its line's, or a declared
        compatibility), and whether it is of the site's own torch line."""
        row, tag = cand.row, f"a {self._py_tag(cand.python)} wheel for {self.arch}"
        tier, own = self._pairing(cand, cann)
        line = self._torch_line()
        paired = ", ".join(row.cann or [])
        if tier == 0:
            what = f"officially paired with CANN {cann}"
        elif tier == 1:
            what = f"officially paired with CANN {paired}, of the same release line as CANN {cann}"
        else:
            what = f"declared compatible with CANN {cann} (no build officially paired with it fits this site)"
        if own:
            return f"torch_npu {row.torch_npu}: {what}, and of the site's torch {line} line; has {tag}"
        if self.request.torch:
            return f"torch_npu {row.torch_npu}: the build for torch {row.torch} {what}; has {tag}"
        mine = f" (no build of the site's torch {line} line is; " if line else " ("
        return f"torch_npu {row.torch_npu}: the newest build {what}{mine}has {tag})"

    def _why_torch(self, row: Any, torch_req: str, torch_index: Optional[str]) -> str:
        """Why this torch requirement, and the index it comes from."""
        if torch_index and torch_req.endswith("+cpu"):
            return (
                f"{torch_req}: torch_npu {row.torch_npu}'s x86_64 wheel requires the +cpu torch build "
                f"(Requires-Dist), which comes from the PyTorch CPU index {torch_index}"
            )
        if torch_index:
            return (
                f"{torch_req}: the torch build torch_npu {row.torch_npu} requires (Requires-Dist), the CPU build "
                f"from the PyTorch CPU index {torch_index} (torch from the default index is a CUDA build on {self.arch})"
            )
        return f"{torch_req}: the torch build torch_npu {row.torch_npu} requires (Requires-Dist)"

    def _why_python(self, cand: Candidate, reasons: List[str], warnings: List[str]) -> None:
        """Why this Python, the wheel file, and what the site's interpreter and glibc leave open."""
        site = self.site
        if self.request.python:
            reasons.append(f"Python {cand.python}: asked for with --python")
            if site.python and site.python != cand.python:
                warnings.append(
                    f"the site's interpreter is Python {site.python}; these wheels need a Python {cand.python} "
                    "interpreter there (install.sh --python PATH)"
                )
        else:
            where = f" at {site.executable}" if site.executable else ""
            reasons.append(f"Python {cand.python}: the site's interpreter{where}")
        wheel = self.catalog.wheel(cand.row.torch_npu, cand.python, self.arch)
        if wheel is not None and wheel.filename:
            reasons.append(f"wheel {wheel.filename} ({self.catalog.source})")
        if not site.glibc:
            warnings.append("the snapshot has no glibc version; wheels were chosen assuming glibc 2.28")

    def _why_cann(self, cand: Candidate, keep: bool, reasons: List[str]) -> None:
        """Why this CANN (``keep``: the site's own), and the CANN it replaces."""
        row = cand.row
        if self.request.cann:
            reasons.append(f"CANN {cand.cann}: asked for with --cann ({cand.cann_fit} with torch_npu {row.torch_npu})")
        elif keep:
            reasons.append(
                f"CANN {cand.cann}: already installed on the site and {cand.cann_fit} with torch_npu {row.torch_npu}"
            )
        elif cand.cann_fit == "paired":
            reasons.append(f"CANN {cand.cann}: officially paired with torch_npu {row.torch_npu} ({row.source})")
        elif row.cann:
            reasons.append(
                f"CANN {cand.cann}: torch_npu {row.torch_npu}'s line is declared compatible with it "
                f"(the paired CANN {', '.join(row.cann)} would need a driver upgrade)"
            )
        else:
            reasons.append(
                f"CANN {cand.cann}: no CANN is officially paired with torch_npu {row.torch_npu}; "
                f"its line is declared compatible with {', '.join(row.cann_compatible)}"
            )
        if self.site.cann and not keep:
            reasons.append(f"replaces the site's CANN {self.site.cann}")

    @staticmethod
    def _why_driver(cand: Candidate, reasons: List[str], warnings: List[str]) -> None:
        """What happens to the driver: kept, upgraded, or unknown (a warning)."""
        drv = cand.driver
        assert drv is not None
        if drv.action == "keep":
            reasons.append(f"driver {drv.installed}: {drv.fit} with CANN {cand.cann}; no driver change")
        elif drv.action == "upgrade":
            reasons.append(
                f"driver {drv.installed} is {Resolver._driver_words(drv)} for CANN {cand.cann} "
                f"(needs {', '.join(drv.required)}); "
                f"upgrade to {drv.target} (allowed by --allow-driver-upgrade)"
            )
        else:
            need = ", ".join(drv.required) or "unknown"
            if drv.installed:
                warnings.append(f"whether driver {drv.installed} fits CANN {cand.cann} is not known (listed: {need})")
            else:
                warnings.append(
                    f"the snapshot has no driver version; CANN {cand.cann} needs Ascend HDK {need} — check with npu-smi"
                )

    def _python_requirements(self, cand: Candidate, reasons: List[str]) -> Tuple[str, List[str]]:
        """The numpy requirement and the Python dependencies of the chosen CANN."""
        assert cand.cann is not None
        numpy_spec = None
        try:
            numpy_spec = self.matrix.numpy_spec(cand.cann, cand.python)
        except Exception:
            numpy_spec = None
        numpy_req = f"numpy{numpy_spec}" if numpy_spec else "numpy"
        if numpy_spec:
            reasons.append(f"{numpy_req}: CANN {cand.cann}'s Python components need it on Python {cand.python}")
        else:
            reasons.append(f"numpy: no upper bound for CANN {cand.cann} on Python {cand.python}")
        try:
            deps = list(self.matrix.cann_python_deps(cand.cann))
        except Exception:
            deps = []
        if "protobuf" in deps:
            deps = [self._protobuf(cand.cann, reasons) if d == "protobuf" else d for d in deps]
        if deps:
            reasons.append(f"CANN Python dependencies: {', '.join(deps)}")
        return numpy_req, deps

    def _protobuf(self, cann: str, reasons: List[str]) -> str:
        """The protobuf requirement of ``cann`` (its row's, else its release line's) and why."""
        req = self.matrix.protobuf_requirement(cann)
        if req is None:
            reasons.append(f"protobuf: no source states the protobuf version CANN {cann} needs; left unpinned")
            return "protobuf"
        spec, row, source = req
        of = f"CANN {cann}" if row == cann else f"CANN {cann} (as its release line's {row} states)"
        if not spec:
            reasons.append(f"protobuf: {of} lists it without a version ({source})")
            return "protobuf"
        reasons.append(f"protobuf{spec}: {of} needs it ({source})")
        return f"protobuf{spec}"

    def _packages(self, cand: Candidate, keep: bool, warnings: List[str]) -> Tuple[Optional[str], List[Any]]:
        """The package chip and the CANN (unless kept) and driver (if upgraded) packages."""
        from npudoctor.knowledge.chips import family_package_chip
        from npudoctor.knowledge.packages import UNKNOWN_CHIP
        from npudoctor.plan.files import cann_packages, driver_packages

        assert cand.cann is not None and cand.driver is not None
        drv, arch = cand.driver, self.arch
        known = getattr(self.chip_info, "kernels_package_chip", None)
        pchip = known or family_package_chip(self.matrix, self.family)
        packages: List[Any] = []
        if not keep:
            try:
                packages = cann_packages(cand.cann, arch, pchip)
            except ValueError as exc:
                warnings.append(str(exc))
        if drv.action == "upgrade" and drv.target:
            packages = driver_packages(drv.target, arch, pchip) + packages
        if not pchip and not keep:
            kernels = next((p.filename for p in packages if p.kind in ("kernels", "ops")), "the kernels/ops package")
            warnings.append(
                f"the snapshot names no NPU chip: {kernels} is chip-specific, so no bundle is complete without it "
                "(collect the snapshot where npu-smi works, or put the site chip's package into --cann-dir)"
            )
        for p in packages:
            if UNKNOWN_CHIP in p.filename:
                continue
            if not p.verified_name:
                warnings.append(f"{p.filename}: this file-name pattern is not confirmed for {pchip} chips")
        return pchip, packages


def resolve(site: Site, request: Request, matrix: Any, catalog: Optional[WheelCatalog] = None) -> Resolution:
    """Choose the set for ``site``.  Raises :class:`PlanError` for a malformed request or
    a snapshot without the facts that cannot be assumed (arch, Python)."""
    return Resolver(site, request, matrix, catalog).resolve()
