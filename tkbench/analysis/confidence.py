"""The response-time histogram phase read back: its histogram and confidence levels
(pure).

The phase (tkbench/engine/histphase.py) kept fio's full json+ latency histogram of 4 KiB
random writes.  The confidence level of a response time is the share of I/Os that
completed within it; the table and plot give the response time at the levels
:data:`LEVELS` (1 % ... 99.9999 %), each read from the histogram with fio's own
percentile rule and shown only with at least ten I/Os beyond it
(:func:`~.window.samples_needed`: 99.9999 % needs 10,000,000 I/Os).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tkbench.analysis.window import DIRECTIONS, merge_bins, samples_needed
from tkbench.fio.output import percentile_from_bins
from tkbench.rundir.records import Direction
from tkbench.rundir.store import TestData
from tkbench.typed import Typed
from tkbench.vocab import MS

LEVELS = (1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 99.999, 99.9999)


@dataclass(frozen=True)
class Level:
    percent: float
    ms: float | None  # None: fewer than samples_needed(percent) I/Os
    needed: int  # I/Os this level needs


@dataclass(frozen=True)
class HistogramPhase(Typed):
    """The phase of one test: what ran, and its response-time distribution (its
    fields for ``tkbench show --json``, without the bins, which are in
    histogram.json)."""

    bs: int
    read_pct: int
    numjobs: int
    iodepth: int
    seconds: float  # as planned (fio's runtime)
    after: str  # what the last round before it ended ("steady state reached", ...)
    after_round: int
    idle_seconds: float
    ios: int
    iops: float
    mean_ms: float
    max_ms: float
    levels: tuple[Level, ...]
    # (response time in ns, I/Os), ascending
    bins_ns: tuple[tuple[int, int], ...] = field(metadata={"internal": True})
    percentiles_of: str  # "lat" (submission + completion) or "clat"

    @property
    def missing(self) -> tuple[Level, ...]:
        return tuple(level for level in self.levels if level.ms is None)


def _active(d: Direction) -> bool:
    return d.io_bytes > 0


def histogram_phase(t: TestData) -> HistogramPhase | None:
    """The test's response-time histogram phase (None: it did not run)."""
    rec = t.response_histogram
    if rec is None:
        return None
    p = rec.point
    dirs = [d for d in (getattr(p, n) for n in DIRECTIONS) if _active(d)]
    bins = merge_bins(dirs)
    ios = sum(bins.values()) if bins else int(sum(int(d.total_ios or 0) for d in dirs))
    levels = []
    for pct in LEVELS:
        need = samples_needed(pct)
        ms = percentile_from_bins(bins, pct) / MS if bins and ios >= need else None
        levels.append(Level(percent=pct, ms=ms, needed=need))
    return HistogramPhase(
        bs=p.bs,
        read_pct=p.read_pct,
        numjobs=p.numjobs,
        iodepth=p.iodepth,
        seconds=p.runtime or rec.ended - rec.started,
        after=rec.after,
        after_round=rec.after_round,
        idle_seconds=rec.idle_seconds,
        ios=ios,
        iops=p.iops,
        mean_ms=p.lat_mean_ns / MS,
        max_ms=p.lat_max_ns / MS,
        levels=tuple(levels),
        bins_ns=tuple(sorted(bins.items())),
        percentiles_of=next((d.percentiles_of for d in dirs), "clat"),
    )
