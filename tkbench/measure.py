"""The measured value of a point: its mean over the test's measurement window (pure).

The window is the steady-state window when the test has tracking variables
(the last ``window`` rounds of the last segment, steady or not), every round of
the last segment for a fixed test, and the last ``window`` rounds for write
saturation.  Checks, history and comparisons all read values through here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .engine import segment_verdicts
from .fiojson import percentile_from_bins
from .results import last_segment, metric_value
from .store import RunData, TestData

MS = 1e6  # ns per ms


def window(test: TestData) -> tuple[int, ...]:
    """Round numbers of the measurement window."""
    seg = last_segment(test.rounds)
    if not seg:
        return ()
    if test.plan.get("kind") == "fixed":
        return tuple(int(r["round"]) for r in seg)
    verdicts = segment_verdicts(test.plan, test.rounds)
    if verdicts:
        return next(iter(verdicts.values())).rounds
    size = int((test.plan.get("rounds") or {}).get("window", 5))
    return tuple(int(r["round"]) for r in seg[-size:])


def window_points(test: TestData, bs: int, read_pct: int) -> list[Mapping[str, Any]]:
    wanted = set(window(test))
    out = []
    for r in last_segment(test.rounds):
        if int(r["round"]) not in wanted:
            continue
        for p in r.get("points", []):
            if int(p["bs"]) == bs and int(p["read_pct"]) == read_pct:
                out.append(p)
    return out


# A percentile is reported only with at least this many I/Os beyond it: 99.99 %
# needs 100,000 I/Os; from fewer, it is merely (close to) the largest value seen.
TAIL_SAMPLES = 10


def samples_needed(pct: float) -> int:
    """I/Os needed before the ``pct`` percentile means anything."""
    return math.ceil(TAIL_SAMPLES / (1.0 - pct / 100.0) - 1e-9)


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
        merged: dict[int, int] = {}
        for d in active:
            for k, c in d["bins_ns"].items():
                merged[int(k)] = merged.get(int(k), 0) + int(c)
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


def _directions(point: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [d for d in (point.get("read") or {}, point.get("write") or {}) if d.get("io_bytes")]


def point_value(point: Mapping[str, Any], metric: str) -> float:
    """One point's ``iops``, ``bw`` (MB/s), ``lat_mean``/``lat_max``/``pNN`` (ms).

    Percentiles of a mixed point are the worse of its read and write values.
    """
    if metric in ("iops", "bw", "lat_mean"):
        return metric_value(point, metric)
    if metric == "lat_max":
        return float(point["lat_max_ns"]) / MS
    if metric.startswith("p"):
        key = f"{float(metric[1:]):g}"
        vals = [
            float(d["percentiles_ns"][key])
            for d in _directions(point)
            if key in d.get("percentiles_ns", {})
        ]
        return max(vals) / MS if vals else math.nan
    raise ValueError(f"unknown metric {metric!r}")


def value(test: TestData, metric: str, bs: int, read_pct: int) -> float:
    """Mean of a point's metric over the window (``nan`` when it was not measured).

    Percentiles (``pNN``) are pooled over the window (:func:`pooled_percentiles`),
    the worse of read and write for a mixed point; ``nan`` with too few I/Os.
    """
    pts = window_points(test, bs, read_pct)
    if metric.startswith("p"):
        key = f"{float(metric[1:]):g}"
        found = [
            pooled_percentiles([p.get(d) or {} for p in pts], [key])[0].get(key)
            for d in ("read", "write")
        ]
        vals_ns = [v for v in found if v is not None]
        return max(vals_ns) / MS if vals_ns else math.nan
    vals = [point_value(p, metric) for p in pts]
    vals = [v for v in vals if math.isfinite(v)]
    if not vals:
        return math.nan
    if metric == "lat_max":
        return max(vals)
    return math.fsum(vals) / len(vals)


def spread(test: TestData, metric: str, bs: int, read_pct: int) -> float:
    """How much a point's metric moved within the window: (max - min) / mean of its
    per-round values (the PTS data excursion, as a fraction).  ``nan`` for a single
    round or a pooled percentile, which has no per-round value of its own."""
    if metric.startswith("p"):
        return math.nan
    vals = [point_value(p, metric) for p in window_points(test, bs, read_pct)]
    vals = [v for v in vals if math.isfinite(v)]
    if len(vals) < 2:
        return math.nan
    avg = math.fsum(vals) / len(vals)
    return (max(vals) - min(vals)) / avg if avg else math.nan


HIGHER_IS_BETTER = {"iops": True, "bw": True}


def headline(run: RunData) -> dict[str, float]:
    """Per finished test, its tracking variables' window means: ``"iops: iops 4k 0/100"``.

    Also the 99.99 % latency of latency tests' tracked points.  These are the
    numbers history lists and regressions compare.
    """
    out: dict[str, float] = {}
    for t in run.tests:
        if not t.rounds:
            continue
        for label in t.plan.get("tracking", []):
            metric, bs_text, mix = label.split()
            point = next(
                (p for p in t.plan.get("points", []) if _label_of(p) == f"{bs_text} {mix}"), None
            )
            if point is None:
                continue
            v = value(t, metric, int(point["bs"]), int(point["read_pct"]))
            if math.isfinite(v):
                out[f"{t.name}: {label}"] = v
            if metric == "lat_mean":
                p = value(t, "p99.99", int(point["bs"]), int(point["read_pct"]))
                if math.isfinite(p):
                    out[f"{t.name}: p99.99 {bs_text} {mix}"] = p
    return out


def _label_of(point: Mapping[str, Any]) -> str:
    return str(point.get("label", ""))


def better_is_higher(key: str) -> bool:
    """Whether a headline key (``"TEST: METRIC BS MIX"``) improves upwards."""
    metric = key.split(": ", 1)[-1].split()[0]
    return HIGHER_IS_BETTER.get(metric, False)
