"""Names the report gives a test's parts: anchors, R/W mixes, tracking variables (pure).

Window means and every other derived number come from :mod:`tkbench.analysis`; the
stored records themselves are typed (:mod:`tkbench.rundir.records`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from tkbench.profile.model import Tracking
from tkbench.rundir.records import TestPlan


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


def tracking_of(plan: TestPlan) -> list[Tracking]:
    """The test's tracking variables (a label tkbench cannot parse is left out)."""
    out = []
    for label in plan.tracking:
        try:
            out.append(Tracking.parse(label))
        except ValueError:
            continue
    return out


def primary_metric(plan: TestPlan) -> str:
    tracking = tracking_of(plan)
    if tracking:
        return tracking[0].metric
    return "iops"
