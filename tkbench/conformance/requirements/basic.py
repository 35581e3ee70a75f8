"""The rows of the four basic tests: IOPS, Throughput, Latency, Write Saturation (pure).

The values are :data:`tkbench.conformance.pts.TESTS`; a row here says where each comes
from and how a planned test (one ``test.json``) is judged against it.  The rows that
need every test of a PTS test at once (its block sizes and R/W mixes) are judged by
:func:`group`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tkbench.conformance.pts import TestRequirement, Variant
from tkbench.conformance.ptsstages import COMPOSITE, ZONES
from tkbench.kinds.pts import common
from tkbench.kinds.pts.common import COMMON, I_AD, wipc
from tkbench.kinds.pts.rows import (
    CHOICE,
    IMPL,
    LOAD,
    TEXT,
    Ctx,
    Finding,
    NotJudged,
    Requirement,
    Source,
)
from tkbench.kinds.pts.words import (
    load,
    loop_actual,
    loop_words,
    mixes,
    sizes,
    times,
)
from tkbench.rundir.records import TestPlan
from tkbench.units import format_duration, human_bytes, parse_size

IOPS = Source(TEXT, common.IOPS_TEXT)
W_TP = "SNIA's Throughput page (1.x tests)"
W_SVC = "SNIA's testing-service page (1.x tests)"
P_LJ = "ljishen/SSSPT (2.0.1 page pointers)"
# the statistics of a response-time report: the draft's ART, "5 9s", MRT (and the nines
# between); a test may report more, not fewer
PERCENTILES = (99.0, 99.9, 99.99, 99.999)
HISTOGRAM_SECONDS = 1200.0  # 20 minutes of 4 KiB random writes with the full histogram


def _ref(c: Ctx) -> TestRequirement:
    ref: TestRequirement = c.ref
    return ref


def _pattern(c: Ctx) -> Iterable[Finding]:
    ref = _ref(c)
    patterns = sorted({p.pattern for p in c.plan.points})
    if patterns != [ref.pattern]:
        yield Finding(f"{ref.pattern} I/O", " and ".join(patterns) + " I/O")


def _runtime(c: Ctx) -> Iterable[Finding]:
    runtimes = sorted({p.runtime for p in c.plan.points} or {c.plan.point_runtime})
    if runtimes != [COMMON.point_runtime]:
        yield Finding(
            "1 minute per point"
            + (", a round being one point" if _ref(c).kind == "saturation" else ""),
            ", ".join(format_duration(s) for s in runtimes) + " per point",
        )


def _loop(c: Ctx) -> Iterable[Finding]:
    ref = _ref(c)
    have = [p.key for p in c.plan.points if p.bs in ref.block_sizes and p.read_pct in ref.mixes]
    want = [(b, m) for m in ref.mixes for b in ref.block_sizes if (b, m) in set(have)]
    if have != want:
        yield Finding(loop_words(ref.mixes, ref.block_sizes), loop_actual(have))


def wsat_rule(ref: TestRequirement) -> str:
    return (
        f"continuous 1-minute rounds until {ref.stop_written_multiple:g}x the user capacity "
        f"is written or {format_duration(ref.max_duration)} have passed, whichever comes first"
    )


def _stop(c: Ctx) -> Iterable[Finding]:
    ref, plan = _ref(c), c.plan
    if plan.kind != ref.kind:
        yield Finding(
            "rounds until steady state" if ref.kind == "steady" else wsat_rule(ref),
            {"steady": "rounds until steady state", "saturation": "write saturation"}.get(
                plan.kind, f"{plan.kind} test"
            ),
        )
    elif ref.kind == "saturation" and c.planned:
        limits = (plan.stop_written_multiple, plan.max_duration)
        if limits != (ref.stop_written_multiple, ref.max_duration):
            yield Finding(
                wsat_rule(ref),
                f"stops at {plan.stop_written_multiple:g}x the user capacity written or "
                f"after {format_duration(plan.max_duration)}",
            )


def tracked_key(label: str) -> tuple[int, int]:
    """``iops 64k 65/35`` -> (65536, 65): the point a tracking variable is read from."""
    _, bs, mix = label.split()
    return parse_size(bs), int(mix.split("/")[0])


def _tracking(c: Ctx) -> Iterable[Finding]:
    ref, plan = _ref(c), c.plan
    if ref.kind != "steady" or plan.kind != "steady":
        return
    # those the test's points can measure (a missing point is a departure of its own)
    keys = {p.key for p in plan.points}
    required = [t for t in ref.tracking if tracked_key(t) in keys]
    if sorted(plan.tracking) != sorted(required):
        yield Finding(", ".join(required) or "none", ", ".join(plan.tracking) or "none")


def _loads(plan: TestPlan) -> set[tuple[int, int]]:
    return {(p.numjobs, p.iodepth) for p in plan.points} or {
        (plan.workload.numjobs, plan.workload.iodepth)
    }


def _outstanding(c: Ctx) -> Iterable[Finding]:
    jobs, qd = _ref(c).load or c.variant.load
    loads = _loads(c.plan)
    if loads != {(jobs, qd)}:
        yield Finding(load(jobs, qd), ", ".join(load(*x) for x in sorted(loads)))


def _iops_load(c: Ctx) -> str | None:
    jobs, qd = c.variant.load
    loads = sorted(_loads(c.plan))
    have = ", ".join(load(*x) for x in loads)
    if loads == [(jobs, qd)]:
        return f"{have}, as the text recommends for {c.variant.name}"
    return f"{have} (the text recommends {load(jobs, qd)} for {c.variant.name})"


def _bssplit(c: Ctx) -> Iterable[Finding]:
    ref = _ref(c)
    splits = {p.bssplit for p in c.plan.points}
    want = ":".join(f"{b}/{pct}" for b, pct in COMPOSITE) if ref.block_sizes == (0,) else ""
    if splits != {want}:
        yield Finding(
            "the composite mix (0.5 KiB 4 %, ... 4 KiB 67 %, ... 64 KiB 3 %)"
            if want
            else "one block size per point",
            ", ".join(sorted(s or "one block size" for s in splits)),
        )


def _zones(c: Ctx) -> Iterable[Finding]:
    # WSAT's composite option is CBW's workload: its block sizes and its LBA zones
    want = ZONES if _ref(c).block_sizes == (0,) else ""
    zones = {p.zones for p in c.plan.points}
    if zones != {want}:
        yield Finding(
            f"CBW's LBA zones ({want})" if want else "accesses spread evenly over the ActiveRange",
            ", ".join(sorted(z or "uniform" for z in zones)),
        )


def _no_idle(c: Ctx) -> Iterable[Finding]:
    if any(p.idle > 0 or p.busy > 0 for p in c.plan.points):
        yield Finding("continuous I/O, no host idle", "host idle between bursts")


def _percentiles(c: Ctx) -> Iterable[Finding]:
    missing = [q for q in PERCENTILES if q not in c.plan.percentiles]
    if missing:
        yield Finding(
            "mean, " + ", ".join(f"{q:g} %" for q in PERCENTILES) + " and maximum response times",
            "without " + ", ".join(f"{q:g} %" for q in missing),
        )


def _histogram(c: Ctx) -> Iterable[Finding]:
    if not c.plan.histogram:
        yield Finding("fio's full response-time histogram of every point", "no histogram")


def _histogram_phase(c: Ctx) -> Iterable[Finding]:
    want = (
        f"{format_duration(HISTOGRAM_SECONDS)} of 4k random writes at the test's load after "
        "the rounds, with the full response-time histogram"
    )
    have = c.histogram
    if not c.finished:
        return  # the phase follows the rounds: how the test ended is said instead
    if c.planned and have != HISTOGRAM_SECONDS:
        yield Finding(want, f"{format_duration(have)}" if have else "none")
    elif not c.planned and have is None:
        yield Finding(want, "none recorded")
    elif not c.planned and have is not None and have < HISTOGRAM_SECONDS - 60.0:
        yield Finding(want, f"{format_duration(have)} recorded")


def _precondition(c: Ctx) -> Iterable[Finding]:
    """Workload-independent preconditioning: there or not, its block size, amount."""
    ref, plan = _ref(c), c.plan
    pre = plan.precondition
    if not ref.precondition:
        if pre is not None:
            yield Finding(
                "none: the test starts from the purged drive",
                f"{human_bytes(pre.total_bytes)} of preconditioning",
                "preconditioning",
            )
        return
    if pre is None:
        yield Finding(
            f"{times(COMMON.precondition_multiple)} of sequential writes before the rounds",
            "none",
            "preconditioning",
        )
        return
    bss = plan.block_sizes
    if ref.per_block_size and len(bss) > 1:
        yield Finding(
            "each block size purged and preconditioned on its own, at that block size",
            f"one purge and preconditioning for {sizes(bss)}",
            "purge and preconditioning per block size",
        )
    want_bs = bss[0] if ref.per_block_size and len(bss) == 1 else COMMON.precondition_bs
    yield from wipc(c, want_bs)


def _wipc_load(c: Ctx) -> str | None:
    return None  # the same choice as the test's load (IOPS 2.1.2-2.1.3): nothing more to say


def _choice_words(c: Ctx) -> str | None:
    return None


def rows(name: str) -> tuple[Requirement, ...]:
    """The rows of one of the basic four, by its profile section."""
    iops = name == "iops"
    src = {
        "iops": (IOPS, IOPS, IOPS, IOPS),
        "throughput": (
            Source(IMPL, W_TP),
            Source(IMPL, W_TP),
            Source(IMPL, f"{P_LJ}; {I_AD} (its code; its UI calls it an operator choice)"),
            Source(IMPL, f"{P_LJ}; cloudharmony (per block size)"),
        ),
        "latency": (
            Source(IMPL, f"{W_SVC} (3 block sizes x 3 mixes); values {P_LJ}, {I_AD}"),
            Source(IMPL, f"{P_LJ}, {I_AD}"),
            Source(IMPL, f"{W_SVC} (TC1/QD1)"),
            Source(IMPL, f"{P_LJ} (128 KiB, or 1024 KiB per its note on p. 43)"),
        ),
        "wsat": (
            Source(IMPL, f"{I_AD}, TKperf, a Toshiba HK4E review (RND 4 KiB writes)"),
            Source(IMPL, "TKperf (4x capacity or 24 h); ADATA differs"),
            Source(IMPL, f"{I_AD} (per variant; its UI calls it an operator choice)"),
            Source(IMPL, f"{W_SVC}: purge, no WIPC, from FOB"),
        ),
    }[name]
    stimulus, stop, tcqd, pre = src
    if iops:
        tc_qd = Requirement(
            "outstanding I/O",
            LOAD,
            Source(CHOICE, common.IOPS_TEXT + " (2.1.2-2.1.3: Test Operator Choice)"),
            state=_iops_load,
        )
    else:
        tc_qd = Requirement("outstanding I/O", LOAD, tcqd, _outstanding)
    # in the order a departure is listed in
    out = [
        *common.workload_rows(iops),
        tc_qd,
        Requirement("access pattern", ("points.pattern",), stimulus, _pattern),
        Requirement("point duration", ("points.runtime", "point_runtime"), stimulus, _runtime),
        Requirement("loop order", ("points.bs", "points.read_pct"), stimulus, _loop),
        Requirement("stop rule", ("kind", "stop_written_multiple", "max_duration"), stop, _stop),
        *common.steady_rows(iops),
        Requirement("tracking variables", ("tracking",), stimulus, _tracking),
        Requirement(
            "preconditioning",
            (
                "precondition",
                "precondition.bs",
                "precondition.total_bytes",
                "precondition.max_duration",
            ),
            pre,
            _precondition,
        ),
        Requirement(
            "preconditioning load",
            ("precondition.numjobs", "precondition.iodepth"),
            Source(CHOICE, common.IOPS_TEXT + " (2.1.2-2.1.3: the test's own choice)"),
            state=_wipc_load,
        ),
        *common.extra_rows(iops),
        Requirement("block sizes (composite)", ("points.bssplit",), stimulus, _bssplit),
        Requirement("LBA zones", ("points.zones",), stimulus, _zones),
        Requirement("host idle", ("points.idle", "points.busy"), stimulus, _no_idle),
    ]
    if name in ("latency", "wsat"):
        rt = Source(IMPL, f"the 2.0 r0.7 draft (ART, 5 9s, MRT); {I_AD}")
        out.append(Requirement("response-time statistics", ("percentiles",), rt, _percentiles))
        out.append(
            Requirement(
                "response-time histogram phase",
                ("histogram",) if name == "wsat" else (),
                Source(IMPL, f"{I_AD} (20 min, after the rounds)"),
                _histogram_phase,
            )
        )
    if name == "latency":
        out.append(
            Requirement(
                "response-time histogram",
                ("histogram",),
                Source(IMPL, f"{I_AD} (confidence-level plot of every point)"),
                _histogram,
            )
        )
    else:
        choice = Source(CHOICE, "more response-time statistics than the test reports")
        out.append(
            Requirement(
                "extra statistics", ("percentiles", "histogram"), choice, state=_choice_words
            )
        )
    return tuple(out)


def group(
    ref: TestRequirement, plans: Sequence[TestPlan], variant: Variant, sector: int
) -> Iterable[Finding]:
    """What the tests running one PTS test show together: block sizes, R/W mixes."""
    bss: list[int] = []
    mix: list[int] = []
    for p in plans:
        bss += [b for b in p.block_sizes if b not in bss]
        mix += [m for m in p.mixes if m not in mix]
    required = ref.block_sizes
    if ref.name == "throughput" and variant.letter == "C":
        # PTS-C requires 1024 KiB only; 128 KiB is the operator's to add (SNIA's page)
        required = tuple(b for b in ref.block_sizes if b != 128 * 1024 or b in bss)
    if set(bss) != set(required):
        # the plan drops the points a drive's logical sector does not divide (4Kn: 512)
        dropped = [b for b in required if b not in bss and sector and b % sector]
        why = (
            f" ({sizes(dropped)} dropped, the drive's logical sector being {sector} bytes)"
            if dropped
            else ""
        )
        yield Finding(sizes(required), sizes(bss) + why, "block sizes")
    if set(mix) != set(ref.mixes):
        yield Finding(mixes(ref.mixes), mixes(mix), "R/W mixes")


GROUP_ROWS = {
    "iops": (
        Requirement("block sizes", ("points.bs",), IOPS),
        Requirement("R/W mixes", ("points.read_pct",), IOPS),
    ),
    "throughput": (
        Requirement(
            "block sizes", ("points.bs",), Source(IMPL, W_TP + " (PTS-E 1024 and 128 KiB)")
        ),
        Requirement("R/W mixes", ("points.read_pct",), Source(IMPL, W_TP)),
        Requirement(
            "PTS-C 128 KiB",
            ("points.bs",),
            Source(CHOICE, W_TP + ": PTS-C requires 1024 KiB only"),
        ),
    ),
    "latency": (
        Requirement("block sizes", ("points.bs",), Source(IMPL, f"{P_LJ}, {I_AD}")),
        Requirement("R/W mixes", ("points.read_pct",), Source(IMPL, f"{P_LJ}, {I_AD}")),
    ),
    "wsat": (
        Requirement("block sizes", ("points.bs",), Source(IMPL, I_AD)),
        Requirement("R/W mixes", ("points.read_pct",), Source(IMPL, I_AD)),
        Requirement(
            "optional workload",
            ("points.bs", "points.read_pct", "points.pattern"),
            Source(CHOICE, f"{I_AD}: OLTP, VOD, Meta Data, CBW composite instead of RND 4 KiB W"),
        ),
    ),
}

NOT_JUDGED = (
    NotJudged("repeat", "repetitions of a fixed test; a PTS test's rounds follow its stop rule"),
    NotJudged("points.role", "a role of the tests of several stages; the basic four have none"),
)


def group_choices(
    ref: TestRequirement, plans: Sequence[TestPlan], variant: Variant
) -> Iterable[tuple[str, str]]:
    """The operator choices a PTS test's tests made together, in words."""
    bss = {b for p in plans for b in p.block_sizes}
    if ref.name == "throughput" and variant.letter == "C" and 128 * 1024 in bss:
        yield "PTS-C 128 KiB", "128k run besides the 1024k PTS-C requires"
