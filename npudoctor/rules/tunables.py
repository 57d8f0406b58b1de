"""Runtime tunables judged the way their reader reads them.

Reads the ``tunables`` section (probes/tunables.py), the installed torch_npu (``packages``)
and the chip (``devices`` with the matrix); the records, their grammar and sources are in
knowledge/data/tunables.toml.  Codes: ENV008 rejected at start (error), ENV009 read as
something else or without effect (warning), ENV010 a debugging switch left on, ENV011 a
CUDA/NCCL-named variable nothing reads, ENV012 a version floor that cannot be checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.knowledge.chips import package_chip
from npudoctor.knowledge.tunables import (
    AllocKey,
    Variable,
    affinity_parts,
    alloc_pairs,
    cpu_set,
    float_value,
    hccl_mode,
    hccl_number,
    hccl_range,
    hccl_range_problem,
    since_ok,
    table,
)
from npudoctor.knowledge.versions import cann_less
from npudoctor.parsers.numbers import strtol
from npudoctor.remedies import Command, Export, Remedy
from npudoctor.remedies.world import env_fix
from npudoctor.rules import rule
from npudoctor.rules._devfacts import stack_present
from npudoctor.rules._hccl_job import job_shape

if TYPE_CHECKING:
    from typing import Dict, Iterable, List, Optional, Tuple, Union

    from npudoctor.context import RuleContext

READS = ("cann", "container", "devices", "driver", "hccl", "host_limits", "packages", "tunables")
ONLY_WITH = ("tunables",)

REJECTED = codes.get("ENV008")
MISREAD = codes.get("ENV009")
DEBUG = codes.get("ENV010")
CUDA_NAMED = codes.get("ENV011")
VERSION_UNKNOWN = codes.get("ENV012")

#: Chip families (package chip names of the matrix) of Atlas A2/A3.
A2_A3 = ("910b", "A3")


def _unset(name: str) -> Command:
    return Command(("unset", name))


def _src(var: Variable) -> str:
    return f"source: {var.source} (retrieved {table().retrieved})"


def _fix(ctx: RuleContext, var: Variable, value: Optional[str] = None) -> List[Union[Remedy, str]]:
    if value is None:
        return [_unset(var.name)]
    return [env_fix(ctx.view.container.systemd_unit, var.name, value)]


def _choice(ctx: RuleContext, var: Variable, raw: str, torch_npu: Optional[str]) -> Iterable[Finding]:
    number, whole = strtol(raw)
    accepted = ", ".join(str(v) for v in var.values)
    if number in var.newer_values and since_ok(torch_npu, var.newer_since) is False:
        older = ", ".join(str(v) for v in var.values if v not in var.newer_values)
        yield REJECTED.finding(
            title=f"{var.name}={raw}: torch_npu {torch_npu} accepts only {older} and refuses it at start",
            evidence=[
                f"{var.name}={raw!r} reads as {number} (strtol)",
                f"{number} is accepted from torch_npu {' / '.join(var.newer_since)} on; installed: {torch_npu}",
                _src(var),
            ],
            fix=_fix(ctx, var, var.default),
            severity="error",
            subject=var.name,
            data={"value": raw, "read_as": number, "torch_npu": torch_npu},
        )
        return
    if number not in var.values:
        sev = var.outside
        code = REJECTED if sev == "error" else MISREAD
        claim = (
            "torch_npu refuses it at start" if sev == "error" else "torch_npu resets it to the default " + var.default
        )
        yield code.finding(
            title=f"{var.name}={raw} is not one of {accepted}: {claim}",
            evidence=[f"{var.name}={raw!r} reads as {number} (strtol)", f"accepted: {accepted}", _src(var)],
            fix=_fix(ctx, var, var.default),
            severity=sev,
            subject=var.name,
            data={"value": raw, "read_as": number},
        )
        return
    if not whole:
        meaning = f"; {var.off_note}" if number == 0 and var.off_note else ""
        yield MISREAD.finding(
            title=f"{var.name}={raw} is read as {number}{meaning}",
            evidence=[
                f"{var.name}={raw!r}: torch_npu reads it with strtol, which stops at the first non-digit "
                f"(text without digits is 0)",
                _src(var),
            ],
            fix=_fix(ctx, var, str(number) if number != 0 or not var.default else var.default),
            severity=var.text,
            subject=var.name,
            data={"value": raw, "read_as": number},
        )
        return
    if number in var.verbose:
        yield DEBUG.finding(
            title=f"{var.name}={raw} logs at debug/info level: slow in production",
            evidence=[f"{var.name}={raw!r}", _src(var)],
            fix=_fix(ctx, var, var.default),
            severity="info",
            subject=var.name,
        )


def _bool(ctx: RuleContext, var: Variable, raw: str, chip: Optional[str], env: Dict[str, str]) -> Iterable[Finding]:
    number, whole = strtol(raw)
    on = number != 0
    if var.chips and chip is not None:
        return  # judged with the chip by _inf_nan
    if not whole and raw.strip():
        yield MISREAD.finding(
            title=f"{var.name}={raw} is read as {1 if on else 0}: " + ("on" if on else "OFF"),
            evidence=[
                f"{var.name}={raw!r}: torch_npu reads on/off options with strtol; a word is 0 (off), "
                "any non-zero number is 1",
                _src(var),
            ],
            fix=_fix(ctx, var, "1" if not on else "0"),
            severity=var.text,
            subject=var.name,
            data={"value": raw, "read_as": 1 if on else 0},
        )
    if var.on_note and on:
        extra = []
        if var.name == "ASCEND_LAUNCH_BLOCKING" and "TASK_QUEUE_ENABLE" in env:
            extra.append(f"TASK_QUEUE_ENABLE={env['TASK_QUEUE_ENABLE']} is ignored while it is on")
        yield DEBUG.finding(
            title=f"{var.name}={raw} is on: {var.on_note}",
            evidence=[f"{var.name}={raw!r}", *extra, _src(var)],
            fix=_fix(ctx, var),
            severity=var.on_severity or "warning",
            subject=var.name,
        )


def _inf_nan(ctx: RuleContext, env: Dict[str, str], chip: Optional[str]) -> Iterable[Finding]:
    t = table()
    var = t.variables["INF_NAN_MODE_ENABLE"]
    raw = env.get("INF_NAN_MODE_ENABLE")
    force_raw = env.get("INF_NAN_MODE_FORCE_DISABLE")
    if raw is None and force_raw is None:
        return
    enabled = strtol(raw)[0] != 0 if raw is not None else True
    forced = strtol(force_raw)[0] != 0 if force_raw is not None else False
    if chip in A2_A3:
        if not enabled and not forced:
            yield REJECTED.finding(
                title=f"INF_NAN_MODE_ENABLE={raw} (saturation mode) is refused on this Atlas A2/A3 chip",
                evidence=[
                    f"INF_NAN_MODE_ENABLE={raw!r} reads as 0 (strtol: a word is 0); INF_NAN_MODE_FORCE_DISABLE is "
                    + (f"{force_raw!r} (0)" if force_raw is not None else "unset"),
                    f"chip family {chip} (npu-smi, matrix chips table)",
                    _src(var),
                ],
                fix=[
                    _unset("INF_NAN_MODE_ENABLE"),
                    Export("INF_NAN_MODE_FORCE_DISABLE", "1", lead="or, to keep saturation mode on purpose: "),
                ],
                subject="INF_NAN_MODE_ENABLE",
            )
        elif not enabled and forced:
            yield MISREAD.finding(
                title="Saturation mode is forced (INF_NAN_MODE_ENABLE=0, INF_NAN_MODE_FORCE_DISABLE=1): "
                "results differ from the chip's INF/NaN mode",
                evidence=[f"chip family {chip}", _src(var)],
                severity="info",
                subject="INF_NAN_MODE_ENABLE",
            )
    elif chip is not None:
        names = [n for n in ("INF_NAN_MODE_ENABLE", "INF_NAN_MODE_FORCE_DISABLE") if n in env]
        yield MISREAD.finding(
            title=f"{', '.join(names)} has no effect on this chip: it has saturation mode only",
            evidence=[f"chip family {chip} (not Atlas A2/A3)", _src(var)],
            fix=[_unset(n) for n in names],
            severity="info",
            subject="INF_NAN_MODE_ENABLE",
        )


def _int_range(ctx: RuleContext, var: Variable, raw: str) -> Iterable[Finding]:
    number, whole = strtol(raw)
    low, high = var.minimum or 0, var.maximum
    if not whole or high is None or (low <= number <= high and number not in var.excluded):
        return  # not a whole number: HCCL011 owns HCCL's; CANN's atoi/stoull readers take the leading digits
    if number < low and var.name == "HCCL_CONNECT_TIMEOUT":
        shape = job_shape(ctx.view.hccl, ctx.view.devices)
        if shape["multi_process"]["value"] or shape["multi_node"]["value"]:
            return  # HCCL013 gives the job-shape advice
    documented = f"range [{low}, {high}]"
    if var.excluded:
        documented += " except " + ", ".join(str(v) for v in var.excluded)
    instead = str(low if number < low else high)
    claim = ""
    if var.outside_acts_as == "default":
        instead = var.default
        claim = f": {var.reader} uses the default {var.default} instead"
    elif var.outside_acts_as == "max" and number > high:
        claim = f": {var.reader} caps it at {high}"
    elif var.outside_acts_as == "max":
        instead = var.default
    yield MISREAD.finding(
        title=f"{var.name}={raw} is outside the documented {documented}{claim}",
        evidence=[f"{var.name}={raw!r}", _src(var)],
        fix=_fix(ctx, var, instead),
        severity=var.outside,
        subject=var.name,
        data={"value": raw},
    )


def _hbm_mb(ctx: RuleContext) -> Optional[int]:
    sizes = [c.hbm_total_mb for c in ctx.view.devices.chips if c.hbm_total_mb]
    return min(sizes) if sizes else None


def _int_min(ctx: RuleContext, var: Variable, raw: str) -> Iterable[Finding]:
    number, whole = strtol(raw)
    low = var.minimum if var.minimum is not None else 0
    if not whole or number < low:
        yield (REJECTED if var.outside == "error" else MISREAD).finding(
            title=f"{var.name}={raw} is not a whole number >= {low}",
            evidence=[f"{var.name}={raw!r}", _src(var)],
            fix=_fix(ctx, var, var.default or None),
            severity=var.outside,
            subject=var.name,
        )
        return
    hbm = _hbm_mb(ctx) if var.unit_mb else None
    if var.unit_mb and (number >= 1 << 20 or (hbm is not None and 2 * number > hbm)):
        fits = hbm is None or 2 * number <= hbm
        evidence = [f"{var.name}={raw!r} MB; each communicator takes 2 x {var.name}"]
        if hbm is not None:
            evidence.append(f"device memory: {hbm} MB per chip (npu-smi HBM-Usage)")
        if number >= 1 << 20:
            evidence.append(
                "NCCL_BUFFSIZE is in bytes, HCCL_BUFFSIZE in MB: a byte count copied over asks for terabytes"
            )
        yield (MISREAD if fits else REJECTED).finding(
            title=f"{var.name}={raw} MB "
            + ("cannot fit in the chip's memory" if not fits else "is a byte count? HCCL_BUFFSIZE is in MB"),
            evidence=[*evidence, _src(var)],
            fix=_fix(ctx, var, str(max(1, number >> 20)) if number >= 1 << 20 else var.default),
            severity="warning" if fits else "error",
            subject=var.name,
            data={"value": raw, "hbm_mb": hbm},
        )


def _ranges_text(ranges: Dict[int, Tuple[int, int]]) -> str:
    return ",".join(f"npu{n}:{a}-{b}" for n, (a, b) in sorted(ranges.items()))


def _affinity_fix(mode: int, allowed: List[int], npus: int) -> Optional[str]:
    """``mode,npu0:a-b,...``: the allowed CPUs split evenly over ``npus``, when every share
    is a contiguous run of CPUs (else ``None``)."""
    per = len(allowed) // npus if npus else 0
    if per < 1:
        return None
    ranges: Dict[int, Tuple[int, int]] = {}
    for n in range(npus):
        share = allowed[n * per : (n + 1) * per]
        if share[-1] - share[0] != len(share) - 1:
            return None
        ranges[n] = (share[0], share[-1])
    return f"{mode}," + _ranges_text(ranges)


def _affinity(ctx: RuleContext, var: Variable, raw: str) -> Iterable[Finding]:
    mode, ranges, bad = affinity_parts(raw)
    if bad:
        yield MISREAD.finding(
            title=f"CPU_AFFINITY_CONF={raw}: torch_npu cannot read {', '.join(repr(b) for b in bad[:3])}",
            evidence=[
                f"CPU_AFFINITY_CONF={raw!r}",
                "grammar: <mode 0|1|2>,npu<N>:<a>-<b>,...,npu_affine:<0|1>",
                _src(var),
            ],
            fix=[_unset(var.name)],
            subject=var.name,
            data={"malformed": bad},
        )
        return
    if not mode:
        return
    limits = ctx.view.host_limits
    cpus = limits.cpus
    allowed = cpu_set(cpus.allowed_list or "") if cpus is not None else None
    if cpus is None or not allowed:
        return
    allowed_set = set(allowed)
    outside = {n: r for n, r in ranges.items() if not set(range(r[0], r[1] + 1)) <= allowed_set}
    npus = len(ctx.view.devices.chips)
    online = limits.online.count if limits.online is not None else None
    online_source = limits.online.source if limits.online is not None else None
    defaults: Dict[int, Tuple[int, int]] = {}
    if npus and online and online // npus >= 1:
        per = online // npus
        for n in range(npus):
            block = (n * per, (n + 1) * per - 1)
            if n not in ranges and not set(range(block[0], block[1] + 1)) <= allowed_set:
                defaults[n] = block
    if not outside and not defaults:
        return
    fix: List[Union[Remedy, str]] = []
    better = _affinity_fix(mode, allowed, npus) if npus else None
    if better:
        fix.append(
            env_fix(
                ctx.view.container.systemd_unit, var.name, better, note="ranges inside the CPUs this process may use"
            )
        )
    else:
        fix.append(f"Give each NPU an npuN:a-b range inside the allowed CPUs {cpus.allowed_list}")
    evidence = [f"CPU_AFFINITY_CONF={raw!r}", f"{cpus.source}: Cpus_allowed_list {cpus.allowed_list}"]
    if outside:
        evidence.append("explicit ranges outside it: " + _ranges_text(outside))
    if defaults:
        evidence.append(
            f"default ranges ({online} online CPUs / {npus} NPUs, {online_source}) outside it: "
            + _ranges_text(defaults)
        )
    evidence.append(_src(var))
    yield MISREAD.finding(
        title=f"CPU_AFFINITY_CONF={raw} binds nothing: its CPU ranges hold cores this process may not use",
        evidence=evidence,
        fix=fix,
        subject=var.name,
        data={"outside": sorted(outside), "defaults_outside": sorted(defaults)},
    )


def _above(ctx: RuleContext, var: Variable, raw: str, env: Dict[str, str]) -> Iterable[Finding]:
    other_raw = env.get(var.above)
    if other_raw is None:
        return
    value, whole = strtol(raw)
    other, other_whole = strtol(other_raw)
    if not (whole and other_whole) or value <= 0 or other < 0:
        return  # 0: never times out; malformed values are other rules' (HCCL011)
    if other != 0 and value > other:
        return
    never = other == 0
    yield MISREAD.finding(
        title=f"{var.name}={raw} is not above {var.above}={other_raw}"
        + (" (never)" if never else "")
        + ": the stream wait gives up before the collective reports its own timeout",
        evidence=[f"{var.name}={raw!r}", f"{var.above}={other_raw!r}", _src(var)],
        fix=[
            env_fix(
                ctx.view.container.systemd_unit, var.name, "0" if never else str(other + 60), note=f"above {var.above}"
            )
        ],
        subject=var.name,
    )


def _dir_parent(ctx: RuleContext, var: Variable) -> Iterable[Finding]:
    rec = ctx.view.tunables.dirs.get(var.name)
    if rec is None or rec.path is None or rec.exists is not False or rec.parent_exists is not False:
        return
    yield MISREAD.finding(
        title=f"{var.name}={rec.path} is ignored: its parent directory does not exist",
        evidence=[
            f"{rec.path}: missing, and so is its parent (diagnosed root)",
            "torch_npu creates it with one non-recursive mkdir; on failure it warns and leaves the option unset, "
            "so the operator cache goes to the default place",
            _src(var),
        ],
        fix=[Command(("mkdir", "-p", "-m", "750", rec.path))],
        subject=var.name,
    )


def _alloc_value_ok(key: AllocKey, value: str) -> bool:
    if key.value == "bool":
        return value in ("True", "False")
    if key.value == "word":
        return value in key.words
    if key.value == "float_open01":
        number = float_value(value)
        return number is not None and 0 < number < 1
    if key.value == "pow2":
        if value.startswith("["):
            return True  # a per-interval list: judged by torch_npu itself
        n, whole = strtol(value)
        return whole and n >= 0 and (n & (n - 1)) == 0
    n, whole = strtol(value)
    return whole and (key.minimum is None or n >= key.minimum) and (key.maximum is None or n <= key.maximum)


def _alloc_expect(key: AllocKey) -> str:
    if key.value == "bool":
        return "True or False"
    if key.value == "word":
        return " or ".join(key.words)
    if key.value == "float_open01":
        return "a number between 0 and 1 (exclusive)"
    if key.value == "pow2":
        return "a power of 2 (or 0)"
    low = "" if key.minimum is None else f">= {key.minimum}"
    high = "" if key.maximum is None else f"<= {key.maximum}"
    return "a whole number " + " and ".join(x for x in (low, high) if x)


def _alloc(ctx: RuleContext, var: Variable, raw: str, torch_npu: Optional[str]) -> Iterable[Finding]:
    keys = table().alloc_keys
    pairs, bad = alloc_pairs(raw)
    given = dict(pairs)
    problems: List[str] = []
    unknown_version: List[Tuple[str, Tuple[str, ...]]] = []
    for name, value in pairs:
        key = keys.get(name)
        if key is None:
            problems.append(f"{name!r} is not an allocator option (keys are case-sensitive)")
            continue
        known = since_ok(torch_npu, key.since)
        if known is False:
            problems.append(f"{name} is unknown to torch_npu {torch_npu} (first in {', '.join(key.since)})")
            continue
        if known is None and torch_npu is None:
            unknown_version.append((name, key.since))
        if not _alloc_value_ok(key, value):
            problems.append(f"{name}:{value} is not {_alloc_expect(key)}")
    if bad:
        problems.append("cannot read " + ", ".join(repr(b) for b in bad[:3]) + " as key:value")
    expandable = given.get("expandable_segments") == "True"
    if expandable:
        for name in sorted(given):
            key = keys.get(name)
            if key is not None and key.conflicts_expandable:
                problems.append(f"{name} cannot be combined with expandable_segments:True")
    kept = [f"{n}:{v}" for n, v in pairs if n in keys and since_ok(torch_npu, keys[n].since) is not False]
    if problems:
        yield REJECTED.finding(
            title=f"PYTORCH_NPU_ALLOC_CONF={raw} is refused when torch_npu starts: {problems[0]}",
            evidence=[
                f"PYTORCH_NPU_ALLOC_CONF={raw!r}",
                *problems,
                f"judged against torch_npu {torch_npu or '(version unknown)'}",
                _src(var),
            ],
            fix=[_unset(var.name)],
            subject=var.name,
            data={"problems": problems, "kept": kept},
        )
        return
    no_effect = [n for n in given if keys[n].needs_expandable and not expandable]
    if no_effect:
        yield MISREAD.finding(
            title=f"PYTORCH_NPU_ALLOC_CONF: {', '.join(no_effect)} has no effect without expandable_segments:True",
            evidence=[f"PYTORCH_NPU_ALLOC_CONF={raw!r}", _src(var)],
            fix=_fix(ctx, var, ",".join([*kept, "expandable_segments:True"])),
            subject=var.name,
        )
    if "page_size" in given and len(given) > 1:
        yield MISREAD.finding(
            title="PYTORCH_NPU_ALLOC_CONF: page_size is set with other keys; only page_size applies",
            evidence=[f"PYTORCH_NPU_ALLOC_CONF={raw!r}", _src(var)],
            fix=_fix(ctx, var, "page_size:" + given["page_size"]),
            subject=var.name,
        )
    for name, since in unknown_version:
        yield VERSION_UNKNOWN.finding(
            title=f"PYTORCH_NPU_ALLOC_CONF key {name} needs torch_npu {' / '.join(since)} or newer; "
            "the installed version is unknown",
            evidence=[f"PYTORCH_NPU_ALLOC_CONF={raw!r}", "no torch_npu version in the package metadata"],
            subject=f"{var.name}:{name}",
        )


def _hccl_range(
    ctx: RuleContext, var: Variable, raw: str, chip: Optional[str], env: Dict[str, str]
) -> Iterable[Finding]:
    """An HCCL number against its range on the installed chip in the HCCL_OP_EXPANSION_MODE
    in effect ([[hccl_range]])."""
    exec_timeout = var.name == "HCCL_EXEC_TIMEOUT"
    parsed = hccl_number(raw, var.number_format)
    if parsed is None:
        if exec_timeout:
            return  # HCCL011 owns a malformed timeout
        yield (REJECTED if var.outside == "error" else MISREAD).finding(
            title=f"{var.name}={raw} is not a whole number: HCCL refuses it at communicator init (EI0001)",
            evidence=[f"{var.name}={raw!r}", _src(var)],
            fix=_fix(ctx, var, var.default),
            severity=var.outside,
            subject=var.name,
        )
        return
    number, decimals = parsed
    if exec_timeout and number == 0:
        return  # HCCL012 owns 0
    given_mode = env.get("HCCL_OP_EXPANSION_MODE")
    if chip is None:
        defaults = {m.default for m in table().hccl_modes.values()}
        flagged = [
            f"{', '.join(rec.chips) or 'any chip'}: {claim}"
            for rec in table().hccl_ranges
            if rec.name == var.name
            and (not rec.modes or (given_mode in rec.modes if given_mode else bool(defaults & set(rec.modes))))
            for claim, _ in [hccl_range_problem(rec, number, decimals) or ("", None)]
            if claim
        ]
        if flagged:
            yield VERSION_UNKNOWN.finding(
                title=f"{var.name}={raw}: its range depends on the chip, which is unknown here",
                evidence=[f"{var.name}={raw!r}", *flagged[:4], _src(var)],
                subject=var.name,
                data={"value": raw},
            )
        return
    mode, how = hccl_mode(chip, given_mode)
    rec = hccl_range(var.name, chip, mode)
    if rec is None:
        return
    if decimals and rec.decimals and rec.decimals_since_cann:
        cann = ctx.view.cann.version
        older = cann_less(cann, rec.decimals_since_cann)
        if older is not False:
            judged = f"CANN {cann}" if cann else "the CANN version is unknown"
            yield (MISREAD if older else VERSION_UNKNOWN).finding(
                title=f"{var.name}={raw}: decimals are documented from CANN {rec.decimals_since_cann} on; "
                + (f"CANN {cann}'s reference gives whole seconds" if older else "the installed CANN is unknown"),
                evidence=[f"{var.name}={raw!r}", f"judged against {judged}; {how}", f"{rec.source}; {_src(var)}"],
                fix=_fix(ctx, var, str(max(1, int(number)))) if older else [],
                severity="warning" if older else "info",
                subject=var.name,
                data={"value": raw, "cann": cann},
            )
            return
    problem = hccl_range_problem(rec, number, decimals)
    if problem is None:
        return
    claim, instead = problem
    severity = "warning" if claim.startswith("acts as") else var.outside
    names = sorted({str(c.name) for c in ctx.view.devices.named_chips if c.name})
    judged = f"judged against {', '.join(names) or 'the installed chip'} ({chip} in the matrix); {how}"
    yield (REJECTED if severity == "error" else MISREAD).finding(
        title=f"{var.name}={raw} {claim}",
        evidence=[f"{var.name}={raw!r}", judged, f"{rec.source}; {_src(var)}"],
        fix=_fix(ctx, var, instead if instead is not None else var.default),
        severity=severity,
        subject=var.name,
        data={"value": raw, "chip": chip, "mode": mode},
    )


def _twins(ctx: RuleContext, env: Dict[str, str]) -> Iterable[Finding]:
    t = table()
    for name in sorted(t.twins):
        if name not in env:
            continue
        twin = t.twins[name]
        value = env[name]
        npu_set = twin.npu in env
        fix: List[Union[Remedy, str]] = []
        if not npu_set and twin.same_value and value.strip():
            fix.append(
                env_fix(
                    ctx.view.container.systemd_unit,
                    twin.npu,
                    value,
                    note=f"the variable the NPU stack reads instead of {name}",
                )
            )
        fix.append(_unset(name))
        yield CUDA_NAMED.finding(
            title=f"{name}={value} has no effect on Ascend NPUs"
            + (f": {twin.npu} is set" if npu_set else f"; {twin.npu} is the variable read, and it is unset"),
            evidence=[
                f"{name}={value!r}",
                f"{twin.npu}=" + (repr(env[twin.npu]) if npu_set else "(unset)"),
                twin.source,
            ],
            fix=fix,
            severity="info" if npu_set else "warning",
            subject=name,
        )


@rule
def runtime_tunables(ctx: RuleContext) -> Iterable[Finding]:
    """ENV008-ENV012: the runtime tunables set, read as torch_npu/CANN/HCCL read them."""
    if not stack_present(ctx.view):
        return  # settings the NPU stack reads: a machine without one (HOST050) hears nothing of them
    env = dict(ctx.view.tunables.variables)
    if not env:
        return
    t = table()
    torch_npu = ctx.view.packages.version_of("torch_npu")
    chip = package_chip(ctx.matrix, ctx.view.devices)
    for name in sorted(env):
        var = t.variables.get(name)
        if var is None:
            continue
        raw = env[name]
        if var.grammar == "choice":
            yield from _choice(ctx, var, raw, torch_npu)
        elif var.grammar == "bool":
            yield from _bool(ctx, var, raw, chip, env)
        elif var.grammar == "word" and raw not in var.words:
            yield MISREAD.finding(
                title=f"{name}={raw} is not one of {', '.join(var.words)}: {var.off_note}",
                evidence=[f"{name}={raw!r}", _src(var)],
                fix=_fix(ctx, var, var.default),
                severity=var.outside,
                subject=name,
            )
        elif var.grammar == "int_min":
            yield from _int_min(ctx, var, raw)
        elif var.grammar == "int_range":
            yield from _int_range(ctx, var, raw)
        elif var.grammar == "affinity":
            yield from _affinity(ctx, var, raw)
        elif var.grammar == "set" and raw.strip():
            yield DEBUG.finding(
                title=f"{name}={raw} is set: {var.on_note}",
                evidence=[f"{name}={raw!r}", _src(var)],
                fix=[_unset(name)],
                severity=var.on_severity or "info",
                subject=name,
            )
        elif var.grammar == "dir_parent":
            yield from _dir_parent(ctx, var)
        elif var.grammar == "above":
            yield from _above(ctx, var, raw, env)
        elif var.grammar == "hccl_range":
            yield from _hccl_range(ctx, var, raw, chip, env)
        elif var.grammar == "alloc" and raw.strip():
            yield from _alloc(ctx, var, raw, torch_npu)
    yield from _inf_nan(ctx, env, chip)
    yield from _twins(ctx, env)
