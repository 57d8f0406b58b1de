"""Rules about chip support: the npu-smi chip names against the matrix (unknown chips, no
bfloat16) and against the installed torch_npu and vllm-ascend (SoC tables, edge SoCs,
supported families).  What a chip *is* comes from
:func:`npudoctor.knowledge.chips.chip_identity` with the current matrix.  Reads
``ctx.view.devices.chips`` and ``ctx.view.packages``.  Root-cause kind K18
(the ``[kinds]`` table of ``knowledge/signatures.toml``).

Codes DEV040–DEV042, and CANN013 (a CANN older than the first release that supports the
chip's product line, ``[[cann_floor]]`` of ``matrix/chips.toml``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.findings import Finding
from npudoctor.knowledge import chip_support as chip_support_data
from npudoctor.knowledge import codes
from npudoctor.knowledge.chips import chip_identity
from npudoctor.knowledge.frameworks import rows_for
from npudoctor.knowledge.socs import EDGE_FAMILIES, SOC_FIRST_EXT
from npudoctor.knowledge.versions import cann_less, parse_cann
from npudoctor.remedies.cann import install, set_env_step
from npudoctor.rules import rule
from npudoctor.rules._cannfacts import host_arch, toolkit_line
from npudoctor.rules._chipmove import release_for
from npudoctor.rules.matrix import refresh_hint

if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, List, Optional, Tuple

    from npudoctor.context import RuleContext
    from npudoctor.knowledge.matrix import CannFloor, Matrix
    from npudoctor.knowledge.matrix import Chip as MatrixChip

READS = ("cann", "devices", "host", "packages")
ONLY_WITH = ("devices",)


CHIP_UNSUPPORTED = codes.get("DEV040")
NO_BF16 = codes.get("DEV041")
CHIP_UNKNOWN = codes.get("DEV042")
CANN_PREDATES_PRODUCT = codes.get("CANN013")


def soc_known_to_torch_npu(matrix: Optional[Matrix], soc: str, torch_npu: str) -> Optional[bool]:
    """Whether the installed torch_npu build's SoC table lists ``soc`` (an ``Ascend…`` SoC
    name), judged by :data:`SOC_FIRST_EXT` and the matrix's torch_npu rows (``ext_version``
    of each build, ``matrix/torch_npu.toml``).

    Returns ``True``/``False``, or ``None`` when unknown: the SoC has no recorded first
    line, the version is not PEP 440, or the matrix has no row of this torch_npu line.  A
    line whose every tabled build is of that extension line or newer counts as knowing it
    (its dev/rc builds postdate it)."""
    first_ext = SOC_FIRST_EXT.get(soc)
    if not first_ext or matrix is None:
        return None
    rows = matrix.torch_npu_rows  # decoded only for a SoC with a first line
    if not rows:
        return None
    from packaging.version import InvalidVersion, Version  # only for a torch_npu to judge

    try:
        want = Version(Version(torch_npu).public)
    except (InvalidVersion, ValueError, TypeError):
        return None
    first = parse_cann(first_ext)
    line: List[Tuple[Version, bool]] = []
    for row in rows:
        v, ext = row.version, parse_cann(row.ext_version or "")
        if v is None or ext is None or v.release != want.release:
            continue
        try:
            newer = ext.compare(first)
        except Exception:
            newer = None
        if newer is None:
            continue
        line.append((v, newer >= 0))
        if v == want:
            return newer >= 0
    if not line:
        return None
    if all(ok for _, ok in line):
        return True
    knowing = [v for v, ok in line if ok]
    if not knowing:
        return False  # every tabled build of this line predates the SoC
    return want >= min(knowing)


def _frameworks(ctx: RuleContext) -> List[Tuple[str, Optional[str]]]:
    """``(framework, version)`` of the frameworks of the chip-support data installed here:
    pip distributions, and MindIE from its version.info."""
    out: List[Tuple[str, Optional[str]]] = []
    for framework, dist in (
        ("vllm-ascend", "vllm-ascend"),
        ("mindspeed", "mindspeed"),
        ("torchair", "torchair"),
        ("triton-ascend", "triton-ascend"),
        ("deepspeed", "deepspeed"),
        ("lmdeploy", "lmdeploy"),
        ("sglang", "sglang"),
    ):
        if ctx.view.packages.first(dist) is not None:
            out.append((framework, ctx.view.packages.version_of(dist)))
    mindie = ctx.view.cann.mindie
    if mindie is not None:
        out.append(("mindie", mindie.version))
    return out


def _framework_on_chip(framework: str, version: Optional[str], name: str, family: str) -> Iterable[Finding]:
    """DEV040 from the chip-support data (npudoctor/knowledge/data/frameworks/
    framework_support.toml): an error where the sources state the installed version cannot run
    on the chip at all (with the first version that can), a warning where that is inferred,
    a note for an experimental or undocumented family; nothing where it is supported."""
    row = chip_support_data.support_for(framework, family, version)
    if row is None or row.status == "supported":
        return
    label = f"{framework} {version}" if version else framework
    first = release_for(framework, family)
    evidence = [
        f"npu-smi Name {name} → family {family}",
        f"{label} installed",
        f"{framework} on {family} ({row.versions or 'every release'}): {row.status}, {row.confidence} -- {row.note}",
        "sources: " + "; ".join(row.sources[:3]),
    ]
    fix: List[str] = []
    data: Dict[str, Any] = {}
    moves = first is not None and row.status == "unsupported" and row.confidence == "stated"
    if first is not None:
        # a move: the later fixes are computed for that release (rules/_chipmove.py); a
        # framework goes in after the driver, CANN and torch_npu it needs, whatever the order
        fix.append(
            f"Use {framework} {first.first_version} or newer ({first.status} on {family} from that release on), "
            "installed after the driver, CANN and torch_npu it needs; or run on hardware this release supports"
            if moves
            else f"Install {framework} {first.first_version} or newer ({first.status} on {family} from that release "
            "on), or run on hardware this release supports"
        )
        needs = _release_needs(framework, first.first_version)
        if needs:
            evidence.append(f"{needs[0]}: built-in table, {needs[1]}")
            fix.append(needs[0])
    else:
        fix.append(f"Run {framework} on hardware its documentation lists; no release is documented for {family}")
    if row.status == "unsupported":
        title = f"{label} does not support {name} (family {family})" + (
            "" if row.confidence == "stated" else " (inferred from its release notes)"
        )
        severity = "error" if row.confidence == "stated" else "warning"
        if moves and first is not None:
            data = {"framework": framework, "installed": version, "move_to": first.first_version}
    elif row.status == "experimental":
        title = f"{label} supports {name} (family {family}) only experimentally"
        severity = "info"
    else:
        title = f"{label} on {name} (family {family}): not documented either way"
        severity = "info"
        fix = [f"{framework}'s own documents name no {family} support; check its release notes before relying on it"]
    yield CHIP_UNSUPPORTED.finding(
        title=title, evidence=evidence, fix=fix, severity=severity, subject=f"{framework}:{name}", data=data
    )


def _release_needs(framework: str, release: str) -> Optional[Tuple[str, str]]:
    """``("vllm-ascend 0.14.0rc1 needs torch_npu 2.9.0 and CANN 8.5.0 or newer", source)``:
    what ``framework`` ``release`` documents (the framework table's row), or ``None``
    without a row naming either."""
    rows = rows_for(framework, release)
    if not rows or not (rows[0].torch_npu or rows[0].cann_min):
        return None
    row = rows[0]
    parts = ([f"torch_npu {row.torch_npu}"] if row.torch_npu else []) + (
        [f"CANN {row.cann_min} or newer"] if row.cann_min else []
    )
    return f"{framework} {release} needs {' and '.join(parts)}", row.source


@rule
def chip_support(ctx: RuleContext) -> Iterable[Finding]:
    """DEV040 unsupported family, DEV041 no bf16, DEV042 unknown chip name."""
    chips = ctx.view.devices.chips
    if not chips:
        return
    seen: Dict[str, Dict[str, Any]] = {}
    for chip in chips:
        name = chip.name or ""
        if name and name not in seen:
            seen[name] = chip_identity(ctx.matrix, chip)
    torch_npu = ctx.view.packages.version_of("torch-npu")
    frameworks = _frameworks(ctx)
    for name, ident in sorted(seen.items()):
        family = ident.get("family")
        if not ident["known"]:
            if ctx.matrix is not None:
                when = ctx.matrix.provenance.get("retrieved") or "?"
                yield CHIP_UNKNOWN.finding(
                    title=f"NPU chip {name!r} is not in the chip catalogue of the matrix in use (data of {when}): "
                    "its family, chip support and bf16 are not judged",
                    evidence=[
                        f"npu-smi Name: {name}",
                        f"matrix in use: {ctx.matrix.provenance.get('source', '?')} "
                        f"({ctx.matrix.provenance.get('origin', '?')}), retrieved {when}",
                    ],
                    fix=[refresh_hint(f"chip {name}")],
                    severity="warning",
                    subject=name,
                )
            continue
        soc = ident.get("soc_version") or name
        if ident.get("bf16") is False:
            yield NO_BF16.finding(
                title=f"{name} ({soc}, family {family}) has no bfloat16 support: use float16",
                evidence=[f"npu-smi Name {name} → family {family}, bf16 false (matrix)"]
                + (
                    ["plain `910B` is the first-generation Ascend 910, not the 910B1–B4 (A2) family"]
                    if name == "910B"
                    else []
                ),
                fix=["Use float16: torch_dtype=torch.float16 / --dtype float16 / fp16: true, bf16: false"],
                subject=name,
            )
        soc_ok = soc_known_to_torch_npu(ctx.matrix, str(soc), torch_npu) if torch_npu and ctx.matrix else None
        if soc_ok is False:
            yield CHIP_UNSUPPORTED.finding(
                title=f"torch_npu {torch_npu} does not support {name} ({soc}): "
                f"its SoC table predates {soc} (`Unsupported SOC version: {soc}`)",
                evidence=[
                    f"npu-smi Name {name} → SoC {soc}, family {family}",
                    f"torch_npu {torch_npu} installed; {soc} is listed from the torch_npu "
                    f"v*-{SOC_FIRST_EXT.get(str(soc))} release branches on (NpuVariables.cpp)",
                ],
                fix=[
                    f"Install a torch_npu build of the {SOC_FIRST_EXT.get(str(soc))} line or newer, with its paired "
                    "CANN (see `npudoctor matrix show`)"
                ]
                + (
                    ["310B is an edge SoC: the supported path on it is the ACL/OM inference stack, not torch_npu"]
                    if family in EDGE_FAMILIES
                    else []
                ),
                subject=name,
            )
        elif torch_npu and family in EDGE_FAMILIES:
            yield CHIP_UNSUPPORTED.finding(
                title=f"{name} ({soc}) is an edge SoC (Atlas 200I/500 A2): torch_npu {torch_npu} is not supported "
                "for training on it and frameworks reject it (`Unsupported SOC version`)",
                evidence=[
                    f"npu-smi Name {name} → SoC {soc}, family {family}",
                    "torch_npu install guide, supported hardware: Atlas 200I/500 A2 inference 'x'",
                    "reported: `Unsupported SOC version: Ascend310B4` (Ascend/pytorch#57), "
                    "`SOC_VERSION ascend310b1 does not support` (llama.cpp#10719)",
                ],
                fix=[
                    "Run models on this board with the edge stack: convert to an OM model (ATC "
                    f"--soc_version={soc}) and run it with ACL/pyACL or ais_bench",
                    "For torch_npu training or LLM serving use Atlas A2/A3 (910B*, 910_93) hardware",
                ],
                severity="warning",
                subject=name,
            )
        if torch_npu and ctx.matrix is not None:
            try:
                ok = ctx.matrix.family_supported(str(family), torch_npu)
            except Exception:
                ok = None
            if ok is False:
                yield CHIP_UNSUPPORTED.finding(
                    title=f"torch_npu {torch_npu} does not support {name} ({soc}, family {family})",
                    evidence=[f"npu-smi Name {name} → family {family}", f"torch_npu {torch_npu} installed"],
                    fix=[
                        f"Install a torch_npu release that supports this chip (`npudoctor explain {CHIP_UNSUPPORTED.code}` "
                        "names the hardware each release supports), "
                        "or run on hardware this release supports"
                    ],
                    subject=name,
                )
        for framework, version in frameworks:
            yield from _framework_on_chip(framework, version, name, str(family))


def _floor_finding(ctx: RuleContext, name: str, chip: MatrixChip, floor: CannFloor) -> Optional[Finding]:
    """CANN013 when the selected toolkit is older than ``floor`` (a beta of the floor release
    counts as it); ``None`` otherwise or when either version cannot be ordered."""
    tk = ctx.view.cann.selected
    if tk is None or not tk.version:
        return None
    have = parse_cann(tk.version)
    if have is None or cann_less(have.release, floor.cann) is not True:
        return None
    product = floor.product
    line = f"npu-smi Name {name} → family {chip.family}" + (
        f", product line {chip.product_line}" if chip.product_line else ""
    )
    statement = (
        f"first supporting CANN release of {product}: {floor.cann} "
        + ("(an official note requires it" if floor.statement == "requires" else "(its release notes add the support")
        + (f"; the chip → product link is an inference: {floor.note}" if floor.chips_inferred else "")
        + f") -- source: {floor.source}"
    )
    if floor.documented_unsupported:
        title = f"CANN {tk.version} does not support {product} ({name}); first supporting release {floor.cann}"
        severity = "error"
    else:
        title = f"CANN {tk.version} predates the support of {product} ({name}): first supporting release {floor.cann}"
        severity = "warning"
    arch = host_arch(ctx.view.host, ctx.view.packages)
    return CANN_PREDATES_PRODUCT.finding(
        title=title,
        evidence=[line, toolkit_line(tk), statement],
        fix=[
            install("toolkit", floor.cann, arch, lead=f"Install CANN {floor.cann} or newer (one the HDK supports): "),
            set_env_step(None, floor.cann),
        ],
        severity=severity,
        subject=f"{name}:cann",
        data={"first_supporting": floor.cann, "product": product, "statement": floor.statement},
    )


@rule
def cann_product_floor(ctx: RuleContext) -> Iterable[Finding]:
    """CANN013: the CANN in use is older than the first release supporting the product line
    of an NPU chip of this machine (one finding per chip name and floor)."""
    if ctx.matrix is None or not ctx.view.devices.chips:
        return
    seen: Dict[str, bool] = {}
    for rec in ctx.view.devices.chips:
        name = str(rec.name or "")
        if not name or name in seen:
            continue
        seen[name] = True
        try:
            chip = ctx.matrix.chip(name)
        except Exception:  # a matrix that cannot answer leaves the chip unknown (DEV042)
            chip = None
        if chip is None:
            continue
        for floor in ctx.matrix.floors_for(chip):
            found = _floor_finding(ctx, name, chip, floor)
            if found is not None:
                yield found
