"""The report's sentences and tables as a customer reads them: singular and plural,
sizes under 1 GB, the durations of a round's points, a composite block size in a
legend, percentile columns no row fills, and the staged tests' departures (no fio:
the report is built from typed records and its HTML read)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.test_report_analysis import _queue_plan, _queue_round, manifest, plan, record
from tkbench.kinds.staged.rows import grid_words
from tkbench.report import analysis, fmt, headlines, options, procedure, render
from tkbench.report import rounds as round_parts
from tkbench.report.figures import time_axis
from tkbench.report.model import LatencyRow
from tkbench.report.tables import blank_note, filled_columns
from tkbench.rundir import store
from tkbench.rundir.records import TestPlan
from tkbench.rundir.store import RunData
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


def test_littles_law_note_of_one_outstanding_io_is_singular() -> None:
    rounds = [_queue_round({(4096, 100): (5_000, 200)})]
    text, _ = round_parts.queue_check(_queue_plan(1, 1), rounds)
    assert "kept 100 % of the 1 outstanding I/O fio was given" in text


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


def _row(direction: str, pct: tuple[float | None, ...], samples: int) -> LatencyRow:
    return LatencyRow("4k", "0/100", direction, 1.0, 1.0, 2.0, pct, samples)


def test_a_percentile_no_row_has_is_left_out_and_a_dash_explained() -> None:
    names = ("99", "99.9", "99.99")
    rows = [_row("read", (0.5, None, None), 7_548), _row("write", (None, None, None), 500)]
    assert filled_columns([r.percentiles_ms for r in rows]) == (0,)
    assert blank_note(rows, names) == (
        "No row has enough I/Os for 99.9 % and 99.99 %, so the table leaves them out "
        "(99.9 % needs 10,000, 99.99 % needs 100,000). A dash marks a percentile its row "
        "has too few I/Os for: 4k 0/100 write (500 I/Os): 99 % (needs 1,000)."
    )
    assert blank_note([_row("read", (0.5, 0.7, 0.9), 10**6)], names) == ""


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_the_latency_table_has_only_percentiles_with_a_value() -> None:
    """99 % is asked for but no round recorded it, and no row has the 1,000,000 I/Os of
    99.999 %: neither has a column, and one note says why."""
    percentiles = [99.0, 99.99, 99.999]
    p = dataclasses.replace(plan(), tracking=["lat_mean 4k 0/100"], percentiles=percentiles)
    run = RunData(Path("/r"), manifest(), [store.TestData("iops", p, rounds=_rounds())])
    rep = analysis.analyze(run, options.resolve_options(run.manifest), 0.0)
    table = render.build_document(rep).html.split('<table class="latency', 1)[1]
    head = _text(table.split("</thead>", 1)[0])
    assert head.endswith("IOPS Mean 99.99 % Max")
    note = _text(table.split('<p class="note">', 1)[1].split("</p>", 1)[0])
    assert "shows a dash" not in note and "Blank for" not in note
    assert "No row has enough I/Os for 99.999 %, so the table leaves it out" in note
    assert "No round recorded 99 %, so the table leaves it out." in note


def _rounds() -> list[Any]:
    """Five rounds of 200,000 IOPS, steady in their mean response time."""
    return [
        dataclasses.replace(
            record(n, {(bs, rp): 200_000.0 for bs in (65536, 4096) for rp in (100, 0)}),
            tracking={"lat_mean 4k 0/100": 2.0},
        )
        for n in range(1, 6)
    ]


def _operating(percentiles: list[tuple[float | None, ...]]) -> str:
    rows = [
        SimpleNamespace(
            name=name,
            threads=1,
            iodepth=8,
            iops=2000.0,
            mean_ms=1.0,
            max_ms=9.0,
            percentiles_ms=pct,
            samples=2_227,
            cpu_pct=3.7,
            why="the reason",
        )
        for name, pct in zip(("MaxIOPS", "MinIOPS"), percentiles, strict=True)
    ]
    st = SimpleNamespace(
        rows=rows, percentile_names=("99", "99.9", "99.99"), needed=(1_000, 10_000, 100_000)
    )
    module = render.environment().get_template("stages.html.j2").make_module({"tail_samples": 10})
    return str(module.operating(None, st, SimpleNamespace(operating=[None, None])))


def test_the_operating_points_table_leaves_out_empty_percentiles() -> None:
    html = _operating([(11.6, None, None), (10.8, None, None)])
    head = _text(html.split("</thead>", 1)[0])
    assert head.endswith("Point Threads QD IOPS Mean Max 99 % I/Os CPU %")
    assert "left out of the table" in _text(html)
    assert "left blank" not in _text(html) and "A dash" not in _text(html)
    # a value in one row keeps the column; the other row's cell is a dash
    html = _operating([(11.6, 20.0, None), (10.8, None, None)])
    assert "99.9 %" in _text(html.split("</thead>", 1)[0])
    assert "10.80 – " in _text(html.split("</tbody>", 1)[0]) + " "
    assert "A dash marks a percentile its point has too few I/Os for." in _text(html)


def test_the_demand_intensity_grid_reads_as_one_phrase() -> None:
    assert grid_words([(4, 8), (4, 1), (1, 8), (1, 1)]) == (
        "thread count 4, 1 (outer) x queue depth 8, 1 (inner), 4 loads"
    )
    assert grid_words([(4, 8), (1, 1)]) == "2 loads: T4/Q8, T1/Q1"


def test_cross_stimulus_shows_each_groups_largest_response_time() -> None:
    """The access-groups table has each group's mean response time and its largest
    single one (fio's maximum): the note says what the plots lack, and points to no
    record the customer does not have."""
    group = SimpleNamespace(
        number=1, label="128k sequential", seconds=5.0, samples=5, mean_mbs=121.7,
        mean_ms=8.974, max_ms=41.25,
    )  # fmt: skip
    st = SimpleNamespace(groups=[group], transitions=[], timeline=SimpleNamespace(interval=1.0))
    module = render.environment().get_template("stages.html.j2").make_module({})
    text = _text(str(module.groups(None, st, SimpleNamespace(timeline=None, response=None))))
    assert "1 128k sequential 5 s 5 121.7 8.974 41.25" in text
    assert "record" not in text
    assert "the table gives each group's largest single response time" in text


def test_a_steady_state_by_a_rule_that_is_not_the_pts_s_says_so() -> None:
    """A test judged steady by a rule the run changed (the demo's 3-round window, an
    excursion limit) gets an amber badge and a qualified "yes" on page 1 saying which
    rule, not the plain STEADY STATE a customer would read as the PTS's (a review
    found green badges next to a 3-round window)."""
    run = store.load_run(Path(__file__).parent / "data" / "rundirs" / "file-a")
    rep = analysis.analyze(run, options.resolve_options(run.manifest), 0.0)
    rules = {t.name: t.steady_rule for t in rep.tests}
    assert rules["throughput"] == "3-round window" and rules["wsat"] == ""
    assert rules["latency"] == "3-round window, 0.0001 % data excursion"
    lines = [h for h in rep.headlines if h.label.startswith("128k")]
    assert lines and all(h.steady_rule == "3-round window" for h in lines)
    macros = render.environment().get_template("macros.html.j2").make_module({})

    def badge(rule: str) -> str:
        t = SimpleNamespace(kind="steady", steady=True, status="complete", steady_rule=rule)
        return _text(str(macros.steady_badge(t)))

    assert badge("") == "STEADY STATE"
    assert badge("3-round window") == "STEADY STATE (NOT PTS RULE)"
