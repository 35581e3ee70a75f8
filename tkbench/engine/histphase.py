"""The response-time histogram phase: after a test's rounds, 4 KiB random writes at
the test's load for the profile's ``response_histogram`` duration, with fio's full
json+ latency histogram.

PTS 2.0.2 asks for the response-time histogram and the confidence-level plot of
4 KiB random writes after steady state (the latency test's T1/QD1) and after write
saturation (at its load).  The phase runs right after the last round, as one fio
job of one point; its record keeps the point as a round keeps it, with the bins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from tkbench.fio import jobfile
from tkbench.fio.results import summarize_round
from tkbench.fio.runner import FioRun
from tkbench.plan.model import PlannedTest
from tkbench.rundir.records import ResponseHistogram, Round

PHASE = "histogram"  # tests/<test>/histogram.json (+ .fio, .out)


def jobfile_text(
    test: PlannedTest, target_options: Mapping[str, object], handoff: jobfile.Handoff | None
) -> str:
    """The phase's job file: the test's round job file for its one point.  A single
    point has nobody to wait for: no prerun hook, no start delay.  ``handoff`` is
    None when fio runs on fio servers, whose hosts run no tkbench hooks (the point
    then starts after fio's usual guard delay, as a round's first point does there)."""
    assert test.histogram_point is not None
    one = replace(test, points=(test.histogram_point,))
    return jobfile.round_jobfile(one, target_options, handoff)


def record(
    test: PlannedTest, run: FioRun, rounds: Sequence[Round], stop_reason: str
) -> ResponseHistogram:
    """The phase as histogram.json keeps it."""
    assert test.histogram_point is not None and run.output is not None
    point = summarize_round([test.histogram_point], run.output, with_bins=True)[0]
    last = rounds[-1] if rounds else None
    return ResponseHistogram(
        test=test.name,
        point=point,
        after_round=last.round if last else 0,
        after=stop_reason,
        idle_seconds=round(max(0.0, run.started - last.ended), 3) if last else 0.0,
        started=run.started,
        ended=run.started + run.seconds,
        fio=run.call(),
    )
