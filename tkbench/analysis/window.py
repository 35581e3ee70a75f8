"""The measurement window and the values of a workload point over it (pure).

The window is the steady-state window when the test has tracking variables (the last
``window`` rounds of the last segment, steady or not), every round of the last
segment for a fixed test, and the last ``window`` rounds for write saturation.  A
point's window value is the mean of its per-round values (the maximum for maximum
response times); percentiles are read from the window's merged latency histograms,
never averaged.  Checks, history, comparisons, exports and the report all read
values through here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..fiojson import percentile_from_bins
from ..store import TestData
from ..vocab import MB, MS, metric
from .kinds import kind_of
from .segments import last_segment

DIRECTIONS = ("read", "write")


def window(test: TestData) -> tuple[int, ...]:
    """Round numbers of the measurement window."""
    seg = last_segment(test.rounds)
    if not seg:
        return ()
    return kind_of(test.plan).window(test.plan, seg)


def window_records(
    rounds: Sequence[Mapping[str, Any]], rounds_in_window: Iterable[int]
) -> list[Mapping[str, Any]]:
    """The round records of a window (always within the last segment)."""
    wanted = set(rounds_in_window)
    return [r for r in last_segment(rounds) if int(r["round"]) in wanted]


def find_point(record: Mapping[str, Any], bs: int, read_pct: int) -> Mapping[str, Any] | None:
    for p in record.get("points", []):
        if int(p.get("bs", -1)) == bs and int(p.get("read_pct", -1)) == read_pct:
            return p
    return None


def window_points(test: TestData, bs: int, read_pct: int) -> list[Mapping[str, Any]]:
    records = window_records(test.rounds, window(test))
    return [p for r in records if (p := find_point(r, bs, read_pct)) is not None]


# A percentile is reported only with at least this many I/Os beyond it: 99.99 %
# needs 100,000 I/Os; from fewer, it is merely (close to) the largest value seen.
TAIL_SAMPLES = 10


def samples_needed(pct: float) -> int:
    """I/Os needed before the ``pct`` percentile means anything."""
    return math.ceil(TAIL_SAMPLES / (1.0 - pct / 100.0) - 1e-9)


def merge_bins(dirs: Iterable[Mapping[str, Any]]) -> dict[int, int]:
    """Sum fio json+ latency bins (``{latency_ns: count}``) over several rounds."""
    total: dict[int, int] = {}
    for d in dirs:
        for k, c in (d.get("bins_ns") or {}).items():
            n = int(c)
            if n > 0:
                key = int(float(k))
                total[key] = total.get(key, 0) + n
    return total


def pooled_percentiles(
    dirs: Sequence[Mapping[str, Any]], keys: Sequence[str]
) -> tuple[dict[str, float], int, str]:
    """Percentiles (ns) of one direction over several rounds, the I/O count, and how.

    Averaging per-round percentiles gives no percentile of anything.  With json+
    bins in every round the rounds' histograms are merged and the percentiles
    read from the merged histogram ("histogram"); without, the largest per-round
    value is given, an upper bound ("largest per-round value").  A percentile
    with fewer than :func:`samples_needed` I/Os behind it is left out.
    """
    active = [d for d in dirs if d.get("io_bytes")]
    count = int(sum(int(d.get("total_ios") or 0) for d in active))
    out: dict[str, float] = {}
    if active and all(d.get("bins_ns") for d in active):
        merged = merge_bins(active)
        count = sum(merged.values())
        for key in keys:
            if count >= samples_needed(float(key)):
                out[key] = percentile_from_bins(merged, float(key))
        return out, count, "histogram"
    for key in keys:
        vals = [
            float(d["percentiles_ns"][key]) for d in active if key in d.get("percentiles_ns", {})
        ]
        if vals and count >= samples_needed(float(key)):
            out[key] = max(vals)
    return out, count, "largest per-round value"


def point_value(point: Mapping[str, Any], name: str) -> float:
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
            pooled_percentiles([p.get(d) or {} for p in pts], [key])[0].get(key) for d in DIRECTIONS
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


def _num(value: object) -> float:
    """A stored number; a missing or non-finite one counts as 0."""
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return 0.0


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


def _dir_mean(dirs: Sequence[Mapping[str, Any]]) -> DirMean | None:
    active = [d for d in dirs if _num(d.get("io_bytes")) > 0]
    if not active:
        return None
    keys: list[str] = []
    for d in active:
        for k in d.get("percentiles_ns") or {}:
            if k not in keys:
                keys.append(k)
    pooled, samples, basis = pooled_percentiles(active, keys)
    return DirMean(
        iops=_mean([_num(d.get("iops")) for d in active]),
        bw_mbs=_mean([_num(d.get("bw_bytes")) / MB for d in active]),
        mean_ms=_mean([_num(d.get("lat_mean_ns")) / MS for d in active]),
        max_ms=max(_num(d.get("lat_max_ns")) / MS for d in active),
        percentiles_ms={k: v / MS for k, v in pooled.items()},
        samples=samples,
        percentile_basis=basis,
    )


def point_means(records: Sequence[Mapping[str, Any]]) -> dict[tuple[int, int], PointMean]:
    """Mean of every point's values over ``records`` (the window rounds)."""
    grouped: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
    for r in records:
        for p in r.get("points", []):
            grouped.setdefault((int(p["bs"]), int(p["read_pct"])), []).append(p)
    out = {}
    for key, pts in grouped.items():
        directions = {}
        for name in DIRECTIONS:
            dm = _dir_mean([p.get(name) or {} for p in pts])
            if dm is not None:
                directions[name] = dm
        out[key] = PointMean(
            bs=key[0],
            read_pct=key[1],
            rounds=len(pts),
            iops=_mean([_num(p.get("iops")) for p in pts]),
            bw_mbs=_mean([_num(p.get("bw_bytes")) / MB for p in pts]),
            lat_mean_ms=_mean([_num(p.get("lat_mean_ns")) / MS for p in pts]),
            lat_max_ms=max(_num(p.get("lat_max_ns")) / MS for p in pts),
            directions=directions,
        )
    return out
