"""What ``tkbench show --json`` adds to a test for the parts of the PTS tests beyond
the core ones: the drive's temperature per round with its heat events, write
saturation's response times against drive fills, and the response-time histogram
phase's confidence levels; in fio's client/server mode, each fio server's share of
the window (``hosts``, left out of runs without per-host results)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .analysis import stages
from .analysis.confidence import histogram_phase
from .analysis.hosts import host_means
from .analysis.kinds import kind_of
from .analysis.responses import saturation_responses
from .analysis.thermal import temperature_of
from .analysis.window import window, window_records
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
    rnd = t.rounds[-1] if t.rounds else None
    if plan.stage == "recovery":
        base = steady_iops(tests, plan.spec)
        out["steady_state_iops"] = base
        out["wait_states"] = [
            {
                "idle_s": w.idle_s,
                "bursts": len(w.bursts),
                "mean_iops": round(w.mean_iops, 3),
                "recovery": None if w.recovery is None else round(w.recovery, 4),
                "baseline_iops": None if w.baseline_iops is None else round(w.baseline_iops, 3),
            }
            for w in stages.wait_states(rnd, base)
        ]
    elif plan.stage == "groups":
        out["transitions"] = [
            {
                "from": x.source,
                "to": x.target,
                "group": x.group,
                "recovery_s": x.recovery_s,
                "settled_mbs": round(x.settled_mbs, 3),
            }
            for x in stages.transitions(rnd, plan.rounds.max_excursion / 2)
        ]
    elif plan.stage == "intensity":
        cells = stages.grid(window_records(t.rounds, window(t)))
        out["grid"] = [
            {
                "threads": c.numjobs,
                "iodepth": c.iodepth,
                "iops": round(c.iops, 3),
                "mean_latency_ms": round(c.lat_mean_ns / 1e6, 6),
                "cpu_pct": round(c.cpu_pct, 3),
            }
            for c in cells
        ]
    elif plan.stage == "operating":
        out["operating_points"] = {
            m.name: m.to_dict() for m in stages.operating_results(plan.operating, rnd)
        }
    return out


def steady_iops(tests: Sequence[TestData], spec: str) -> float | None:
    """The steady-state IOPS of a procedure's preconditioning stage (its window mean
    of the tracking variable; None before it has rounds)."""
    pre = next((x for x in tests if x.plan.spec == spec and x.plan.stage == "precondition"), None)
    if pre is None or not pre.rounds or not pre.plan.tracking:
        return None
    label = pre.plan.tracking[0]
    values = [r.tracking[label] for r in window_records(pre.rounds, window(pre))]
    return math.fsum(values) / len(values) if values else None
