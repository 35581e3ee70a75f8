"""Makes a stored run's :class:`~tkbench.kinds.results.analysed.AnalysedRun`: each test
with its type, asked of the registry (:func:`tkbench.kinds.of_plan`)."""

from __future__ import annotations

from tkbench import kinds
from tkbench.kinds.results.analysed import Analysed, AnalysedRun
from tkbench.rundir.records import TargetRecord
from tkbench.rundir.store import RunData, TestData

__all__ = ["Analysed", "AnalysedRun", "analyse_run", "analyse_test"]


def analyse_test(test: TestData, target: TargetRecord | None = None) -> Analysed:
    """One stored test on its own, to be analysed (its run's other tests unseen)."""
    return _together((test,), target)[0]


def _together(tests: tuple[TestData, ...], target: TargetRecord | None) -> tuple[Analysed, ...]:
    """``tests`` analysed together: each sees the others (its ``peers``), so that a
    stage reads the results of those before it, computed once."""
    peers: dict[str, Analysed] = {}
    for t in tests:
        peers[t.name] = Analysed(t, kinds.of_plan(t.plan), target, peers)
    return tuple(peers[t.name] for t in tests)


def analyse_run(run: RunData, *, alone: bool = False) -> AnalysedRun:
    """A stored run's tests, to be analysed; each result is computed when first read.
    ``alone``: each test on its own, without its run's target and other tests (no
    temperature; a stage's chapter sees only itself), as a comparison shows them."""
    tests = tuple(run.tests)
    if alone:
        return AnalysedRun(run, tuple(analyse_test(t) for t in tests))
    return AnalysedRun(run, _together(tests, run.manifest.target))
