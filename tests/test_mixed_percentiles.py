"""Percentiles of a mixed point over reads and writes together (tkbench.analysis.window):
the read and write histograms summed, never two percentiles averaged, with the I/Os
behind them and a blank where too few stand behind a percentile.  Records are built
by hand, so every expected number is known."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import shutil
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from tests._helpers import layout_text, sets
from tkbench import cli
from tkbench.analysis.window import (
    combined_percentiles,
    point_means,
    pooled_percentiles,
    samples_needed,
)
from tkbench.fio.output import percentile_from_bins
from tkbench.report import fmt
from tkbench.report.tables import COMBINED, blank_note, latency_rows
from tkbench.rundir.records import Direction, PlannedPoint, PointResult, Round, TestPlan
from tkbench.vocab import MS


def exact_percentile(samples: list[int], pct: float) -> int:
    """fio's definition, from the raw samples: the smallest value with at least
    ``pct`` % of all samples at or below it."""
    ordered = sorted(samples)
    rank = math.ceil(Fraction(pct) / 100 * len(ordered))
    return ordered[max(rank, 1) - 1]


def test_samples_needed_is_ten_beyond_the_percentile() -> None:
    got = {p: samples_needed(p) for p in (50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)}
    assert got == {
        50.0: 20,
        90.0: 100,
        99.0: 1_000,
        99.9: 10_000,  # was 10,001: 1 - 0.999 is not exactly 0.001 in binary
        99.99: 100_000,
        99.999: 1_000_000,
        99.9999: 10_000_000,
    }
    assert samples_needed(99.95) == 20_000


def direction(samples: list[int]) -> Direction:
    """One direction of one round: ``samples`` (ns) as fio's json+ bins, and fio's own
    percentiles of them (what a round record holds)."""
    bins = Counter(samples)
    return Direction(
        io_bytes=len(samples) * 4096.0,
        total_ios=len(samples),
        iops=len(samples) / 60.0,
        lat_mean_ns=sum(samples) / len(samples),
        lat_max_ns=float(max(samples)),
        percentiles_of="lat",
        percentiles_ns={k: float(exact_percentile(samples, float(k))) for k in KEYS},
        bins_ns={str(v): c for v, c in bins.items()},
    )


KEYS = ("99", "99.9", "99.99")


def synthetic(seed: int, n: int, scale: float) -> list[int]:
    """``n`` log-normal response times (ns), rounded to 100 ns as fio's buckets are."""
    rng = random.Random(seed)
    return [round(rng.lognormvariate(math.log(scale), 0.6), -2) for _ in range(n)]


def test_summed_histograms_give_the_exact_percentile_of_all_ios() -> None:
    # two rounds of a 65/35 point: reads fast, writes slow, neither enough alone for 99.99 %
    reads = [synthetic(1, 65_000, 80_000), synthetic(2, 65_000, 90_000)]
    writes = [synthetic(3, 35_000, 400_000), synthetic(4, 35_000, 300_000)]
    c = combined_percentiles(
        [direction(s) for s in reads], [direction(s) for s in writes], list(KEYS)
    )
    assert c is not None
    every = [x for s in reads + writes for x in s]
    assert c.samples == len(every) == 200_000
    for key in KEYS:
        assert c.percentiles_ms[key] == exact_percentile(every, float(key)) / MS, key
    assert c.missing == ()
    assert c.needed == {"99": 1_000, "99.9": 10_000, "99.99": 100_000}
    # averaging the two directions' percentiles would give a different, wrong number
    pooled = {
        name: pooled_percentiles([direction(s) for s in group], KEYS)[0]
        for name, group in (("read", reads), ("write", writes))
    }
    averaged = (pooled["read"]["99"] + pooled["write"]["99"]) / 2 / MS
    assert c.percentiles_ms["99"] == 1.1093 and averaged == pytest.approx(0.899)


def test_too_few_ios_leave_a_percentile_blank() -> None:
    # 60,000 + 39,999 = 99,999 I/Os: one short of the 100,000 that 99.99 % needs
    c = combined_percentiles(
        [direction(synthetic(5, 60_000, 80_000))],
        [direction(synthetic(6, 39_999, 300_000))],
        list(KEYS),
    )
    assert c is not None and c.samples == 99_999
    assert c.percentiles_ms["99.99"] is None
    assert c.percentiles_ms["99.9"] is not None
    assert c.missing == ("99.99",)
    assert c.to_dict() == {
        "samples": 99_999,
        "percentiles_ms": c.percentiles_ms,
        "needs_samples": {"99": 1_000, "99.9": 10_000, "99.99": 100_000},
    }
    # one more I/O and it is shown
    c = combined_percentiles(
        [direction(synthetic(5, 60_000, 80_000))],
        [direction(synthetic(6, 40_000, 300_000))],
        list(KEYS),
    )
    assert c is not None and c.percentiles_ms["99.99"] is not None


def test_only_for_a_mixed_point_with_every_histogram() -> None:
    r, w = direction(synthetic(7, 1_000, 80_000)), direction(synthetic(8, 1_000, 300_000))
    assert combined_percentiles([r], [Direction()], list(KEYS)) is None  # reads only
    assert combined_percentiles([Direction()], [w], list(KEYS)) is None  # writes only
    no_bins = dataclasses.replace(w, bins_ns=None)
    # a round without its histogram: nothing to sum, and never two percentiles averaged
    assert combined_percentiles([r, r], [w, no_bins], list(KEYS)) is None


def test_point_means_carry_it_for_mixed_points_only() -> None:
    mixed = [synthetic(9, 6_500, 80_000)], [synthetic(10, 3_500, 300_000)]
    rounds = []
    for n in (1, 2):
        r, w = direction(mixed[0][0]), direction(mixed[1][0])
        pure = direction(synthetic(11, 5_000, 90_000))
        points = (
            PointResult(bs=4096, read_pct=65, read=r, write=w, lat_mean_ns=1.0, lat_max_ns=1.0),
            PointResult(bs=4096, read_pct=100, read=pure, lat_mean_ns=1.0, lat_max_ns=1.0),
        )
        rounds.append(Round(round=n, points=points, tracking={}, total_written_bytes=0.0))
    means = point_means(rounds)
    c = means[(4096, 65)].combined
    assert c is not None and c.samples == 20_000
    every = (mixed[0][0] + mixed[1][0]) * 2
    assert c.percentiles_ms["99.9"] == exact_percentile(every, 99.9) / MS
    assert c.percentiles_ms["99.99"] is None  # 20,000 I/Os, 100,000 needed
    assert means[(4096, 100)].combined is None


def test_latency_table_has_an_r_plus_w_row_and_explains_its_blanks() -> None:
    mixed = direction(synthetic(12, 6_500, 80_000)), direction(synthetic(13, 3_500, 300_000))
    pure = direction(synthetic(14, 20_000, 90_000))
    points = (
        PointResult(bs=4096, read_pct=65, read=mixed[0], write=mixed[1], lat_mean_ns=2e5),
        PointResult(bs=4096, read_pct=0, write=pure, lat_mean_ns=9e4),
    )
    rnd = Round(round=1, points=points, tracking={}, total_written_bytes=0.0)
    plan = TestPlan(
        name="latency",
        kind="steady",
        points=tuple(
            PlannedPoint(bs=4096, read_pct=m, label="4k", job=f"p{m}", runtime=1.0) for m in (65, 0)
        ),
    )
    rows = latency_rows(plan, point_means([rnd]), KEYS)
    assert [(r.mix, r.direction, r.samples) for r in rows] == [
        ("65/35", "read", 6_500),
        ("65/35", "write", 3_500),
        ("65/35", COMBINED, 10_000),
        ("0/100", "write", 20_000),
    ]
    both = rows[2]
    assert both.iops == pytest.approx(rows[0].iops + rows[1].iops)
    every = synthetic(12, 6_500, 80_000) + synthetic(13, 3_500, 300_000)
    assert both.percentiles_ms == (
        exact_percentile(every, 99.0) / MS,
        exact_percentile(every, 99.9) / MS,
        None,
    )
    # 99.99 % in no row: the table leaves its column out; 99.9 % a dash in two rows
    assert blank_note(rows, KEYS) == (
        "No row has enough I/Os for 99.99 %, so the table leaves it out "
        "(99.99 % needs 100,000). A dash marks a percentile its row has too few I/Os for: "
        "4k 65/35 read (6,500 I/Os): 99.9 % (needs 10,000); "
        "4k 65/35 write (3,500 I/Os): 99.9 % (needs 10,000)."
    )
    assert blank_note(rows[:0], KEYS) == ""


# --------------------------------------------------------------------------- real fio

# the quick profile's latency test alone, 4k at 65/35 and 0/100 (its tracking point),
# three rounds of 0.5 s points
MIXED_LATENCY = [
    "tests.iops.enabled=false",
    "tests.throughput.enabled=false",
    "tests.wsat.enabled=false",
    'tests.latency.mixes=["65/35", "0/100"]',
    "tests.latency.rounds.max=3",
    "tests.latency.rounds.window=3",
    "tests.latency.point_runtime=0.5s",  # 1.5 s of 65/35: thousands of I/Os, not millions
]


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils")
def test_real_mixed_run_shows_reads_and_writes_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    argv = ["run", "--profile", "quick", "--target", str(tmp_path / "t.img"), "--size", "16M"]
    argv += ["--yes", "--out", str(out), "--no-history"]
    assert cli.main([*argv, *sets(*MIXED_LATENCY)]) == 0
    # the window's read and write bins, straight from the stored round files
    bins: Counter[int] = Counter()
    ios = {"read": 0, "write": 0}
    for path in sorted((out / "tests/latency/rounds").glob("*.json")):
        point = json.loads(path.read_text())["points"][0]
        assert (point["bs"], point["read_pct"]) == (4096, 65)
        for name in ("read", "write"):
            ios[name] += point[name]["total_ios"]
            bins.update({int(k): int(v) for k, v in point[name]["bins_ns"].items()})
    total = ios["read"] + ios["write"]
    assert ios["read"] > 0 and ios["write"] > 0 and sum(bins.values()) == total

    capsys.readouterr()
    assert cli.main(["show", str(out), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    (lat,) = [t for t in shown["tests"] if t["name"] == "latency"]
    assert lat["round_numbers"] == [1, 2, 3]  # window = 3: every round
    point, writes = lat["window_percentiles"]
    assert (point["bs"], point["read_pct"]) == (4096, 65)
    assert writes["read_pct"] == 0 and writes["read"] is None and writes["combined"] is None
    assert point["read"]["samples"] == ios["read"] and point["write"]["samples"] == ios["write"]
    combined = point["combined"]
    assert combined["samples"] == total
    assert combined["needs_samples"]["99.99"] == 100_000
    for key, ms in combined["percentiles_ms"].items():
        if total >= combined["needs_samples"][key]:
            assert ms == percentile_from_bins(bins, float(key)) / MS, key
        else:
            assert ms is None, key
    blank = [k for k, v in combined["percentiles_ms"].items() if v is None]
    assert "99.999" in blank  # 1,000,000 I/Os: never in 1.5 s at QD 1

    text = layout_text(out / "report.pdf")
    rows = [
        line.split() for line in text.splitlines() if line.split()[:3] == ["4k", "65/35", "R+W"]
    ]
    # the table's row: point, direction, IOPS, mean, the percentiles some row has, max
    # (not the list of I/Os under the table, which can begin a line the same way)
    rows = [r for r in rows if len(r) >= 7 and not r[3].endswith(";")]
    assert len(rows) == 1, "no (or more than one) R+W row in the latency table"
    assert rows[0][5] == fmt.sig(combined["percentiles_ms"]["99"])  # IOPS, mean, then 99 %
    flat = " ".join(text.split())
    assert f"4k 65/35 read {ios['read']:,}; 4k 65/35 write {ios['write']:,}; " \
        f"4k 65/35 R+W {total:,}; 4k 0/100 write " in flat  # fmt: skip
    note = flat[flat.index("with fewer it would only repeat the largest values.") :]
    for k in blank:  # what each blank percentile needs: left out of every row, or a dash
        needs = f"{samples_needed(float(k)):,}"
        assert f"{k} % needs {needs}" in note or f"{k} % (needs {needs})" in note, k
    assert "Blank for" not in note and "shows a dash" not in note
