"""The measurement window and the values of a workload point over it (pure).

The window is the steady-state window when the test has tracking variables (the last
``window`` rounds of the last segment, steady or not), every round of the last
segment for a fixed test, and the last ``window`` rounds for write saturation.  A
point's window value is the mean of its per-round values (the maximum for maximum
response times); percentiles are read from the window's merged latency histograms,
never averaged.  A mixed point of a test that keeps histograms also has its
percentiles over reads and writes together, from the summed read and write
histograms (:func:`combined_percentiles`).  Checks, history, comparisons, exports
and the report all read values through here.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tkbench.analysis.segments import last_segment
from tkbench.analysis.stoprules import kind_of
from tkbench.fio.output import percentile_from_bins
from tkbench.rundir.records import Direction, PointResult, Round
from tkbench.rundir.store import TestData
from tkbench.vocab import MB, MS, metric

DIRECTIONS = ("read", "write")


def window(test: TestData) -> tuple[int, ...]:
    """Round numbers of the measurement window."""
    seg = last_segment(test.rounds)
    if not seg:
        return ()
    return kind_of(test.plan).window(test.plan, seg)


def window_records(rounds: Sequence[Round], rounds_in_window: Iterable[int]) -> list[Round]:
    """The round records of a window (always within the last segment)."""
    wanted = set(rounds_in_window)
    return [r for r in last_segment(rounds) if r.round in wanted]


def find_point(record: Round, bs: int, read_pct: int) -> PointResult | None:
    """A round's point of ``bs`` and ``read_pct``: of several, the one a tracking
    variable reads (role "", tkbench.kinds.staged)."""
    for p in record.points:
        if p.bs == bs and p.read_pct == read_pct and not p.role:
            return p
    return None


def window_points(test: TestData, bs: int, read_pct: int) -> list[PointResult]:
    records = window_records(test.rounds, window(test))
    return [p for r in records if (p := find_point(r, bs, read_pct)) is not None]


# A percentile is reported only with at least this many I/Os beyond it: 99.99 %
# needs 100,000 I/Os; from fewer, it is merely (close to) the largest value seen.
TAIL_SAMPLES = 10


def samples_needed(pct: float) -> int:
    """I/Os needed before the ``pct`` percentile means anything: ``TAIL_SAMPLES`` of
    them beyond it (99.9 %: 10,000; 99.999 %: 1,000,000).  Rounded to a millionth
    first, so that binary fractions cannot add one (99.9 % gave 10,001)."""
    return math.ceil(round(TAIL_SAMPLES / ((100.0 - pct) / 100.0), 6))


def merge_bins(dirs: Iterable[Direction]) -> dict[int, int]:
    """Sum fio json+ latency bins (``{latency_ns: count}``) over several rounds."""
    total: Counter[int] = Counter()
    for d in dirs:
        for k, c in (d.bins_ns or {}).items():
            n = int(c)
            if n > 0:
                total[int(float(k))] += n
    return total


def pooled_percentiles(
    dirs: Sequence[Direction], keys: Sequence[str]
) -> tuple[dict[str, float], int, str]:
    """Percentiles (ns) of one direction over several rounds, the I/O count, and how.

    Averaging per-round percentiles gives no percentile of anything.  With json+
    bins in every round the rounds' histograms are merged and the percentiles
    read from the merged histogram ("histogram"); without, the largest per-round
    value is given, an upper bound ("largest per-round value").  A percentile
    with fewer than :func:`samples_needed` I/Os behind it is left out.
    """
    active = [d for d in dirs if d.io_bytes]
    count = int(sum(int(d.total_ios or 0) for d in active))
    out: dict[str, float] = {}
    if active and all(d.bins_ns for d in active):
        merged = merge_bins(active)
        count = sum(merged.values())
        for key in keys:
            if count >= samples_needed(float(key)):
                out[key] = percentile_from_bins(merged, float(key))
        return out, count, "histogram"
    for key in keys:
        vals = [d.percentiles_ns[key] for d in active if key in d.percentiles_ns]
        if vals and count >= samples_needed(float(key)):
            out[key] = max(vals)
    return out, count, "largest per-round value"


def point_value(point: PointResult, name: str) -> float:
    """One round's value of a point: ``iops``, ``bw`` (MB/s), ``lat_mean``/``lat_max``/
    ``pNN`` (ms); percentiles of a mixed point are the worse of read and write."""
    return metric(name).read(point)


def value(test: TestData, name: str, bs: int, read_pct: int) -> float:
    """A point's metric over the window (``nan`` when it was not measured): the mean
    of the per-round values, their maximum for ``lat_max``, and for percentiles the
    value pooled over the window (:func:`pooled_percentiles`), the worse of read and
    write for a mixed point; ``nan`` with too few I/Os."""
    m = metric(name)
    pts = window_points(test, bs, read_pct)
    if m.percentile is not None:
        key = m.percentile
        found = [
            pooled_percentiles([getattr(p, d) for p in pts], [key])[0].get(key) for d in DIRECTIONS
        ]
        vals_ns = [v for v in found if v is not None]
        return max(vals_ns) / MS if vals_ns else math.nan
    vals = [v for p in pts if math.isfinite(v := m.read(p))]
    if not vals:
        return math.nan
    if m.window == "max":
        return max(vals)
    return math.fsum(vals) / len(vals)


def spread(test: TestData, name: str, bs: int, read_pct: int) -> float:
    """How much a point's metric moved within the window: (max - min) / mean of its
    per-round values (the PTS data excursion, as a fraction).  ``nan`` for a single
    round or a pooled percentile, which has no per-round value of its own."""
    m = metric(name)
    if m.percentile is not None:
        return math.nan
    vals = [v for p in window_points(test, bs, read_pct) if math.isfinite(v := m.read(p))]
    if len(vals) < 2:
        return math.nan
    avg = math.fsum(vals) / len(vals)
    return (max(vals) - min(vals)) / avg if avg else math.nan


# --------------------------------------------------------------------------- window means


@dataclass(frozen=True)
class DirMean:
    """One direction of a point, over the window rounds."""

    iops: float
    bw_mbs: float
    mean_ms: float
    max_ms: float
    percentiles_ms: dict[str, float]  # pooled over the window; too-few-I/O ones left out
    samples: int = 0  # I/Os behind the percentiles
    percentile_basis: str = ""  # "histogram" or "largest per-round value"


@dataclass(frozen=True)
class Combined:
    """Percentiles of a mixed point over reads and writes together, over the window."""

    samples: int  # I/Os behind them (reads + writes, from the summed histograms)
    percentiles_ms: dict[str, float | None]  # every key asked; None: too few samples
    needed: dict[str, int]  # I/Os each percentile needs (:func:`samples_needed`)

    @property
    def missing(self) -> tuple[str, ...]:
        """The percentiles left blank for too few samples."""
        return tuple(k for k, v in self.percentiles_ms.items() if v is None)

    def to_dict(self) -> dict[str, object]:
        """For ``tkbench show --json`` (kept by hand: ``needed`` is written as
        ``needs_samples``, the key the JSON always had)."""
        return {
            "samples": self.samples,
            "percentiles_ms": dict(self.percentiles_ms),
            "needs_samples": dict(self.needed),
        }


def combined_percentiles(
    reads: Sequence[Direction], writes: Sequence[Direction], keys: Sequence[str]
) -> Combined | None:
    """Percentiles over reads and writes together of a point's window rounds.

    The read and write histograms of every round are summed bin by bin and each
    percentile read from the sum with fio's rule; two percentiles are never
    averaged.  ``None`` unless both directions did I/O and every round that did
    kept its json+ histogram (without them there is nothing to sum).  A percentile
    with fewer than :func:`samples_needed` samples is ``None``.
    """
    active_r = [d for d in reads if d.io_bytes > 0]
    active_w = [d for d in writes if d.io_bytes > 0]
    if not active_r or not active_w:
        return None
    dirs = active_r + active_w
    if not all(d.bins_ns for d in dirs):
        return None
    merged = merge_bins(dirs)
    count = sum(merged.values())
    needed = {k: samples_needed(float(k)) for k in keys}
    found: dict[str, float | None] = {
        k: percentile_from_bins(merged, float(k)) / MS if count >= needed[k] else None for k in keys
    }
    return Combined(samples=count, percentiles_ms=found, needed=needed)


@dataclass(frozen=True)
class PointMean:
    """One workload point, over the window rounds."""

    bs: int
    read_pct: int
    rounds: int
    iops: float
    bw_mbs: float
    lat_mean_ms: float
    lat_max_ms: float
    directions: dict[str, DirMean]
    # reads and writes together, for a mixed point with histograms (else None)
    combined: Combined | None = None


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


def _percentile_keys(dirs: Iterable[Direction]) -> list[str]:
    """The percentiles fio reported, in its order (``"99"``, ``"99.9"`` ...)."""
    keys: list[str] = []
    for d in dirs:
        if d.io_bytes > 0:
            for k in d.percentiles_ns:
                if k not in keys:
                    keys.append(k)
    return keys


def _dir_mean(dirs: Sequence[Direction]) -> DirMean | None:
    active = [d for d in dirs if d.io_bytes > 0]
    if not active:
        return None
    keys = _percentile_keys(active)
    pooled, samples, basis = pooled_percentiles(active, keys)
    return DirMean(
        iops=_mean([d.iops for d in active]),
        bw_mbs=_mean([d.bw_bytes / MB for d in active]),
        mean_ms=_mean([d.lat_mean_ns / MS for d in active]),
        max_ms=max(d.lat_max_ns / MS for d in active),
        percentiles_ms={k: v / MS for k, v in pooled.items()},
        samples=samples,
        percentile_basis=basis,
    )


def point_means(records: Sequence[Round]) -> dict[tuple[int, int], PointMean]:
    """Mean of every point's values over ``records`` (the window rounds); of several
    points of one block size and mix, the one a tracking variable reads."""
    grouped: dict[tuple[int, int], list[PointResult]] = {}
    for r in records:
        for p in r.points:
            if not p.role:
                grouped.setdefault(p.key, []).append(p)
    return {key: point_mean(pts) for key, pts in grouped.items()}


def point_mean(pts: Sequence[PointResult]) -> PointMean:
    """The mean of one point's values over its records ``pts`` (one per window round,
    all of one block size and mix)."""
    directions = {}
    for name in DIRECTIONS:
        dm = _dir_mean([getattr(p, name) for p in pts])
        if dm is not None:
            directions[name] = dm
    reads, writes = [p.read for p in pts], [p.write for p in pts]
    keys = _percentile_keys([*reads, *writes])
    return PointMean(
        bs=pts[0].bs,
        read_pct=pts[0].read_pct,
        rounds=len(pts),
        iops=_mean([p.iops for p in pts]),
        bw_mbs=_mean([p.bw_bytes / MB for p in pts]),
        lat_mean_ms=_mean([p.lat_mean_ns / MS for p in pts]),
        lat_max_ms=max(p.lat_max_ns / MS for p in pts),
        directions=directions,
        combined=combined_percentiles(reads, writes, keys),
    )
