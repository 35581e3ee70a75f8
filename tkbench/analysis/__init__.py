"""Analysis: every number tkbench derives from a stored run, computed once (pure).

:func:`analyze_test` turns a stored test into a :class:`TestAnalysis`: the
steady-state verdicts of its last segment, the measurement window, the window means
of every point and the headline values (:func:`analyze_run`: a whole run's, as a
:class:`RunAnalysis`).  ``show``, the checks and JUnit, regression checks,
``compare``, ``export``, the fleet summary and the report read it through the
test's :class:`tkbench.kinds.results.analysed.Analysed`, which computes it once per
test together with what the test's type derives (the layer above: it asks the test
types); the history reads the functions it is made of; the engine asks
:mod:`.segments` for its stop rule.  Nothing here imports the engine, reads a
profile from the installation, or touches a file.

Modules: :mod:`.steady` (the PTS 2.0.2 criteria), :mod:`.segments` (segments,
verdicts, a test's result), :mod:`.window` (window, per-point values, pooled
percentiles, window means), :mod:`.headline` (the numbers history and regression
checks compare).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tkbench.analysis.headline import better_is_higher, headline, test_headline
from tkbench.analysis.segments import last_segment, reached, segment_of, segment_verdicts
from tkbench.analysis.steady import Verdict, evaluate
from tkbench.analysis.stoprules import KINDS, TestKind, kind_of, test_result
from tkbench.analysis.window import (
    PointMean,
    point_means,
    pooled_percentiles,
    samples_needed,
    spread,
    value,
    window,
    window_records,
)
from tkbench.rundir.records import Round
from tkbench.rundir.store import RunData, TestData

__all__ = [
    "KINDS",
    "PointMean",
    "RunAnalysis",
    "TestAnalysis",
    "TestKind",
    "Verdict",
    "analyze_run",
    "analyze_test",
    "better_is_higher",
    "evaluate",
    "headline",
    "kind_of",
    "last_segment",
    "point_means",
    "pooled_percentiles",
    "reached",
    "samples_needed",
    "segment_of",
    "segment_verdicts",
    "spread",
    "test_headline",
    "test_result",
    "value",
    "window",
    "window_records",
]


@dataclass(frozen=True)
class TestAnalysis:
    """One test of a stored run, analysed."""

    name: str
    kind: str  # steady | saturation | fixed
    finished: bool
    rounds: int
    segments: tuple[int, ...]
    verdicts: Mapping[str, Verdict]  # per tracking variable, over the last segment
    steady: bool | None  # None for tests without a steady-state rule
    window: tuple[int, ...]  # the measurement window's round numbers
    records: tuple[Round, ...]  # the window's round records
    means: Mapping[tuple[int, int], PointMean]  # (bs, read %) -> window means
    headline: Mapping[str, float]

    @property
    def steady_window(self) -> tuple[int, ...]:
        """The rounds in which every tracking variable met the criteria; empty when they
        did not (a write-saturation test with tracking variables can have one too)."""
        if not reached(self.verdicts):
            return ()
        return next(iter(self.verdicts.values())).rounds


@dataclass(frozen=True)
class RunAnalysis:
    tests: tuple[TestAnalysis, ...]

    def test(self, name: str) -> TestAnalysis:
        for t in self.tests:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def headline(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for t in self.tests:
            out.update(t.headline)
        return out


def analyze_test(t: TestData) -> TestAnalysis:
    kind = kind_of(t.plan)
    verdicts = segment_verdicts(t.plan, t.rounds)
    win = window(t)
    records = tuple(window_records(t.rounds, win))
    return TestAnalysis(
        name=t.name,
        kind=kind.name,
        finished=t.finished,
        rounds=len(t.rounds),
        segments=tuple(sorted({segment_of(r) for r in t.rounds})),
        verdicts=verdicts,
        steady=reached(verdicts) if kind.has_steady_state else None,
        window=win,
        records=records,
        means=point_means(records),
        headline=test_headline(t),
    )


def analyze_run(run: RunData) -> RunAnalysis:
    return RunAnalysis(tuple(analyze_test(t) for t in run.tests))
