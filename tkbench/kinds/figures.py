"""The headline figures of the volume benchmarks, by name, for the history, ``compare``,
``export`` and acceptance criteria (pure).

Each figure belongs to a test and has a name within it:

* a bulk-I/O sweep: ``best_read_mb_s``, ``best_write_mb_s`` (the best combination of
  each direction, with its mode, buffer size and buffer count);
* a copy test: ``SET.PATTERN.mb_s`` per file set and data pattern (``iso.random.mb_s``);
* a virtual-file test: ``OPERATION.THREADS.CACHE.nodes_s`` (``random-read.1.warm.nodes_s``).

A figure is the mean over the test's runs (``repeat``), kept with every run's value,
so that its spread is known.  Its mean absolute deviation in % of the mean is the
figure of the same name with ``mean_abs_dev_pct`` in place of the unit's ending
(``iso.random.mean_abs_dev_pct``, ``best_write_mean_abs_dev_pct``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tkbench import kinds
from tkbench.analysis.figure import DEVIATION, UNITS, Figure, unit_of, value_of
from tkbench.kinds.results.run import analyse_test

if TYPE_CHECKING:
    from tkbench.profile.model import TestSpec
    from tkbench.rundir.store import RunData, TestData

__all__ = ["DEVIATION", "UNITS", "Figure", "figure_names", "run_figures", "test_figures"]
__all__ += ["unit_of", "value_of"]


def test_figures(test: TestData) -> list[Figure]:
    """The figures of one stored test (none for a test of another type, or without runs):
    its type's (:mod:`tkbench.kinds`)."""
    return list(analyse_test(test).figures)


def run_figures(run: RunData) -> list[Figure]:
    return [f for t in run.tests if t.rounds for f in test_figures(t)]


def figure_names(spec: TestSpec) -> set[str] | None:
    """Every figure name (with its deviation) a test of this spec will have; None for a
    test without figures (not a sweep, copy or virtual-file test)."""
    return kinds.of_spec(spec).figure_names(spec)
