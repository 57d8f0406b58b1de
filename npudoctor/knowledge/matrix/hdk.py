"""CANN ↔ driver (Ascend HDK) and driver ↔ firmware verdicts (policy: AUDIT §1; the severity policy, AUDIT §7).

The judgement returns a :class:`~npudoctor.knowledge.grades.Verdict` with its source in words.
Order of the evidence, strongest first:

1. the CANN's paired HDK, per product line (``hdk_products``, then ``hdk_paired``): the HDK
   itself is *paired*, a patch build of it (``25.7.rc1.6`` of ``25.7.RC1``) the *same release
   line*;
2. the release notes' Y/N grid (``hdk_grid``): Y is *declared compatible*, an explicit N
   *documented incompatible*;
3. a documented product floor (``[[hdk_floor]]``: "Atlas A2 inference: HDK ≥ 24.1.RC1");
4. the CANN's own release-note HDK list (``hdk_notes``);
5. the packages' own declarations: the driver's ``version.info`` ``compatible_version`` (CANN
   lines it accepts) and the toolkit's ``ascend_toolkit_install.info`` ``compatible_version``
   (driver lines it accepts), matched against the other package's inner version line.  Where
   the release notes list the HDKs of a CANN, a toolkit's list never makes compatible a driver
   older than the paired HDK that the notes leave out (8.5.0's list is 8.2.RC1's carried
   forward); both lists excluding each other is documented incompatible;
6. the tables: other sources' lists (``hdk_compatible``) and tested install combinations;
7. otherwise the distance in HDK feature releases (``[[hdk_release]]``) to the documented ones:
   a newer driver is undocumented (info within about a year, else warning), an older one is
   undocumented (info one release older, warning within about a year) or, more than about a
   year older, documented incompatible.

A CANN row without HDK statements inherits its release line's (``8.2.RC2`` → ``8.2.RC1``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.knowledge.grades import Grade, Verdict, severity
from npudoctor.knowledge.versions import DriverVersion, parse_cann, parse_driver, same_cann, tokens, version_in
from npudoctor.parsers.info_files import format_ranges, ranges_contain
from npudoctor.record import Record

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple, Union

    class MatrixRows(Protocol):
        """What the judge reads of :class:`~npudoctor.knowledge.matrix.Matrix`."""

        @property
        def cann_rows(self) -> List[Dict[str, Any]]: ...

        def table(self, name: str) -> List[Dict[str, Any]]: ...

        def cann_row(self, cann: str) -> Optional[Dict[str, Any]]: ...


_LINE = lazyre.pattern(r"^(V[0-9]{3}R[0-9]{3})C([0-9]{2})", re.I)
_WILD = lazyre.pattern(r"^([0-9]+)\.([0-9]+)\.[Xx*]$")
_HDK_KEYS = ("hdk_paired", "hdk_compatible", "hdk_grid", "hdk_products")


class Packages(Record):
    """What the installed packages say about themselves: the toolkit's ``innerversion`` and
    ``compatible_version`` (driver lines it accepts), the driver's ``Innerversion`` and
    ``compatible_version`` (CANN lines it accepts).  Empty when a file lacks them."""

    toolkit_inner: Optional[str] = None
    toolkit_accepts: Tuple[str, ...] = ()
    driver_inner: Optional[str] = None
    driver_accepts: Tuple[str, ...] = ()


class DriverVerdict(Record):
    """A CANN ↔ driver :class:`Verdict` and whether the policy rates it mildly (AUDIT §7 (c)/(d):
    an undocumented driver newer by ≤ ~1 year, or one HDK release older on the same product
    line, is ``info`` rather than ``warning``)."""

    verdict: Verdict
    mild: bool = False

    def severity(self, always_report: bool = False) -> Optional[str]:
        """``grades.severity`` of the verdict (``always_report``: in a container)."""
        return severity(self.verdict, always_report=always_report, mild=self.mild)


def inner_line(inner: Optional[str]) -> Optional[str]:
    """``"V100R001C22SPC001B231"`` → ``"V100R001C22"``; ``None`` for anything else."""
    m = _LINE.match((inner or "").strip())
    return f"{m.group(1).upper()}C{m.group(2)}" if m else None


def accepts(listed: Sequence[str], line: Optional[str]) -> Optional[bool]:
    """Whether a ``compatible_version`` list holds inner line ``line``: items are single lines
    (``V100R001C15``) or range groups (``V100R001C15,V100R001C18``).  ``None`` when the list
    is empty or the line unknown."""
    m = _LINE.match(line or "")
    if not listed or m is None:
        return None
    prefix, num = m.group(1).upper(), int(m.group(2))
    for item in listed:
        ends = [_LINE.match(p.strip()) for p in item.split(",") if p.strip()]
        ends_ok = [e for e in ends if e is not None and e.group(1).upper() == prefix]
        if len(ends_ok) == 1 and int(ends_ok[0].group(2)) == num:
            return True
        if len(ends_ok) == 2 and int(ends_ok[0].group(2)) <= num <= int(ends_ok[1].group(2)):
            return True
    return False


def _patch_of(d: DriverVersion, hdk: str) -> Optional[bool]:
    """``False`` when driver ``d`` is HDK ``hdk`` itself, ``True`` when it is a patch build of
    it (``24.1.rc2.2`` of ``24.1.RC2``), ``None`` when neither."""
    if not d.within(hdk):
        return None
    mine = [t for t in tokens(d.text) if not re.match(r"^b[0-9]+$", t)]
    return len(mine) > len(tokens(hdk))


def _matches(d: DriverVersion, hdk: str) -> bool:
    """Whether driver ``d`` is HDK ``hdk``, a patch of it, or inside wildcard ``25.5.X``."""
    if _WILD.match(hdk):
        return version_in(d.release, [hdk])
    return d.within(hdk)


def _floor_key(hdk: str) -> Optional[DriverVersion]:
    """An orderable version for a listed HDK (``25.5.X`` → ``25.5.RC1``'s place: the line's start)."""
    m = _WILD.match(hdk)
    return parse_driver(f"{m.group(1)}.{m.group(2)}.rc0" if m else hdk)


class HdkJudge:
    """CANN ↔ driver verdicts over one matrix (its ``[[cann]]``, ``[[install_pairing]]``,
    ``[[hdk_release]]`` and ``[[hdk_floor]]`` tables)."""

    def __init__(self, matrix: MatrixRows) -> None:
        self.matrix = matrix

    # ---- the CANN's statements
    def statement_row(self, cann: str) -> Tuple[Optional[Dict[str, Any]], str]:
        """``(row, label)``: the ``[[cann]]`` row holding HDK statements for ``cann`` — its own,
        else its release line's (same major.minor, the newest release not after it that has
        statements) — and how to name it ("CANN 8.2.RC1, whose release line 8.2.RC2 is on")."""
        own = self.matrix.cann_row(cann)
        if own is not None and any(own.get(k) for k in _HDK_KEYS):
            return own, f"CANN {own['version']}"
        v = parse_cann(cann)
        if v is None or not v.orderable:
            return None, f"CANN {cann}"
        before: List[Tuple[Any, Dict[str, Any]]] = []
        same: List[Dict[str, Any]] = []
        for r in self.matrix.cann_rows:
            rv = parse_cann(r.get("version", ""))
            if rv is None or not rv.orderable or (rv.major, rv.minor) != (v.major, v.minor):
                continue
            if not any(r.get(k) for k in _HDK_KEYS) or (rv.is_prerelease and not v.is_prerelease):
                continue
            if rv.compare(v) == -1:
                before.append((rv, r))
            elif rv.release == v.release:
                same.append(r)
        if before:
            best = max(before, key=lambda pair: pair[0])[1]
        elif same:
            best = same[0]
        else:
            return None, f"CANN {cann}"
        return best, f"CANN {best['version']} (CANN {cann} is on its release line)"

    def _sequence(self, family: Optional[str]) -> Tuple[List[DriverVersion], int]:
        for r in self.matrix.table("hdk_release"):
            if family is None or family in r.get("families", []):
                seq = [v for v in (parse_driver(x) for x in r.get("releases", [])) if v is not None]
                return seq, int(r.get("per_year", 4))
        return [], 4

    @staticmethod
    def _pos(seq: List[DriverVersion], v: Optional[DriverVersion]) -> Optional[int]:
        """Index of the last release in ``seq`` not after ``v`` (-1 before all), ``None`` unknown."""
        if v is None or not v.orderable:
            return None
        pos = -1
        for i, r in enumerate(seq):
            c = r.compare(v)
            if c is None:
                return None
            if c <= 0:
                pos = i
        return pos

    def _place(self, seq: List[DriverVersion], hdk: str) -> Optional[int]:
        """Index in ``seq`` of a listed HDK; a wildcard (``25.0.X``) sits at its line's first release."""
        m = _WILD.match(hdk)
        if m:
            line = (int(m.group(1)), int(m.group(2)))
            for i, r in enumerate(seq):
                if (r.major, r.minor) == line:
                    return i
        return self._pos(seq, _floor_key(hdk))

    # ---- the verdict
    def verdict(
        self,
        cann: str,
        driver: str,
        packages: Packages = Packages(),
        family: Optional[str] = None,
        chip: Optional[str] = None,
    ) -> DriverVerdict:
        """The verdict on driver ``driver`` with CANN ``cann`` on a machine of chip family
        ``family`` (``"910B"``, ``"950"``, … or ``None`` unknown) and npu-smi chip ``chip``
        (``"910B4"``), given what the installed ``packages`` declare.  Never raises: an
        unplaceable version is "not documented either way"."""
        try:
            out = self._judge(cann, driver, packages, family, chip)
            if family is None:
                out = self._unknown_product_line(cann, driver, out)
        except Exception as exc:  # a malformed row or version the order cannot place
            return DriverVerdict(
                Verdict(Grade.UNDOCUMENTED, f"the matrix cannot place driver {driver} for CANN {cann}: {exc}")
            )
        return out if isinstance(out, DriverVerdict) else DriverVerdict(out)

    def _unknown_product_line(
        self, cann: str, driver: str, out: Union[Verdict, DriverVerdict]
    ) -> Union[Verdict, DriverVerdict]:
        """On a machine whose chip family is unknown, a driver that only one product line's
        pairing names (``hdk_products``: 25.1.RC1 for the Atlas 950 SuperPoD) is not called
        paired: whether this machine is that product is not known.  What the general
        statements say (a grid Y for the same number) still stands."""
        v = out.verdict if isinstance(out, DriverVerdict) else out
        if v.grade is not Grade.PAIRED and v.grade is not Grade.SAME_LINE:
            return out
        d = parse_driver(driver)
        row, label = self.statement_row(cann)
        if d is None or not row:
            return out
        general = self._judge(cann, driver, Packages(), None, None, products=False)
        g = general.verdict if isinstance(general, DriverVerdict) else general
        if g.grade in (Grade.PAIRED, Grade.SAME_LINE, Grade.DECLARED):
            return general
        for entry in row.get("hdk_products", []):
            for hdk in entry.get("hdk", []):
                if _patch_of(d, hdk) is not None:
                    return DriverVerdict(
                        Verdict(
                            Grade.UNDOCUMENTED,
                            f"Ascend HDK {hdk} is paired with {label} only on {entry.get('product', entry.get('family'))} "
                            f"(family {entry.get('family')}); this machine's chip family is not known, so the pairing "
                            f"is not confirmed ({row.get('hdk_products_source', row.get('source', ''))})",
                        ),
                        mild=True,
                    )
        return out

    def _judge(
        self,
        cann: str,
        driver: str,
        packages: Packages = Packages(),
        family: Optional[str] = None,
        chip: Optional[str] = None,
        products: bool = True,
    ) -> Union[Verdict, DriverVerdict]:
        d = parse_driver(driver)
        if d is None or not d.orderable:
            return Verdict(Grade.UNDOCUMENTED, f"driver version {driver} has no place in the Ascend HDK release order")
        row, label = self.statement_row(cann)
        row = row or {}
        source = str(row.get("source", ""))
        paired = [str(p) for p in row.get("hdk_paired", [])]
        for entry in row.get("hdk_products", []) if products else []:
            if family is not None and entry.get("family") != family:
                continue
            for hdk in entry.get("hdk", []):
                patch = _patch_of(d, hdk)
                if patch is not None:
                    where = f"{entry.get('product', '')} — {row.get('hdk_products_source', source)}"
                    if patch:
                        return Verdict(
                            Grade.SAME_LINE, f"a patch build of Ascend HDK {hdk}, paired with {label} ({where})"
                        )
                    return Verdict(Grade.PAIRED, f"Ascend HDK {hdk} is paired with {label} ({where})")
        inherited = bool(row) and self.matrix.cann_row(cann) is not row  # the line's statements
        for hdk in paired:
            patch = _patch_of(d, hdk)
            if patch is not None:
                if patch or inherited:  # a patch build, or the pairing of another release of the line
                    what = f"a patch build of Ascend HDK {hdk}" if patch else f"Ascend HDK {hdk}"
                    return Verdict(Grade.SAME_LINE, f"{what}, paired with {label} ({source})")
                return Verdict(Grade.PAIRED, f"Ascend HDK {hdk} is paired with {label} ({source})")
        grid: Dict[str, str] = dict(row.get("hdk_grid", {}) or {})
        grid_src = str(row.get("hdk_grid_source", source))
        yes = [c for c, cell in grid.items() if cell == "Y"]
        window = self._window(yes or [str(x) for x in row.get("hdk_compatible", [])], paired)
        older = self._older(d, paired, row)
        for col, cell in grid.items():
            if _matches(d, col):
                if cell == "Y":
                    return Verdict(Grade.DECLARED, f"Y for Ascend HDK {col} in {grid_src}")
                return Verdict(
                    Grade.INCOMPATIBLE, f"explicit N for Ascend HDK {col} in {grid_src}", window=window, newer=not older
                )
        below = self._below_grid(d, grid)
        if below is not None:
            return Verdict(
                Grade.INCOMPATIBLE,
                f"older than Ascend HDK {below}, which {grid_src} marks N",
                window=window,
                newer=False,
            )
        floor = self._floor(d, chip)
        if floor is not None:
            return floor
        listed = [str(x) for x in row.get("hdk_compatible", [])]
        if row.get("hdk_notes"):
            for hdk in listed:
                if _matches(d, hdk):
                    return Verdict(
                        Grade.DECLARED, f"Ascend HDK {hdk} is listed by the {label} release notes ({source})"
                    )
        by_packages = self._packages(d, packages, notes_decide=bool(row.get("hdk_notes")) and older)
        if by_packages is not None:
            return by_packages
        if not row.get("hdk_notes"):
            for hdk in listed:
                if _matches(d, hdk):
                    said = row.get("hdk_compatible_source") or source
                    return Verdict(Grade.DECLARED, f"Ascend HDK {hdk} is declared compatible with {label} ({said})")
        tested = self._tested(cann, str(row.get("version", cann)), d)
        if tested is not None:
            return tested
        return self._distance(cann, d, label, row, paired, yes, family, window, products)

    @staticmethod
    def _below_grid(d: DriverVersion, grid: Dict[str, str]) -> Optional[str]:
        """The oldest N column of ``grid`` when driver ``d`` is older than it and than every Y
        column (a grid that marks 25.0.X N rules out 24.x too), else ``None``."""
        cols = [(k, c, cell) for c, cell in grid.items() for k in [_floor_key(c)] if k is not None and k.orderable]
        if not cols or any(d.compare(k) != -1 for k, _c, _cell in cols):
            return None
        oldest = min(cols, key=lambda kc: kc[0])
        return oldest[1] if oldest[2] == "N" else None

    def _older(self, d: DriverVersion, paired: List[str], row: Dict[str, Any]) -> bool:
        """Whether the driver is older than the paired HDK (else than every listed one)."""
        refs = paired or [str(x) for x in row.get("hdk_compatible", [])]
        keys = [k for k in (_floor_key(r) for r in refs) if k is not None and k.orderable]
        return bool(keys) and all(d.compare(k) == -1 for k in keys)

    @staticmethod
    def _window(yes: List[str], paired: List[str]) -> str:
        names = ", ".join(dict.fromkeys(yes))
        text = f"Ascend HDK {names}" if names else ""
        if paired:
            text += ("; " if text else "") + f"paired {', '.join(paired)}"
        return text

    def _floor(self, d: DriverVersion, chip: Optional[str]) -> Optional[Verdict]:
        if not chip:
            return None
        for f in self.matrix.table("hdk_floor"):
            if chip not in f.get("chips", []):
                continue
            lo = parse_driver(f.get("hdk", ""))
            if lo is not None and d.compare(lo) == -1:
                return Verdict(
                    Grade.INCOMPATIBLE,
                    f"{f.get('product', chip)} need Ascend HDK {f['hdk']} or later: {f.get('source', '')}",
                    window=f"Ascend HDK {f['hdk']} or later on {f.get('product', chip)}",
                    newer=False,
                )
        return None

    def line_release(self, line: Optional[str], side: str) -> str:
        """An inner version line in words: ``V100R001C18`` with the releases of ``side``
        (``"driver"``: Ascend HDK, ``"cann"``: CANN) that carry it, from the matrix's
        ``[[inner_line]]`` table (``V100R001C18, the line of Ascend HDK 24.1.RC2``); the
        line alone when the table names none."""
        row = next((r for r in self.matrix.table("inner_line") if r.get("line") == line), None)
        releases = [str(v) for v in (row or {}).get(side) or ()]
        if not releases:
            return str(line)
        what = "Ascend HDK " if side == "driver" else "CANN "
        return f"{line}, the line of {what}{' and '.join(releases)}"

    def _packages(self, d: DriverVersion, pk: Packages, notes_decide: bool) -> Optional[Verdict]:
        t_line, d_line = inner_line(pk.toolkit_inner), inner_line(pk.driver_inner)
        d_says = accepts(pk.driver_accepts, t_line)
        t_says = accepts(pk.toolkit_accepts, d_line)
        if d_says:
            return Verdict(
                Grade.DECLARED,
                "declared compatible by the driver's own version.info: its compatible_version lists the toolkit's "
                f"line ({self.line_release(t_line, 'cann')})",
            )
        if t_says and not notes_decide:
            return Verdict(
                Grade.DECLARED,
                "declared compatible by the toolkit's own ascend_toolkit_install.info: its compatible_version lists "
                f"the driver's line ({self.line_release(d_line, 'driver')})",
            )
        if t_says is False and d_says is False:
            return Verdict(
                Grade.INCOMPATIBLE,
                f"both packages' compatible_version lists exclude each other (driver {d_line}, toolkit {t_line})",
                newer=None,
            )
        return None

    def _pairings(self, cann: str, row_version: str) -> List[Dict[str, Any]]:
        """The ``[[install_pairing]]`` rows of ``cann`` or of the row it inherits from."""
        return [
            p
            for p in self.matrix.table("install_pairing")
            if same_cann(str(p.get("cann", "")), cann)
            or (row_version and same_cann(str(p.get("cann", "")), row_version))
        ]

    def _tested(self, cann: str, row_version: str, d: DriverVersion) -> Optional[Verdict]:
        for pair in self._pairings(cann, row_version):
            if d.within(str(pair.get("driver", ""))):
                return Verdict(
                    Grade.DECLARED,
                    f"a tested install combination of the official install helper: CANN {pair['cann']} with driver "
                    f"{pair['driver']} ({pair.get('source', '')})",
                )
        return None

    def _distance(
        self,
        cann: str,
        d: DriverVersion,
        label: str,
        row: Dict[str, Any],
        paired: List[str],
        yes: List[str],
        family: Optional[str],
        window: str,
        products: bool = True,
    ) -> Union[Verdict, DriverVerdict]:
        version = str(row.get("version", ""))
        documented = paired + yes + [str(x) for x in row.get("hdk_compatible", [])]
        documented += [
            str(h)
            for e in (row.get("hdk_products", []) if products else [])
            if family in (None, e.get("family"))
            for h in e.get("hdk", [])
        ]
        documented += [str(p.get("driver", "")) for p in self._pairings(cann, version)]
        placed = sorted(
            ((k, x) for k, x in ((_floor_key(x), x) for x in documented) if k is not None and k.orderable),
            key=lambda kx: kx[0],
        )
        if not placed:
            return Verdict(Grade.UNDOCUMENTED, f"no source states which drivers {label} works with")
        seq, per_year = self._sequence(family)
        (lo, lo_text), (hi, hi_text) = placed[0], placed[-1]
        pos_d, pos_lo, pos_hi = self._pos(seq, d), self._place(seq, lo_text), self._place(seq, hi_text)
        if d.compare(lo) == -1:
            gap = (pos_lo - pos_d) if pos_lo is not None and pos_d is not None else None
            oldest = f"{lo_text}, the oldest HDK documented for {label}"
            if gap is not None and gap > per_year:
                return Verdict(
                    Grade.INCOMPATIBLE,
                    f"{gap} HDK releases older than {oldest}: more than about a year",
                    window=window or f"Ascend HDK {lo_text} or later",
                    newer=False,
                )
            if gap == 1:
                # one release older on the same product line: info (AUDIT §7 (d)); the release
                # order is that of the machine's product line, or of the data-centre line
                return DriverVerdict(
                    Verdict(
                        Grade.UNDOCUMENTED,
                        f"one HDK release older than {oldest}",
                        window=window,
                        newer=False,
                    ),
                    mild=True,
                )
            return DriverVerdict(
                Verdict(
                    Grade.UNDOCUMENTED,
                    f"older than {oldest}, by less than about a year",
                    window=window,
                    newer=False,
                )
            )
        if d.compare(hi) == 1 and not any(_matches(d, x) for x in documented):
            gap = (pos_d - pos_hi) if pos_d is not None and pos_hi is not None else None
            newest = f"{hi_text}, the newest HDK documented for {label}"
            if gap is not None and gap > per_year:
                return DriverVerdict(
                    Verdict(
                        Grade.UNDOCUMENTED,
                        f"newer than {newest}, by more than about a year",
                        window=window,
                        newer=True,
                    )
                )
            return DriverVerdict(
                Verdict(
                    Grade.UNDOCUMENTED,
                    f"newer than {newest}, by less than about a year",
                    window=window,
                    newer=True,
                ),
                mild=True,
            )
        below = max((kx for kx in placed if d.compare(kx[0]) == 1), key=lambda kx: kx[0], default=None)
        above = min((kx for kx in placed if d.compare(kx[0]) == -1), key=lambda kx: kx[0], default=None)
        no_cols = [k for c, cell in (row.get("hdk_grid") or {}).items() if cell == "N" for k in [_floor_key(c)] if k]
        if below is not None and above is not None and not any(below[0] < k < above[0] for k in no_cols):
            # inside the documented window: every documented neighbour works and no N lies between
            # (a release the grids do not name as a column, such as 26.0.RC3 between 26.0.RC1 and 26.1.0)
            return DriverVerdict(
                Verdict(
                    Grade.UNDOCUMENTED,
                    f"between Ascend HDK {below[1]} and {above[1]}, both documented for {label}, and not named "
                    "itself: inside the documented window",
                    window=window,
                ),
                mild=True,
            )
        return DriverVerdict(
            Verdict(Grade.UNDOCUMENTED, f"between the HDKs documented for {label}, not listed", window=window)
        )


def driver_firmware(
    driver: Optional[str],
    driver_package: Optional[str],
    firmware: Optional[str],
    firmware_package: Optional[str],
    driver_accepts_fw: Sequence[Tuple[str, str]],
    firmware_accepts_drv: Sequence[Tuple[str, str]],
) -> Optional[Verdict]:
    """The driver ↔ firmware verdict from their ``version.info`` files, or ``None`` when
    neither file says anything to judge.  Same ``package_version`` → paired; the driver's
    ``compatible_version_fw`` decides next (it is the side that refuses a firmware: "driver
    and firmware packages do not match"), then the firmware's ``compatible_version_drv``
    (which predates newer drivers and so cannot name them)."""
    if not driver or not firmware:
        return None
    dpk = (driver_package or driver or "").lower()
    if firmware_package and dpk and parse_driver(firmware_package) is not None and firmware_package.lower() == dpk:
        return Verdict(
            Grade.PAIRED,
            f"both are from Ascend HDK {firmware_package} (package_version of both version.info files)",
        )
    drv_says = ranges_contain(list(driver_accepts_fw), firmware) if driver_accepts_fw else None
    fw_says = ranges_contain(list(firmware_accepts_drv), driver) if firmware_accepts_drv else None
    if drv_says:
        return Verdict(
            Grade.DECLARED,
            f"declared compatible by the driver's own version.info: compatible_version_fw {format_ranges(list(driver_accepts_fw))}",
        )
    if drv_says is False:
        return Verdict(
            Grade.INCOMPATIBLE,
            f"the driver's own version.info accepts firmware {format_ranges(list(driver_accepts_fw))} only",
            window=f"firmware {format_ranges(list(driver_accepts_fw))} for driver {driver}, or a driver whose "
            f"compatible_version_fw holds {firmware}",
        )
    if fw_says:
        return Verdict(
            Grade.DECLARED,
            f"declared compatible by the firmware's own version.info: compatible_version_drv {format_ranges(list(firmware_accepts_drv))}",
        )
    if fw_says is False:
        return Verdict(
            Grade.INCOMPATIBLE,
            f"the firmware's own version.info accepts drivers {format_ranges(list(firmware_accepts_drv))} only",
            window=f"a driver in {format_ranges(list(firmware_accepts_drv))}, or the firmware of the driver's own HDK",
        )
    return None
