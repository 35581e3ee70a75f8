"""Steady-state determination (PTS 2.0.2 §2.1.24) on seeded synthetic series."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tkbench.analysis import steady


def test_flat_plateau_is_steady_with_exact_numbers() -> None:
    v = steady.evaluate([5.0, 3.0, 100.0, 100.0, 100.0, 100.0, 100.0])
    assert v.reached
    assert v.rounds == (3, 4, 5, 6, 7)
    assert v.mean == 100.0
    assert v.excursion == 0.0
    assert v.slope == 0.0
    assert v.intercept == 100.0
    assert v.reason == ""


def test_noisy_plateau_is_steady() -> None:
    rng = np.random.default_rng(1)
    series = list(50_000 + rng.normal(0, 500, size=12))  # 1 % noise
    v = steady.evaluate(series)
    assert v.reached
    assert v.excursion_ratio < 0.2


def test_ramp_fails_on_slope_but_not_on_excursion() -> None:
    # +3.5 % per round: range 14 % of mean (< 20 %), slope excursion 14 % (> 10 %)
    series = [100.0 * (1 + 0.035 * i) for i in range(5)]
    v = steady.evaluate(series)
    assert not v.reached
    assert v.excursion_ratio < 0.20
    assert v.slope_excursion_ratio > 0.10
    assert "slope excursion" in v.reason and "data excursion" not in v.reason


def test_step_down_fails_on_data_excursion() -> None:
    series = [130.0, 130.0, 100.0, 100.0, 100.0]
    v = steady.evaluate(series)
    assert not v.reached
    assert "data excursion" in v.reason


def test_least_squares_matches_numpy() -> None:
    rng = np.random.default_rng(7)
    ys = list(rng.normal(10, 3, size=5))
    slope, intercept = steady.least_squares(ys)
    ref_slope, ref_intercept = np.polyfit(np.arange(5), ys, 1)
    assert slope == pytest.approx(ref_slope)
    assert intercept == pytest.approx(ref_intercept)
    v = steady.evaluate(ys, first_round=10)
    assert v.rounds == (10, 11, 12, 13, 14)
    assert v.fit(10) == pytest.approx(ref_intercept)
    assert v.fit(14) == pytest.approx(ref_intercept + 4 * ref_slope)


def test_data_excursion_boundary_is_inclusive() -> None:
    # max - min = 20 = 20 % of mean 100 exactly; slope 0 (symmetric)
    series = [90.0, 110.0, 100.0, 110.0, 90.0]
    v = steady.evaluate(series)
    assert v.mean == pytest.approx(100.0)
    assert v.excursion == pytest.approx(20.0)
    assert v.reached
    # a hair over the limit fails
    assert not steady.evaluate([90.0, 110.01, 100.0, 110.0, 90.0], max_excursion=0.2).reached


def test_slope_excursion_boundary() -> None:
    # linear series with slope s: slope excursion = 4 s; choose 4 s = 10 % of mean 100
    s = 2.5
    series = [100 - 2 * s + i * s for i in range(5)]
    v = steady.evaluate(series)
    assert v.slope == pytest.approx(s)
    assert v.slope_excursion == pytest.approx(10.0)
    assert v.reached
    assert not steady.evaluate([100 - 2 * 2.6 + i * 2.6 for i in range(5)]).reached


def test_too_few_rounds() -> None:
    v = steady.evaluate([1.0, 1.0, 1.0])
    assert not v.reached
    assert v.reason == "only 3 of 5 rounds"
    assert v.rounds == (1, 2, 3)


def test_custom_window_and_limits() -> None:
    series = [100.0, 104.0, 100.0, 104.0]
    assert steady.evaluate(series, window=4, max_excursion=0.05, max_slope_excursion=0.05).reached
    assert not steady.evaluate(series, window=4, max_excursion=0.03).reached


def test_negative_and_zero_values() -> None:
    assert not steady.evaluate([0.0] * 5).reached
    with pytest.raises(ValueError):
        steady.evaluate([1.0, math.nan, 1.0, 1.0, 1.0])
    with pytest.raises(ValueError):
        steady.evaluate([1.0] * 5, window=1)


def test_first_steady_finds_the_earliest_window() -> None:
    rng = np.random.default_rng(3)
    decay = [200_000 * math.exp(-i / 2) + 40_000 for i in range(8)]
    plateau = list(40_000 + rng.normal(0, 400, size=10))
    series = decay + plateau
    v = steady.first_steady(series)
    assert v is not None and v.reached
    # the window may start only once the decay has faded below the excursion limit
    assert v.rounds[0] >= 6
    # every earlier window fails
    for end in range(5, v.rounds[-1]):
        assert not steady.evaluate(series[:end]).reached


def test_verdict_to_dict_round_trips_numbers() -> None:
    d = steady.evaluate([10.0, 11.0, 10.0, 11.0, 10.0]).to_dict()
    assert d["reached"] is True
    assert d["rounds"] == [1, 2, 3, 4, 5]
    assert d["excursion_ratio"] == pytest.approx(1 / 10.4)


def test_one_timestamp_format_iso_utc_with_offset() -> None:
    from datetime import datetime

    from tkbench.units import timestamp

    assert timestamp(0) == "1970-01-01T00:00:00+00:00"
    assert datetime.fromisoformat(timestamp()).utcoffset() is not None
