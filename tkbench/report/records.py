"""Reading a test's stored plan for the report: its points, sizes, mixes and labels (pure).

The records are the JSON the engine stored (``test.json``); these helpers read them
defensively (a missing field is a default, never a crash).  Window means and every
other derived number come from :mod:`tkbench.analysis`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..profile import Tracking


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


def workload(plan: Mapping[str, Any]) -> dict[str, Any]:
    return as_dict(plan.get("workload"))
