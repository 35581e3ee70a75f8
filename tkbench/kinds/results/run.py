"""Makes a stored run's :class:`~tkbench.kinds.results.analysed.AnalysedRun`: each test
with its type, asked of the registry (:func:`tkbench.kinds.of_plan`)."""

from __future__ import annotations

from tkbench import kinds
from tkbench.kinds.results.analysed import Analysed, AnalysedRun
from tkbench.rundir.records import TargetRecord
from tkbench.rundir.store import RunData, TestData

__all__ = ["Analysed", "AnalysedRun", "analyse_run", "analyse_test"]


def analyse_test(
    test: TestData, target: TargetRecord | None = None, run_tests: tuple[TestData, ...] = ()
) -> Analysed:
    """One stored test, to be analysed (``run_tests``: its run's, by default itself)."""
    return Analysed(test, kinds.of_plan(test.plan), target, run_tests or (test,))


def analyse_run(run: RunData, *, alone: bool = False) -> AnalysedRun:
    """A stored run's tests, to be analysed; each result is computed when first read.
    ``alone``: each test on its own, without its run's target and other tests (no
    temperature; a stage's chapter sees only itself), as a comparison shows them."""
    tests = tuple(run.tests)
    if alone:
        return AnalysedRun(run, tuple(analyse_test(t) for t in tests))
    target = run.manifest.target
    return AnalysedRun(run, tuple(analyse_test(t, target, tests) for t in tests))
