"""What ``tkbench show --json`` adds to a test for the parts of the PTS tests beyond
the core ones: the drive's temperature per round with its heat events, write
saturation's response times against drive fills, and the response-time histogram
phase's confidence levels; in fio's client/server mode, each fio server's share of
the window (``hosts``, left out of runs without per-host results)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tkbench import kinds
from tkbench.analysis.confidence import histogram_phase
from tkbench.analysis.hosts import host_means
from tkbench.analysis.responses import saturation_responses
from tkbench.analysis.stoprules import kind_of
from tkbench.analysis.thermal import temperature_of
from tkbench.analysis.window import window, window_records
from tkbench.kinds.staged.results import steady_iops
from tkbench.rundir.records import TargetRecord
from tkbench.rundir.store import TestData


def test_parts(t: TestData, target: TargetRecord) -> dict[str, Any]:
    """The extra keys of one test in ``show --json``."""
    out: dict[str, Any] = {"temperature": temperature_of(t, target).to_dict()}
    phase = histogram_phase(t)
    if phase is not None:
        out["response_histogram"] = phase.to_dict()
    if kind_of(t.plan).name == "saturation":
        resp = saturation_responses(t.plan, t.rounds, target.capacity_bytes)
        out["response_times"] = resp.to_dict() if resp is not None else None
    hosts = host_means(window_records(t.rounds, window(t)))
    if hosts:
        out["hosts"] = [h.to_dict() for h in hosts]
    return out


def stage_parts(t: TestData, tests: Sequence[TestData]) -> dict[str, Any]:
    """The keys of a stage of the tests beyond the basic four (tkbench.kinds.staged):
    ``wait_states`` (host idle recovery), ``transitions`` (cross-stimulus recovery),
    ``operating_points`` (composite block size, DIRTH)."""
    plan = t.plan
    if not plan.stage:
        return {}
    out: dict[str, Any] = {"procedure": plan.procedure, "stage": plan.stage}
    out.update(kinds.of_plan(plan).stage_summary(t, tests))  # its stage's keys
    return out


__all__ = ["stage_parts", "steady_iops", "test_parts"]
