"""The report's sentences and tables as a customer reads them: singular and plural,
sizes under 1 GB, the durations of a round's points, a composite block size in a
legend, the staged tests' departures (no fio: the report's parts are built from typed
records)."""

from __future__ import annotations

import dataclasses

from tests.test_report_analysis import plan, record
from tkbench.kinds.staged.rows import grid_words
from tkbench.report import fmt, headlines, procedure
from tkbench.report import rounds as round_parts
from tkbench.report.figures import time_axis
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


def test_sizes_under_a_gigabyte_are_in_megabytes() -> None:
    assert fmt.gb(67_108_864) == "67.11 MB"
    assert fmt.gb(274_600_000) == "274.6 MB"
    assert fmt.gb(960.2e9) == "960.2 GB"
    assert fmt.capacity(2**26) == "67.11 MB (64.00 MiB, 67,108,864 bytes)"
    assert fmt.capacity(10**12).startswith("1,000 GB (931.3 GiB")


def test_a_short_tests_time_axis_is_in_seconds() -> None:
    assert time_axis([0.05, 0.1, 0.2]) == ([3.0, 6.0, 12.0], "Time since the start of the test (s)")
    minutes = [1.0, 30.0]
    assert time_axis(minutes) == (minutes, "Time since the start of the test (minutes)")


def _composite_plan() -> TestPlan:
    """A composite (bssplit, bs 0) and a 4k point, each at 0/100 and 65/35, 65/35
    tracked too."""
    p = plan()
    pts = [
        dataclasses.replace(p.points[0], bs=bs, read_pct=rp) for bs in (0, 4096) for rp in (0, 65)
    ]
    return dataclasses.replace(p, points=pts, tracking=["iops composite 0/100", "iops 4k 65/35"])


def test_a_composite_block_size_is_named_in_the_convergence_plot() -> None:
    means = {(bs, rp): 100.0 for bs in (0, 4096) for rp in (0, 65)}
    rounds = [record(n, means) for n in (1, 2)]
    title, series = round_parts.convergence(_composite_plan(), rounds, "iops")
    labels = [s.label for s in series]
    assert labels == ["composite 0/100", "4k 0/100", "4k 65/35"]
    # the caption names every series the plot draws
    assert title == "IOPS of every block size at 0/100 and of 4k 65/35 per round"


def test_the_demand_intensity_grid_reads_as_one_phrase() -> None:
    assert grid_words([(4, 8), (4, 1), (1, 8), (1, 1)]) == (
        "thread count 4, 1 (outer) x queue depth 8, 1 (inner), 4 loads"
    )
    assert grid_words([(4, 8), (1, 1)]) == "2 loads: T4/Q8, T1/Q1"
