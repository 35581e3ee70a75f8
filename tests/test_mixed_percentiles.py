"""Percentiles of a mixed point over reads and writes together (tkbench.analysis.window):
the read and write histograms summed, never two percentiles averaged, with the I/Os
behind them and a blank where too few stand behind a percentile.  Records are built
by hand, so every expected number is known."""

from __future__ import annotations

import math
from fractions import Fraction

from tkbench.analysis.window import samples_needed


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
