"""The odd drive out of a fleet comparison: the rule (pure, on crafted values) and its
mark in the comparison of the kept run directories (no fio)."""

from __future__ import annotations

import re

import pytest

from tests._rundir_outputs import RUNDIRS
from tkbench.outputs.compare import outliers
from tkbench.report.comparison import comparison_model
from tkbench.report.render import build_comparison_document
from tkbench.rundir.store import load_run


def test_one_drive_far_below_the_others_is_an_outlier() -> None:
    assert outliers([100_000, 98_000, 101_000, 60_000]) == (False, False, False, True)
    assert outliers([100.0, 99.0, 140.0]) == (False, False, True)  # above counts too


def test_a_tight_fleet_marks_nobody_a_few_per_cent_off() -> None:
    # 8 % from the median is many deviations of a tight fleet, but not 20 %
    assert not any(outliers([100.0, 100.1, 99.9, 100.0, 92.0]))


def test_a_widely_spread_fleet_marks_nobody() -> None:
    # 50 % from the median, but no further than the others spread
    assert not any(outliers([50.0, 100.0, 150.0, 75.0, 125.0]))


def test_fewer_than_three_values_have_no_outlier_and_gaps_are_none() -> None:
    assert outliers([100.0, 10.0]) == (False, False)
    assert outliers([100.0, None, 10.0]) == (False, False, False)
    assert outliers([100.0, None, 101.0, 99.0, 40.0]) == (False, False, False, False, True)
    assert outliers([]) == ()


@pytest.mark.parametrize(("values", "odd"), [((1.0, 1.0, 1.0, 1.3), 3), ((5.0, 5.0, 0.0), 2)])
def test_equal_drives_make_any_difference_beyond_20_percent_an_outlier(
    values: tuple[float, ...], odd: int
) -> None:
    # the deviation of equal values is 0: the 20 % alone decides
    assert [i for i, o in enumerate(outliers(values)) if o] == [odd]


def test_the_emulated_drive_is_marked_in_the_fleet_comparison() -> None:
    """Two file runs, the resumed one and the emulator: the emulator's fresh-write
    saturation IOPS (9,446 against about 52,000) is the one outlier of the summary."""
    runs = [load_run(RUNDIRS / n) for n in ("file-a", "emu", "resumed", "file-b")]
    c = comparison_model(runs, generated=0.0)
    marked = [(line.label, i + 1) for line in c.headlines for i, o in enumerate(line.outliers) if o]
    assert marked == [("4k random write saturation, fresh", 2)]
    (line,) = [ln for ln in c.headlines if ln.any_outlier]
    assert line.values[1] == pytest.approx(9446, rel=1e-3)
    html = build_comparison_document(c).html
    cells = re.findall(r'<td class="num outlier">([^<]*)<span class="outlier-mark"', html)
    assert [c.strip() for c in cells] == ["9,446"]
    assert "◆ An outlier: a value further from the median of all runs' values than both" in html
    assert "20 % of that median and 3 times" in html
    # two runs: nothing to mark, and no note
    pair = comparison_model([runs[0], runs[3]], generated=0.0)
    assert not any(ln.any_outlier for ln in pair.headlines)
    assert "An outlier" not in build_comparison_document(pair).html
