"""What ``tkbench show --json`` adds to a test for the parts of the PTS tests beyond
the core ones: write saturation's response times against drive fills."""

from __future__ import annotations

from typing import Any

from .analysis.kinds import kind_of
from .analysis.responses import saturation_responses
from .store import TestData


def test_parts(t: TestData, capacity: int) -> dict[str, Any]:
    """The extra keys of one test in ``show --json``."""
    out: dict[str, Any] = {}
    if kind_of(t.plan).name == "saturation":
        resp = saturation_responses(t.plan, t.rounds, capacity)
        out["response_times"] = resp.to_dict() if resp is not None else None
    return out
