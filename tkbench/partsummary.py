"""What ``tkbench show --json`` adds to a test for the parts of the PTS tests beyond
the core ones: the drive's temperature per round with its heat events, write
saturation's response times against drive fills, and the response-time histogram
phase's confidence levels."""

from __future__ import annotations

from typing import Any

from .analysis.confidence import histogram_phase
from .analysis.kinds import kind_of
from .analysis.responses import saturation_responses
from .analysis.thermal import temperature_of
from .records import TargetRecord
from .store import TestData


def test_parts(t: TestData, target: TargetRecord) -> dict[str, Any]:
    """The extra keys of one test in ``show --json``."""
    out: dict[str, Any] = {"temperature": temperature_of(t, target).to_dict()}
    phase = histogram_phase(t)
    if phase is not None:
        out["response_histogram"] = phase.to_dict()
    if kind_of(t.plan).name == "saturation":
        resp = saturation_responses(t.plan, t.rounds, target.capacity_bytes)
        out["response_times"] = resp.to_dict() if resp is not None else None
    return out
