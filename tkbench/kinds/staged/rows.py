"""The requirement rows of the tests of several stages, stage by stage (pure).

Each stage's rows (:func:`stage_rows`: the preconditioning, the wait states, the
access groups, the demand-intensity grid, the operating points) are judged against
its type's reference values (``PTS`` of :mod:`.hir`, :mod:`.xsr`, :mod:`.intensity`),
which the type's ``requirement_rows`` hands over with its source.  None of the values
could be checked against the 2.0.2 text (docs/methodology.md), so every fixed row is
secondhand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tkbench.kinds.pts import common
from tkbench.kinds.pts.common import COMMON, I_AD, wipc
from tkbench.kinds.pts.rows import (
    CHOICE,
    LOAD,
    Ctx,
    Finding,
    NotJudged,
    Requirement,
    Source,
)
from tkbench.kinds.pts.words import mixes, secs, short_load
from tkbench.kinds.staged.reference import COMPOSITE, ZONES, StagedRequirement
from tkbench.units import count, format_duration, format_size

SPLIT = ":".join(f"{b}/{pct}" for b, pct in COMPOSITE)


def _ref(c: Ctx) -> StagedRequirement:
    ref: StagedRequirement = c.ref
    return ref


def _want_load(c: Ctx) -> tuple[int, int]:
    load: tuple[int, int] = _ref(c).load or c.variant.load
    return load


def _pattern(c: Ctx) -> Iterable[Finding]:
    patterns = sorted({p.pattern for p in c.plan.points})
    if patterns != ["random"]:
        yield Finding("random I/O", " and ".join(patterns) + " I/O", "access pattern")


def _block_size(c: Ctx) -> Iterable[Finding]:
    ref = _ref(c)
    splits = {p.bssplit for p in c.plan.points}
    if ref.composite:
        if splits != {SPLIT}:
            yield Finding(
                "the composite mix (0.5 KiB 4 %, ... 4 KiB 67 %, ... 64 KiB 3 %)",
                ", ".join(sorted(s or "one block size" for s in splits)),
                "block sizes",
            )
        return
    if splits != {""}:
        yield Finding("one block size", "a block-size mix (bssplit)", "block sizes")
    if ref.block_size:
        have = sorted({p.bs for p in c.plan.points})
        if have != [ref.block_size]:
            yield Finding(
                format_size(ref.block_size), ", ".join(format_size(b) for b in have), "block sizes"
            )


def _zones(c: Ctx) -> Iterable[Finding]:
    zones = {p.zones for p in c.plan.points}
    want = ZONES if _ref(c).composite else ""
    if zones != {want}:
        yield Finding(
            "50 % of accesses to the first 5 % of the ActiveRange, 30 % to the next 15 %, "
            "20 % to the remaining 80 %"
            if want
            else "accesses spread evenly over the ActiveRange",
            ", ".join(sorted(z or "uniform" for z in zones)),
            "LBA zones",
        )


def _writes(c: Ctx) -> Iterable[Finding]:
    """A stage whose stimulus is 100 % writes (preconditioning, HIR, XSR)."""
    have = sorted({p.read_pct for p in c.plan.points})
    if have != [0]:
        yield Finding("0/100 (100 % writes)", mixes(have), "R/W mix")


def _mix(c: Ctx) -> Iterable[Finding]:
    """The demand-intensity and operating stages' mix (the measured points)."""
    ref = _ref(c)
    if ref.mix is None:
        return
    have = sorted({p.read_pct for p in c.plan.points if p.measured})
    if have != [ref.mix]:
        yield Finding(mixes([ref.mix]), mixes(have), "R/W mix")


def _load_check(c: Ctx) -> Iterable[Finding]:
    want = _want_load(c)
    loads = {(p.numjobs, p.iodepth) for p in c.plan.points}
    if c.plan.stage == "precondition" and loads != {want}:
        yield Finding(
            short_load(*want),
            ", ".join(short_load(*x) for x in sorted(loads)),
            "preconditioning load",
        )
    elif c.plan.stage in ("recovery", "groups") and loads != {want}:
        yield Finding(
            short_load(*want),
            ", ".join(short_load(*x) for x in sorted(loads)),
            "outstanding I/O",
        )


def _intervals(c: Ctx) -> Iterable[Finding]:
    ref, pts = _ref(c), c.plan.points
    if len(pts) != ref.intervals or {p.runtime for p in pts} != {60.0}:
        yield Finding(
            f"{ref.intervals} one-minute intervals",
            f"{count(len(pts), 'interval')} of {secs(sorted({p.runtime for p in pts}))}",
            "preconditioning round",
        )
    tracked = [i for i, p in enumerate(pts) if not p.role]
    wanted = 0 if ref.tracked == "first" else len(pts) - 1
    if tracked != [wanted]:
        yield Finding(
            f"the IOPS of each round's {ref.tracked} interval",
            f"interval {', '.join(str(i + 1) for i in tracked)}",
            "tracking interval",
        )


def _wipc(c: Ctx) -> Iterable[Finding]:
    ref, plan = _ref(c), c.plan
    if ref.wipc != (plan.precondition is not None):
        yield Finding(
            "2x the user capacity of 128k sequential writes after the purge"
            if ref.wipc
            else "none: the stage starts from the purged drive",
            "none" if plan.precondition is None else "2x the user capacity",
            "workload-independent preconditioning",
        )
    elif ref.wipc:
        yield from wipc(c, COMMON.precondition_bs)


def _no_wipc(c: Ctx) -> Iterable[Finding]:
    if c.plan.precondition is not None:
        yield Finding(
            "none: the stage goes on from the stage before it", "a preconditioning of its own"
        )


def _wait_states(c: Ctx) -> Iterable[Finding]:
    ref, pts = _ref(c), c.plan.points
    waits = tuple(p.idle for p in pts if p.idle > 0)
    if waits != ref.wait_states:
        yield Finding(secs(ref.wait_states), secs(waits), "wait states")
    for p in pts:
        if p.idle > 0:
            n = round(p.runtime / (p.busy + p.idle))
            if n != ref.bursts or p.busy != ref.burst:
                yield Finding(
                    f"{ref.bursts} x ({format_duration(ref.burst)} of writes, then the idle)",
                    f"{n} x ({format_duration(p.busy)} of writes, then the idle)",
                    f"wait state {format_duration(p.idle)}",
                )


def _first_burst(c: Ctx) -> Iterable[Finding]:
    """fio 3.33 starts a job's thinktime_iotime clock at the job's start, not at an
    idle period, so its first burst lasts one idle period longer (docs/methodology.md);
    tkbench cannot plan around it with fio 3.33."""
    waits = [p for p in c.plan.points if p.idle > 0]
    if waits:
        longer = ", ".join(format_duration(p.busy + p.idle) for p in waits)
        yield Finding(
            f"{format_duration(waits[0].busy)} of writes before each idle period",
            f"{longer} of writes before the first idle period, as fio 3.33 extends a job's "
            "first thinktime_iotime burst by one idle period",
            "first burst of each wait state",
        )


def _per_minute_max(c: Ctx) -> Iterable[Finding]:
    """XSR's per-minute maximum response time: fio 3.33 logs a window's mean or its
    maximum (log_max_value), not both, and tkbench logs the mean."""
    if c.plan.points:
        yield Finding(
            "throughput, IOPS, mean and maximum response time of every minute",
            "each sample has throughput, IOPS and the mean response time, not the maximum, as "
            "fio 3.33 logs a window's mean or its maximum, not both",
            "maximum response time per minute",
        )


def _baseline(c: Ctx) -> Iterable[Finding]:
    ref = _ref(c)
    base = sorted({p.runtime for p in c.plan.points if p.idle <= 0})
    if base != [ref.baseline]:
        yield Finding(
            f"{format_duration(ref.baseline)} of continuous writes after each wait state",
            secs(base) or "none",
            "return to baseline",
        )


def _groups(c: Ctx) -> Iterable[Finding]:
    ref = _ref(c)
    have = tuple((p.bs, p.pattern, p.runtime) for p in c.plan.points)
    if have != ref.groups:

        def words(gs: Sequence[tuple[int, str, float]]) -> str:
            return ", then ".join(
                f"{format_size(b)} {pat} for {format_duration(s)}" for b, pat, s in gs
            )

        yield Finding(words(ref.groups), words(have), "access groups")


def _sample(c: Ctx) -> Iterable[Finding]:
    want = _ref(c).sample
    if want and c.plan.sample != want:
        yield Finding(
            f"one sample per {format_duration(want)}",
            f"one per {format_duration(c.plan.sample)}" if c.plan.sample else "none",
            "sampling",
        )


def grid_words(order: Sequence[tuple[int, int]]) -> str:
    """The loads of a demand-intensity grid, in the order they ran: a full grid as the
    text words it ("thread count 4, 1 (outer) x queue depth 8, 1 (inner)"), any other
    as its loads ("T4/Q8, T1/Q1")."""
    threads = list(dict.fromkeys(t for t, _ in order))
    depths = list(dict.fromkeys(q for _, q in order))
    if len(threads) > 1 and len(depths) > 1 and order == [(t, q) for t in threads for q in depths]:
        return (
            f"thread count {', '.join(map(str, threads))} (outer) x queue depth "
            f"{', '.join(map(str, depths))} (inner), {count(len(order), 'load')}"
        )
    return f"{count(len(order), 'load')}: {', '.join(short_load(t, q) for t, q in order)}"


def _grid(c: Ctx) -> Iterable[Finding]:
    ref = _ref(c)
    measured = [p for p in c.plan.points if p.measured]
    order = [(p.numjobs, p.iodepth) for p in measured]
    if order != [(t, q) for t in ref.grid for q in ref.grid]:
        yield Finding(
            "thread count 32, 16, 8, 6, 4, 2, 1 (outer) x queue depth 32 ... 1 (inner)",
            grid_words(order),
            "demand-intensity grid",
        )
    pre = [p.runtime for p in c.plan.points if p.role == "prewrite"]
    if pre != [ref.prewrite]:
        yield Finding(
            f"{format_duration(ref.prewrite)} of writes at T32/Q32",
            secs(pre),
            "pre-write of each round",
        )
    if {p.runtime for p in measured} != {60.0}:
        yield Finding(
            "1 minute per load", secs(sorted({p.runtime for p in measured})), "point duration"
        )


def _operating(c: Ctx) -> Iterable[Finding]:
    ref, plan = _ref(c), c.plan
    pre = sorted({p.runtime for p in plan.points if p.role == "prewrite"})
    run = sorted({p.runtime for p in plan.points if p.measured})
    if pre != [ref.operating_prewrite] or run != [ref.operating_runtime]:
        yield Finding(
            f"{format_duration(ref.operating_prewrite)} of writes, then "
            f"{format_duration(ref.operating_runtime)} measured, per point",
            f"{secs(pre)} of writes, then {secs(run)} measured",
            "operating points",
        )
    if plan.response_ceiling and plan.response_ceiling != ref.ceiling:
        yield Finding(
            f"{ref.ceiling * 1e3:g} ms",
            f"{plan.response_ceiling * 1e3:g} ms",
            "MaxIOPS response-time ceiling",
        )


def _histogram(c: Ctx) -> Iterable[Finding]:
    if not c.plan.histogram:
        yield Finding("fio's full response-time histogram of every point", "no histogram")


def _operator_bs(c: Ctx) -> str | None:
    if c.plan.stage != "intensity":
        return None  # stated once, with the stage that measures it
    bs = sorted({p.bs for p in c.plan.points})
    mix = sorted({p.read_pct for p in c.plan.points if p.measured})
    return f"{', '.join(format_size(b) for b in bs)} random, R/W mix {mixes(mix)}"


# ---------------------------------------------------------------- the rows


def _stimulus(src: Source, mix_check: object) -> tuple[Requirement, ...]:
    return (
        Requirement("access pattern", ("points.pattern",), src, _pattern),
        Requirement("block sizes", ("points.bs", "points.bssplit"), src, _block_size),
        Requirement("LBA zones", ("points.zones",), src, _zones),
        Requirement("R/W mix", ("points.read_pct",), src, mix_check),  # type: ignore[arg-type]
    )


def _precondition_rows(src: Source) -> tuple[Requirement, ...]:
    return (
        Requirement(
            "preconditioning load",
            LOAD,
            src,
            _load_check,
        ),
        Requirement(
            "preconditioning round",
            ("points.runtime", "point_runtime", "points.role", "tracking"),
            src,
            _intervals,
        ),
        Requirement(
            "workload-independent preconditioning",
            (
                "precondition",
                "precondition.bs",
                "precondition.total_bytes",
                "precondition.max_duration",
            ),
            src,
            _wipc,
        ),
        Requirement(
            "WIPC load",
            ("precondition.numjobs", "precondition.iodepth"),
            Source(CHOICE, "as the IOPS test's WIPC: the operator's thread count and queue depth"),
            state=lambda c: None,
        ),
        *_stimulus(src, _writes),
    )


def _recovery_rows(src: Source) -> tuple[Requirement, ...]:
    return (
        Requirement(
            "outstanding I/O",
            LOAD,
            src,
            _load_check,
        ),
        Requirement(
            "wait states",
            ("points.idle", "points.busy", "points.runtime", "point_runtime"),
            src,
            _wait_states,
        ),
        Requirement("return to baseline", ("points.runtime",), src, _baseline),
        Requirement("first burst of each wait state", ("points.busy",), src, _first_burst),
        Requirement(
            "sampling",
            ("sample",),
            Source(CHOICE, "tkbench: how finely the bursts are sampled"),
            state=lambda c: None,
        ),
        *_stimulus(src, _writes),
    )


def _groups_rows(src: Source) -> tuple[Requirement, ...]:
    return (
        Requirement(
            "access groups",
            ("points.bs", "points.pattern", "points.runtime", "point_runtime"),
            src,
            _groups,
        ),
        Requirement("R/W mix", ("points.read_pct",), src, _writes),
        Requirement("LBA zones", ("points.zones", "points.bssplit"), src, _zones),
        Requirement(
            "outstanding I/O",
            LOAD,
            src,
            _load_check,
        ),
        Requirement("sampling", ("sample",), src, _sample),
        Requirement("maximum response time per minute", ("sample",), src, _per_minute_max),
    )


def _intensity_rows(src: Source) -> tuple[Requirement, ...]:
    return (
        Requirement(
            "demand-intensity grid",
            (
                "points.numjobs",
                "points.iodepth",
                "points.role",
                "points.runtime",
                "point_runtime",
                "tracking",
                "workload.numjobs",
                "workload.iodepth",
            ),
            src,
            _grid,
        ),
        *_stimulus(src, _mix),
    )


def _operating_rows(src: Source) -> tuple[Requirement, ...]:
    return (
        Requirement(
            "operating points",
            (
                "points.runtime",
                "points.role",
                "response_ceiling",
                "operating",
                "points.numjobs",
                "points.iodepth",
                "point_runtime",
                "workload.numjobs",
                "workload.iodepth",
            ),
            src,
            _operating,
        ),
        Requirement("response-time histogram", ("histogram",), src, _histogram),
        *_stimulus(src, _mix),
    )


# each stage's own rows, by the stage's name (tkbench.plan.model.PlannedTest.stage)
OWN = {
    "precondition": _precondition_rows,
    "recovery": _recovery_rows,
    "groups": _groups_rows,
    "intensity": _intensity_rows,
    "operating": _operating_rows,
}


def stage_rows(src: Source, stage: str) -> tuple[Requirement, ...]:
    """The rows of one stage (``src``: where its type's reference values come from):
    the rows every test shares, the stage's own, and what it says of preconditioning
    (a later stage has none of its own) and of extra statistics (all but the
    operating points, whose histogram is required)."""
    extra: tuple[Requirement, ...] = ()
    if stage != "precondition":
        extra += (Requirement("preconditioning", ("precondition",), src, _no_wipc),)
    if stage != "operating":
        extra += (
            Requirement(
                "extra statistics",
                ("histogram",),
                Source(CHOICE, "more response-time statistics than the stage reports"),
                state=lambda c: None,
            ),
        )
    return (
        *common.workload_rows(False),
        *common.steady_rows(False),
        *OWN[stage](src),
        *common.extra_rows(False),
        *extra,
    )


def operator_stimulus(rows: tuple[Requirement, ...], stage: str) -> tuple[Requirement, ...]:
    """``rows`` of a stage whose block size and mix are the operator's (DIRTH): they are
    stated, and the rest of the stimulus is judged (the preconditioning's 100 %
    writes too)."""
    choice = Requirement(
        "block size and R/W mix",
        ("points.bs", "points.read_pct"),
        Source(CHOICE, f"{I_AD}: DIRTH's block size and mix are the operator's"),
        state=_operator_bs,
    )
    kept = [r for r in rows if r.name != "R/W mix" or stage == "precondition"]
    return (*kept, choice)


NOT_JUDGED = (
    NotJudged("repeat", "a stage runs its points once"),
    NotJudged("kind", "a stage's kind follows from its stage (tkbench.kinds.staged)"),
    NotJudged("stop_written_multiple", "write saturation's limit; no stage has it"),
    NotJudged("max_duration", "write saturation's limit; no stage has it"),
    NotJudged("percentiles", "the statistics reported; more are no departure"),
    NotJudged("tracking", "a stage's tracking follows from its stage (judged with its round)"),
)
