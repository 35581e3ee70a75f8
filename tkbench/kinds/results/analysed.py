"""A stored run's derived results, each computed once and kept on its test (pure).

:class:`Analysed` is one test of a loaded run.  What is derived from its records is
computed when first asked and then kept: the analysis of its measurement window
(:func:`tkbench.analysis.analyze_test`), its points' repeatability, where
``repeat_until`` stands, its type's own result (a sweep's tables, a virtual file's
cells, a copy test's rows: asked of the test's type), what its stage measured (a
stage of a test of several stages: host idle recovery's wait states, cross-stimulus
recovery's transitions, a demand-intensity grid, the operating points; also asked of
its type, which reads the stages before it through its run's other tests, each
:class:`Analysed` once: :meth:`Analysed.stage_of`), its headline figures, its
temperature, its response-time histogram phase and its hosts' shares.
:class:`AnalysedRun` holds them for a whole run.  The report, ``show``, the checks,
``export``, ``compare`` and the fleet summary receive one and read it, so one command
computes each result of a test once however many of its parts read it;
:func:`tkbench.kinds.results.run.analyse_run` makes one.

The functions the results are made of stay importable and answer as before.  This
module asks no registry: the test's type comes with it (its :class:`TypeResults`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from tkbench import analysis
from tkbench.analysis import confidence, hosts, repeat, thermal

if TYPE_CHECKING:
    from tkbench.analysis import TestAnalysis
    from tkbench.analysis.confidence import HistogramPhase
    from tkbench.analysis.figure import Figure
    from tkbench.analysis.hosts import HostMean
    from tkbench.analysis.repeat import Repeatability, UntilStanding
    from tkbench.analysis.thermal import TestTemperature
    from tkbench.rundir.records import TargetRecord, TestPlan
    from tkbench.rundir.store import RunData, TestData


class TypeResults(Protocol):
    """What a test's type (:class:`tkbench.kinds.base.TestType`) derives of it."""

    def result(self, test: TestData) -> object | None: ...

    def stage_result(self, a: Analysed) -> object | None: ...

    def figures(self, a: Analysed) -> list[Figure]: ...

    def cache_states(self, plan: TestPlan) -> list[str]: ...

    def summary(self, a: Analysed) -> dict[str, Any] | None: ...

    def stage_summary(self, a: Analysed) -> dict[str, Any]: ...

    def summary_lines(self, a: Analysed) -> list[str]: ...


@dataclass(frozen=True, eq=False)
class Analysed:
    """One test of a stored run and what is derived from it, each computed once."""

    test: TestData
    type: TypeResults  # the test's type (tkbench.kinds.of_plan)
    target: TargetRecord | None = None  # the run's target: its temperature limits
    # the run's tests as analysed, by name, this one among them (filled by
    # tkbench.kinds.results.run: each test of a run is analysed once, whoever reads it)
    peers: dict[str, Analysed] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.test.name

    @property
    def plan(self) -> TestPlan:
        return self.test.plan

    @cached_property
    def analysis(self) -> TestAnalysis:
        """Its window, verdicts, window means and headline values."""
        return analysis.analyze_test(self.test)

    @cached_property
    def repeats(self) -> Mapping[tuple[int, int], Repeatability]:
        """Each point's runs in MiB/s and their spread, by (block size, read %)."""
        return repeat.point_repeatability(self.test.rounds)

    @cached_property
    def until(self) -> UntilStanding | None:
        """Where ``repeat_until`` stands (None: the test has none)."""
        return repeat.until_standing(self.test.plan, self.test.rounds)

    @cached_property
    def own(self) -> object | None:
        """Its type's own result (None: a type without one, or no round yet)."""
        return self.type.result(self.test)

    @cached_property
    def staged(self) -> object | None:
        """What its stage measured (:mod:`tkbench.kinds.staged.results`; None: not a
        stage, or a stage without results of its own)."""
        return self.type.stage_result(self)

    def stage_of(self, spec: str, stage: str) -> Analysed | None:
        """The run's stage ``stage`` of the profile's test ``spec``, as analysed (None:
        not in the run, or analysed on its own)."""
        return next(
            (p for p in self.peers.values() if p.plan.spec == spec and p.plan.stage == stage),
            None,
        )

    @cached_property
    def figures(self) -> tuple[Figure, ...]:
        """Its type's headline figures (a volume benchmark's; none for other types)."""
        return tuple(self.type.figures(self))

    @cached_property
    def cache_states(self) -> list[str]:
        """The page-cache states its points ran with (none where not in play)."""
        return self.type.cache_states(self.test.plan)

    @cached_property
    def temperature(self) -> TestTemperature | None:
        """The drive's temperature per round (None: analysed without its target)."""
        if self.target is None:
            return None
        return thermal.temperature_of(self.test, self.target)

    @cached_property
    def histogram(self) -> HistogramPhase | None:
        """The response-time histogram phase's confidence levels (None: none ran)."""
        return confidence.histogram_phase(self.test)

    @cached_property
    def hosts(self) -> tuple[HostMean, ...]:
        """Each fio server's share of the window (none outside client/server mode)."""
        return tuple(hosts.host_means(self.analysis.records))


@dataclass(frozen=True, eq=False)
class AnalysedRun:
    """A stored run and its tests, analysed (each result computed once)."""

    run: RunData
    tests: tuple[Analysed, ...]

    @property
    def headline(self) -> dict[str, float]:
        """Every test's headline values (:func:`tkbench.analysis.headline`)."""
        return analysis.RunAnalysis(tuple(t.analysis for t in self.tests)).headline

    @property
    def figures(self) -> list[Figure]:
        """The figures of every test with runs (:func:`tkbench.kinds.figures.run_figures`)."""
        return [f for t in self.tests if t.test.rounds for f in t.figures]
