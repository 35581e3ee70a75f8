"""What ``tkbench show --json`` adds to a test for the parts of the PTS tests beyond
the core ones: the drive's temperature per round with its heat events, write
saturation's response times against drive fills, and the response-time histogram
phase's confidence levels; in fio's client/server mode, each fio server's share of
the window (``hosts``, left out of runs without per-host results)."""

from __future__ import annotations

from typing import Any

from tkbench.analysis.responses import saturation_responses
from tkbench.kinds.results.analysed import Analysed


def test_parts(a: Analysed) -> dict[str, Any]:
    """The extra keys of one test in ``show --json`` (``a``: analysed with its run's
    target)."""
    t = a.test
    temperature = a.temperature
    assert temperature is not None and a.target is not None  # analyse_run gives it
    out: dict[str, Any] = {"temperature": temperature.to_dict()}
    if a.histogram is not None:
        out["response_histogram"] = a.histogram.to_dict()
    if a.analysis.kind == "saturation":
        resp = saturation_responses(t.plan, t.rounds, a.target.capacity_bytes)
        out["response_times"] = resp.to_dict() if resp is not None else None
    if a.hosts:
        out["hosts"] = [h.to_dict() for h in a.hosts]
    return out


def stage_parts(a: Analysed) -> dict[str, Any]:
    """The keys of a stage of the tests beyond the basic four (tkbench.kinds.staged):
    ``wait_states`` (host idle recovery), ``transitions`` (cross-stimulus recovery),
    ``operating_points`` (composite block size, DIRTH), from what the stage measured
    (``a.staged``, computed once)."""
    plan = a.plan
    if not plan.stage:
        return {}
    out: dict[str, Any] = {"procedure": plan.procedure, "stage": plan.stage}
    out.update(a.type.stage_summary(a))  # its stage's keys
    return out
