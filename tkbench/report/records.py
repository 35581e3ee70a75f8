"""Reading a run's stored records: plans, rounds, points and measurement windows (pure).

The records are the JSON the engine stored (``test.json``, ``rounds/NNNN.json``);
these helpers read them defensively (a missing field is a default, never a crash)
and compute the window means every table of the report shows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import measure
from ..profile import Tracking
from ..results import metric_value
from ..store import TestData

MB = 1e6
MS = 1e6  # nanoseconds per millisecond
DIRECTIONS = ("read", "write")


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def num(value: object, default: float = 0.0) -> float:
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
    return out if math.isfinite(out) else default


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


def anchor(name: str) -> str:
    return "test-" + re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")


def mix_label(read_pct: int) -> str:
    return f"{read_pct}/{100 - read_pct}"


def mix_caption(read_pct: int) -> str:
    """Column heading of a R/W mix: pure reads and writes say so."""
    if read_pct == 100:
        return "100/0 read"
    if read_pct == 0:
        return "0/100 write"
    return mix_label(read_pct)


def segment_of(record: Mapping[str, Any]) -> int:
    return int(record.get("segment", 1))


def last_segment(rounds: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rounds of the last segment (a resumed test may begin a new one)."""
    return measure.last_segment(rounds)


def plan_points(plan: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [p for p in plan.get("points", []) if isinstance(p, dict)]


def block_sizes(plan: Mapping[str, Any]) -> list[int]:
    """Block sizes in the order of the plan (PTS order: largest first)."""
    out: list[int] = []
    for p in plan_points(plan):
        if int(p["bs"]) not in out:
            out.append(int(p["bs"]))
    return out


def mixes(plan: Mapping[str, Any]) -> list[int]:
    """Read percentages in the order of the plan (100/0 first)."""
    out: list[int] = []
    for p in plan_points(plan):
        if int(p["read_pct"]) not in out:
            out.append(int(p["read_pct"]))
    return out


def tracking_of(plan: Mapping[str, Any]) -> list[Tracking]:
    out = []
    for label in plan.get("tracking", []):
        try:
            out.append(Tracking.parse(label))
        except ValueError:
            continue
    return out


def primary_metric(plan: Mapping[str, Any]) -> str:
    tracking = tracking_of(plan)
    if tracking:
        return tracking[0].metric
    return "iops"


def find_point(record: Mapping[str, Any], bs: int, read_pct: int) -> Mapping[str, Any] | None:
    for p in record.get("points", []):
        if int(p.get("bs", -1)) == bs and int(p.get("read_pct", -1)) == read_pct:
            return p
    return None


def point_metric(point: Mapping[str, Any], metric: str) -> float:
    """A point's ``iops`` (IOPS), ``bw`` (MB/s) or ``lat_mean`` (ms), as tracking does."""
    return metric_value(point, metric)


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


def _dir_mean(dirs: Sequence[Mapping[str, Any]]) -> DirMean | None:
    active = [d for d in dirs if num(d.get("io_bytes")) > 0]
    if not active:
        return None
    keys: list[str] = []
    for d in active:
        for k in as_dict(d.get("percentiles_ns")):
            if k not in keys:
                keys.append(k)
    pooled, samples, basis = measure.pooled_percentiles(active, keys)
    return DirMean(
        iops=mean([num(d.get("iops")) for d in active]),
        bw_mbs=mean([num(d.get("bw_bytes")) / MB for d in active]),
        mean_ms=mean([num(d.get("lat_mean_ns")) / MS for d in active]),
        max_ms=max(num(d.get("lat_max_ns")) / MS for d in active),
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
            dm = _dir_mean([as_dict(p.get(name)) for p in pts])
            if dm is not None:
                directions[name] = dm
        out[key] = PointMean(
            bs=key[0],
            read_pct=key[1],
            rounds=len(pts),
            iops=mean([num(p.get("iops")) for p in pts]),
            bw_mbs=mean([num(p.get("bw_bytes")) / MB for p in pts]),
            lat_mean_ms=mean([num(p.get("lat_mean_ns")) / MS for p in pts]),
            lat_max_ms=max(num(p.get("lat_max_ns")) / MS for p in pts),
            directions=directions,
        )
    return out


# --------------------------------------------------------------------------- windows


def measurement_window(test: TestData) -> tuple[int, ...]:
    """Round numbers whose means the tables show (always within the last segment).

    The one definition tkbench has (:func:`tkbench.measure.window`), so the report,
    acceptance checks, history and comparisons agree on every value.
    """
    return measure.window(test)


def window_records(
    rounds: Sequence[Mapping[str, Any]], window: Sequence[int]
) -> list[Mapping[str, Any]]:
    wanted = set(window)
    return [r for r in last_segment(rounds) if int(r["round"]) in wanted]


def workload(plan: Mapping[str, Any]) -> dict[str, Any]:
    return as_dict(plan.get("workload"))
