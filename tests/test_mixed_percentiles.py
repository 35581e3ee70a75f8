"""Percentiles of a mixed point over reads and writes together (tkbench.analysis.window):
the read and write histograms summed, never two percentiles averaged, with the I/Os
behind them and a blank where too few stand behind a percentile.  Records are built
by hand, so every expected number is known."""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from fractions import Fraction

import pytest

from tkbench.analysis.window import (
    combined_percentiles,
    point_means,
    pooled_percentiles,
    samples_needed,
)
from tkbench.records import Direction, PointResult, Round
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
