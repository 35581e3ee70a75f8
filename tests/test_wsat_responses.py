"""Write saturation's response times against drive fills (tkbench.analysis.responses):
ART, five nines and MRT per round, by drive-fill interval, and when five nines is
left out.  Records are built by hand here, so every expected number is known."""

from __future__ import annotations

import pytest

from tkbench.analysis.responses import NEEDED, saturation_responses
from tkbench.fio.output import percentile_from_bins
from tkbench.rundir.records import Direction, PlannedPoint, PointResult, Round, TestPlan
from tkbench.rundir.records.test import Limits

CAP = 1_000_000_000  # user capacity (bytes)


def plan(read_pct: int = 0, window: int = 2) -> TestPlan:
    point = PlannedPoint(bs=4096, read_pct=read_pct, label="4k", job="p0", runtime=60.0)
    return TestPlan(
        name="wsat",
        kind="saturation",
        points=(point,),
        tracking=("iops 4k 0/100",),
        rounds=Limits(window=window),
    )


def direction(ios: int, mean_ns: float, max_ns: float, p5: float | None, bins=None) -> Direction:
    return Direction(
        io_bytes=ios * 4096.0,
        total_ios=ios,
        iops=ios / 60.0,
        lat_mean_ns=mean_ns,
        lat_max_ns=max_ns,
        percentiles_of="lat",
        percentiles_ns={} if p5 is None else {"99.999": p5},
        bins_ns=None if bins is None else {str(k): v for k, v in bins.items()},
    )


def rnd(n: int, written: float, write: Direction, read: Direction | None = None) -> Round:
    read = read or Direction()
    ios = (write.total_ios or 0) + (read.total_ios or 0)
    mean = write.lat_mean_ns * (write.total_ios or 0) + read.lat_mean_ns * (read.total_ios or 0)
    point = PointResult(
        bs=4096,
        read_pct=0 if not read.io_bytes else 50,
        lat_mean_ns=mean / ios,
        lat_max_ns=max(write.lat_max_ns, read.lat_max_ns),
        read=read,
        write=write,
    )
    return Round(round=n, points=(point,), tracking={}, total_written_bytes=written)


def test_each_round_with_enough_ios_has_its_five_nines() -> None:
    rounds = [
        rnd(1, 0.3e9, direction(2_000_000, 100_000, 9_000_000, 3_000_000)),
        rnd(2, 0.6e9, direction(999_999, 200_000, 7_000_000, 5_000_000)),  # one too few
        rnd(3, 0.9e9, direction(1_000_000, 300_000, 8_000_000, 4_000_000)),
    ]
    rt = saturation_responses(plan(), rounds, CAP)
    assert rt is not None and NEEDED == 1_000_000
    assert [r.drive_fills for r in rt.rounds] == pytest.approx([0.3, 0.6, 0.9])
    assert [r.art_ms for r in rt.rounds] == pytest.approx([0.1, 0.2, 0.3])
    assert [r.mrt_ms for r in rt.rounds] == pytest.approx([9.0, 7.0, 8.0])
    assert [r.five_nines_ms for r in rt.rounds] == [3.0, None, 4.0]
    assert rt.missing == 1
    assert rt.note == (
        "The 99.999 % response time is left out of 1 of 3 rounds: a round needs at least "
        "1,000,000 I/Os for it (ten beyond it), and the largest round had 2,000,000."
    )
    d = rt.to_dict()
    assert d["rounds"][1]["five_nines_ms"] is None and d["five_nines_needs_ios"] == NEEDED


def test_spans_by_drive_fills_and_the_last_rounds() -> None:
    rounds = [
        rnd(k, k * 0.25e9, direction(1_000_000 * k, 100_000.0 * k, 1e6 * k, 2e6 * k))
        for k in range(1, 13)
    ]  # 0.25 ... 3.0 fills: intervals of 0.5 (at most 8 rows), then the last 2 rounds
    rt = saturation_responses(plan(window=2), rounds, CAP)
    assert rt is not None
    labels = [s.label for s in rt.spans]
    assert labels == [
        "0–0.5×", "0.5–1×", "1–1.5×", "1.5–2×", "2–2.5×", "2.5–3×", "last 2 rounds",
    ]  # fmt: skip
    first = rt.spans[0]
    assert (first.first, first.last, first.rounds, first.ios) == (1, 2, 2, 3_000_000)
    # ART weighted by I/Os: (1e6 x 0.1 + 2e6 x 0.2) / 3e6 ms
    assert first.art_ms == pytest.approx(0.5 / 3)
    # no histograms: the largest per-round five nines, an upper bound
    assert (first.five_nines_ms, first.five_nines_basis) == (4.0, "largest per-round value")
    assert first.mrt_ms == 2.0
    last = rt.spans[-1]
    assert (last.first, last.last) == (11, 12) and last.mrt_ms == 12.0


def test_histograms_give_the_pooled_five_nines() -> None:
    a = {100_000: 999_990, 5_000_000: 10}
    b = {100_000: 999_980, 9_000_000: 20}
    rounds = [
        rnd(1, 0.5e9, direction(1_000_000, 100_000, 5e6, 5e6, bins=a)),
        rnd(2, 1.0e9, direction(1_000_000, 100_000, 9e6, 9e6, bins=b)),
    ]
    rt = saturation_responses(plan(window=2), rounds, CAP)
    assert rt is not None
    last = rt.spans[-1]
    merged = {100_000: 1_999_970, 5_000_000: 10, 9_000_000: 20}
    assert last.five_nines_basis == "histogram"
    assert last.five_nines_ms == percentile_from_bins(merged, 99.999) / 1e6


def test_a_mixed_point_pools_reads_and_writes_only_from_histograms() -> None:
    half = {200_000: 599_994, 7_000_000: 6}
    with_bins = rnd(
        1,
        0.5e9,
        direction(600_000, 200_000, 7e6, 7e6, bins=half),
        direction(600_000, 200_000, 7e6, 7e6, bins=half),
    )
    rt = saturation_responses(plan(read_pct=50), [with_bins], CAP)
    assert rt is not None
    # 1.2 million I/Os together, neither direction enough alone
    assert (
        rt.rounds[0].five_nines_ms
        == percentile_from_bins({200_000: 1_199_988, 7_000_000: 12}, 99.999) / 1e6
    )
    without = rnd(
        1,
        0.5e9,
        direction(600_000, 200_000, 7e6, 7e6),
        direction(600_000, 200_000, 7e6, 7e6),
    )
    rt = saturation_responses(plan(read_pct=50), [without], CAP)
    assert rt is not None and rt.rounds[0].five_nines_ms is None  # never from two percentiles


def test_nothing_to_show() -> None:
    assert saturation_responses(plan(), [], CAP) is None
    assert saturation_responses(plan(), [rnd(1, 1e9, direction(10, 1, 1, None))], 0) is None
