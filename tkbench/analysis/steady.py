"""Steady-state determination per SNIA PTS 2.0.2 §2.1.24.

Over a measurement window of the last ``window`` rounds of a tracked variable y:

* data excursion  ``max(y) - min(y)`` must be within ``max_excursion`` of mean(y);
* slope excursion, the range the least-squares line covers across the window,
  ``|slope| * (window - 1)`` for rounds spaced by one, must be within
  ``max_slope_excursion`` of mean(y).

Pure functions: they take numbers and return the numbers that decided.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from tkbench.rundir.records import VerdictRecord
from tkbench.typed import Typed


@dataclass(frozen=True)
class Verdict(Typed):
    """The outcome of one steady-state test and every number behind it (its JSON:
    the fields, then the two ratios, as ``result.json`` states it)."""

    DERIVED = ("excursion_ratio", "slope_excursion_ratio")

    reached: bool
    window: int  # the window size asked for
    rounds: tuple[int, ...]  # 1-based round numbers of the window (empty if too few rounds)
    values: tuple[float, ...]
    mean: float
    excursion: float  # max - min over the window
    max_excursion: float  # allowed, as a fraction of the mean
    slope: float  # least-squares slope, per round
    intercept: float  # value of the fit at the window's first round number
    slope_excursion: float  # |slope| * (window - 1)
    max_slope_excursion: float  # allowed, as a fraction of the mean
    reason: str  # why not reached ("" when reached)

    @property
    def excursion_ratio(self) -> float:
        """Measured data excursion as a fraction of the mean."""
        return _ratio(self.excursion, self.mean)

    @property
    def slope_excursion_ratio(self) -> float:
        """Measured slope excursion as a fraction of the mean."""
        return _ratio(self.slope_excursion, self.mean)

    @property
    def allowed_excursion(self) -> float:
        """The allowed data excursion in the variable's unit."""
        return self.max_excursion * abs(self.mean)

    @property
    def allowed_slope_excursion(self) -> float:
        """The allowed slope excursion in the variable's unit."""
        return self.max_slope_excursion * abs(self.mean)

    def fit(self, round_number: float) -> float:
        """Value of the least-squares line at a (1-based) round number."""
        if not self.rounds:
            return math.nan
        return self.intercept + self.slope * (round_number - self.rounds[0])

    def record(self) -> VerdictRecord:
        """The verdict as ``result.json`` states it."""
        return VerdictRecord(
            **asdict(self),
            excursion_ratio=self.excursion_ratio,
            slope_excursion_ratio=self.slope_excursion_ratio,
        )


def _ratio(part: float, whole: float) -> float:
    if whole == 0:
        return math.inf if part else 0.0
    return abs(part / whole)


def least_squares(values: Sequence[float]) -> tuple[float, float]:
    """Slope and intercept of the least-squares line through ``(i, values[i])``."""
    n = len(values)
    if n == 0:
        return 0.0, math.nan
    if n == 1:
        return 0.0, float(values[0])
    x_mean = (n - 1) / 2.0
    y_mean = math.fsum(values) / n
    sxx = math.fsum((i - x_mean) ** 2 for i in range(n))
    sxy = math.fsum((i - x_mean) * (v - y_mean) for i, v in enumerate(values))
    slope = sxy / sxx
    return slope, y_mean - slope * x_mean


def evaluate(
    values: Sequence[float],
    window: int = 5,
    max_excursion: float = 0.20,
    max_slope_excursion: float = 0.10,
    first_round: int = 1,
) -> Verdict:
    """Judge the last ``window`` values of a per-round series.

    ``first_round`` is the round number of ``values[0]`` (round numbers in the
    verdict are 1-based by default).  With fewer than ``window`` values the
    verdict is not reached, and the numbers describe what there is.
    """
    if window < 2:
        raise ValueError("the steady-state window needs at least 2 rounds")
    if not (max_excursion > 0 and max_slope_excursion > 0):
        raise ValueError("excursion limits must be positive")
    vals = [float(v) for v in values]
    if any(not math.isfinite(v) for v in vals):
        raise ValueError("steady-state values must be finite numbers")
    tail = vals[-window:]
    start = first_round + len(vals) - len(tail)
    rounds = tuple(range(start, start + len(tail)))
    slope, intercept = least_squares(tail)
    mean = math.fsum(tail) / len(tail) if tail else math.nan
    excursion = (max(tail) - min(tail)) if tail else math.nan
    slope_excursion = abs(slope) * (len(tail) - 1)
    reason = ""
    if len(tail) < window:
        reason = f"only {len(tail)} of {window} rounds"
    elif mean == 0:
        reason = "window mean is zero"
    else:
        problems = []
        if excursion > max_excursion * abs(mean):
            problems.append(f"data excursion {excursion / abs(mean):.1%} > {max_excursion:.0%}")
        if slope_excursion > max_slope_excursion * abs(mean):
            problems.append(
                f"slope excursion {slope_excursion / abs(mean):.1%} > {max_slope_excursion:.0%}"
            )
        reason = "; ".join(problems)
    return Verdict(
        reached=not reason,
        window=window,
        rounds=rounds,
        values=tuple(tail),
        mean=mean,
        excursion=excursion,
        max_excursion=max_excursion,
        slope=slope,
        intercept=intercept,
        slope_excursion=slope_excursion,
        max_slope_excursion=max_slope_excursion,
        reason=reason,
    )


def first_steady(
    values: Sequence[float],
    window: int = 5,
    max_excursion: float = 0.20,
    max_slope_excursion: float = 0.10,
) -> Verdict | None:
    """The verdict at the first round where the series is steady, or None."""
    for end in range(window, len(values) + 1):
        verdict = evaluate(values[:end], window, max_excursion, max_slope_excursion)
        if verdict.reached:
            return verdict
    return None
