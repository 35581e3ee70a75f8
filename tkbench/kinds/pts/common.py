"""Requirements every PTS test shares: data pattern, direct I/O, ActiveRange, the
I/O engine's queue depth, the steady-state rule and the purge (pure).

The 2.0.2 text states them in the IOPS test (and §2.1.24 for steady state); the
other tests are judged by them as the implementations apply them to every test, so
their rows are secondhand there (:func:`rows`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tkbench.kinds.pts.rows import (
    IMPL,
    TEXT,
    Ctx,
    Finding,
    NotJudged,
    Requirement,
    Source,
)
from tkbench.kinds.pts.words import pct, times
from tkbench.units import format_duration, format_size, human_bytes

K = 1024
MINUTE = 60.0
I_AD = "Alan-ADATA/SSS-PTS-TEST (PTS 2.0)"


@dataclass(frozen=True)
class Common:
    """Requirements every test shares."""

    precondition_multiple: float = 2.0  # WIPC: 2x the user capacity ...
    precondition_bs: int = 128 * K  # ... of sequential 128 KiB writes (throughput: its bs)
    data_pattern: str = "random"
    direct: bool = True
    point_runtime: float = MINUTE  # every point of a round; a WSAT round is one point
    window: int = 5  # rounds of the measurement window
    max_excursion: float = 0.20  # data excursion within 20 % of the window mean
    max_slope_excursion: float = 0.10  # fitted line's range within 10 % of the mean
    rounds: int = 25  # a test may stop without steady state at round 25, not before


COMMON = Common()


COMMON_PATTERN = "random"
WINDOW = 5
MAX_EXCURSION = 0.20
MAX_SLOPE_EXCURSION = 0.10
ROUNDS = 25

# fio engines that run one I/O at a time per job whatever iodepth says (fio's HOWTO:
# "synchronous ioengines ... iodepth above 1 has no effect")
SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "null"})

IOPS_TEXT = "PTS 2.0.2, IOPS test (p. 26), as quoted in ccrssaa/py-sss-pts run.py"
SS_TEXT = "PTS 2.0.2 §2.1.24 (p. 17), as quoted in ccrssaa/py-sss-pts run.py"
AS_IOPS = "the IOPS test's text; implementations of PTS 2.0 apply it to every test"
NOT_IN_TEXT = "in no text read; every implementation of PTS 2.0 (ADATA, ljishen, TKperf)"


def _data_pattern(c: Ctx) -> Iterable[Finding]:
    wl = c.plan.workload
    if wl.data_pattern != COMMON_PATTERN:
        yield Finding("random (incompressible) data", f"{wl.data_pattern} data")


def _direct(c: Ctx) -> Iterable[Finding]:
    if not c.plan.workload.direct or any(p.direct is False for p in c.plan.points):
        yield Finding("direct I/O, bypassing the host's page cache", "buffered I/O")


def _active_range(c: Ctx) -> Iterable[Finding]:
    want = c.variant.active_range
    if c.plan.active_range != want:
        yield Finding(f"{want:g} %", f"{c.plan.active_range:g} %")


def engine(c: Ctx) -> str:
    """The fio engine the test runs with (a plan's "auto" is an asynchronous one)."""
    return c.plan.ioengine_used or c.plan.workload.ioengine


def _engine(c: Ctx) -> Iterable[Finding]:
    used = engine(c)
    deep = max((p.iodepth for p in c.plan.points), default=c.plan.workload.iodepth)
    if used in SYNC_ENGINES and deep > 1:
        yield Finding(
            "an I/O engine that keeps the planned queue depth outstanding",
            f"{used}, a synchronous engine: queue depth 1 per thread, not the planned {deep}",
        )


def _host_side(c: Ctx) -> Iterable[Finding]:
    wl = c.plan.workload
    said = [
        w
        for w, on in (
            (f"fsync every {wl.fsync} writes", wl.fsync),
            ("end_fsync", wl.end_fsync),
            ("O_SYNC writes", wl.sync),
            ("page cache dropped", wl.drop_caches),
        )
        if on
    ]
    if said:
        yield Finding("none: the drive's own response to the stimulus", ", ".join(said))


def _window(c: Ctx) -> Iterable[Finding]:
    if c.plan.kind == "steady" and c.plan.rounds.window != WINDOW:
        yield Finding(f"{WINDOW} rounds", f"{c.plan.rounds.window} rounds")


def _excursion(c: Ctx) -> Iterable[Finding]:
    r = c.plan.rounds
    if c.plan.kind == "steady" and r.max_excursion != MAX_EXCURSION:
        yield Finding(f"{pct(MAX_EXCURSION)} of the window mean", pct(r.max_excursion))


def _slope(c: Ctx) -> Iterable[Finding]:
    r = c.plan.rounds
    if c.plan.kind == "steady" and r.max_slope_excursion != MAX_SLOPE_EXCURSION:
        yield Finding(f"{pct(MAX_SLOPE_EXCURSION)} of the window mean", pct(r.max_slope_excursion))


def _round_limit(c: Ctx) -> Iterable[Finding]:
    if c.planned and c.plan.kind == "steady" and c.plan.rounds.max < ROUNDS:
        yield Finding(
            f"rounds until steady state; stopping without it only at round {ROUNDS} or later",
            f"at most {c.plan.rounds.max} rounds, so the test may stop before steady state",
        )


def _sources(iops: bool) -> tuple[Source, Source, Source]:
    text = Source(TEXT, IOPS_TEXT) if iops else Source(IMPL, AS_IOPS)
    window = Source(TEXT, IOPS_TEXT + " (3.2.1.2.3)") if iops else Source(IMPL, AS_IOPS)
    return text, window, Source(TEXT, SS_TEXT)


def workload_rows(iops: bool) -> tuple[Requirement, ...]:
    """Data pattern, direct I/O, ActiveRange; ``iops``: sourced from the IOPS test's
    text (its own rows), else as the implementations apply it to every test."""
    text, _, _ = _sources(iops)
    return (
        Requirement(
            "data pattern",
            ("workload.data_pattern", "workload.compress_percentage"),
            text,
            _data_pattern,
        ),
        Requirement(
            "direct I/O", ("workload.direct", "points.direct"), Source(IMPL, NOT_IN_TEXT), _direct
        ),
        Requirement("ActiveRange", ("active_range", "active_bytes"), text, _active_range),
    )


def steady_rows(iops: bool) -> tuple[Requirement, ...]:
    """The steady-state rule of a test (or stage) that has one."""
    _, window, ss = _sources(iops)
    return (
        Requirement("steady-state window", ("rounds.window",), window, _window),
        Requirement("data excursion limit", ("rounds.max_excursion",), ss, _excursion),
        Requirement("slope excursion limit", ("rounds.max_slope_excursion",), ss, _slope),
        Requirement("round limit", ("rounds.max",), window, _round_limit, plan_only=True),
    )


def extra_rows(iops: bool) -> tuple[Requirement, ...]:
    """The I/O engine, host-side options, and the purge (judged with the target or the
    run's records: tkbench.conformance)."""
    text, _, _ = _sources(iops)
    return (
        Requirement(
            "I/O engine",
            ("workload.ioengine", "ioengine_used"),
            Source(IMPL, "tkbench: the load the test states must be the load fio applies"),
            _engine,
        ),
        Requirement(
            "host-side options",
            ("workload.fsync", "workload.end_fsync", "workload.sync", "workload.drop_caches"),
            Source(IMPL, NOT_IN_TEXT),
            _host_side,
        ),
        Requirement("purge", ("purge",), text),
    )


def rows(iops: bool) -> tuple[Requirement, ...]:
    """Every shared row."""
    return (*workload_rows(iops), *steady_rows(iops), *extra_rows(iops))


# planned parameters that are no stimulus: names, labels, bookkeeping
NOT_JUDGED = (
    NotJudged("name", "the test's name in the run"),
    NotJudged("spec", "the profile's section the test came from"),
    NotJudged("title", "the test's title"),
    NotJudged("notes", "the planner's notes"),
    NotJudged("procedure", "which test of several stages: chooses the rows"),
    NotJudged("stage", "which stage: chooses the rows"),
    NotJudged("points.index", "the point's number"),
    NotJudged("points.label", "the point's label"),
    NotJudged("points.job", "the point's fio job name"),
    NotJudged("points.rw", "fio's rw, derived from pattern and mix (judged there)"),
)


def wipc(c: Ctx, want_bs: int) -> Iterable[Finding]:
    """The amount, block size and completeness of a planned WIPC (also the staged tests')."""
    pre = c.plan.precondition
    if pre is None:
        return
    if pre.bs != want_bs:
        yield Finding(
            f"sequential {format_size(want_bs)} writes",
            f"sequential {format_size(pre.bs)} writes",
            "preconditioning block size",
        )
    if c.capacity > 0:
        want = COMMON.precondition_multiple * c.capacity
        unit = max(pre.bs * max(pre.numjobs, 1), 1)  # the plan rounds up to whole blocks
        if not want <= pre.total_bytes < want + unit:
            yield Finding(
                f"{times(COMMON.precondition_multiple)}, {human_bytes(want)}, written "
                "within the ActiveRange",
                f"{times(pre.total_bytes / c.capacity)}, {human_bytes(pre.total_bytes)}",
                "preconditioning amount",
            )
    if c.planned and pre.max_duration > 0:
        yield Finding(
            f"all {times(COMMON.precondition_multiple)} written",
            f"a time limit of {format_duration(pre.max_duration)} "
            "(precondition.max_duration) may stop it earlier",
            "preconditioning complete",
        )
