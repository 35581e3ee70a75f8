"""The report's sentences and tables as a customer reads them: singular and plural,
the durations of a round's points, the staged tests' departures (no fio: the report's
parts are built from typed records)."""

from __future__ import annotations

import dataclasses

from tests.test_report_analysis import plan
from tkbench.kinds.staged.rows import grid_words
from tkbench.report import headlines, procedure
from tkbench.rundir.records import TestPlan
from tkbench.units import count


def _load(numjobs: int, iodepth: int) -> TestPlan:
    p = plan()
    return dataclasses.replace(
        p,
        workload=dataclasses.replace(p.workload, numjobs=numjobs, iodepth=iodepth),
        points=[dataclasses.replace(x, numjobs=numjobs, iodepth=iodepth) for x in p.points],
    )


def test_one_job_and_one_outstanding_io_are_singular() -> None:
    assert (count(1, "job"), count(2, "job"), count(1000, "interval")) == (
        "1 job",
        "2 jobs",
        "1,000 intervals",
    )
    assert headlines._load_detail(_load(1, 32)) == "1 job × QD 32"
    assert headlines._load_detail(_load(2, 8)) == "2 jobs × QD 8"
    assert procedure.outstanding(_load(1, 1)) == "1 job × queue depth 1 (1 outstanding I/O)"
    assert procedure.outstanding(_load(4, 8)) == "4 jobs × queue depth 8 (32 outstanding I/Os)"


def test_a_rounds_points_add_up_to_the_round() -> None:
    """Host idle recovery's points differ: each one's duration in the order they run."""
    assert (
        procedure.points_text([6.0, 3.0, 9.0, 3.0], 21.0)
        == "4, back to back: 6 s, 3 s, 9 s, 3 s (21 s per round)"
    )
    assert procedure.points_text([0.5] * 6, 3.0) == "6, back to back, 500 ms each (3 s per round)"


def test_the_demand_intensity_grid_reads_as_one_phrase() -> None:
    assert grid_words([(4, 8), (4, 1), (1, 8), (1, 1)]) == (
        "thread count 4, 1 (outer) x queue depth 8, 1 (inner), 4 loads"
    )
    assert grid_words([(4, 8), (1, 1)]) == "2 loads: T4/Q8, T1/Q1"
