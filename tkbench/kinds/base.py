"""The test-type interface: what a type of test owns, asked through one object.

A test of a profile is of one *type*: a basic test (steady state, write saturation,
fixed repetitions), a bulk-I/O sweep, a copy test, a virtual-file test, or a test of
several stages (host idle recovery, cross-stimulus recovery, the demand-intensity
pair of CBW and DIRTH).  Its type says how a profile's test and a stored
``test.json`` are recognised as its, how the test expands into planned tests, what
``tkbench plan`` says of it, how it fits a volume, which headline figures it has and
what ``tkbench show`` adds for it.  Code outside :mod:`tkbench.kinds` asks the type
(:func:`tkbench.kinds.of_spec`, :func:`tkbench.kinds.of_plan`) and never which type a
test is.

Not to be confused with a test's *stop rule* (``kind`` in a profile and in
``test.json``: steady, saturation, fixed, copy; :mod:`tkbench.analysis.stoprules`),
which every type's stages choose from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tkbench import cache
from tkbench.plan.model import PlannedTest, Point
from tkbench.profile.model import FamilySpec

if TYPE_CHECKING:
    from tkbench.analysis.figure import Figure
    from tkbench.kinds.pts.rows import Requirement
    from tkbench.kinds.results.analysed import Analysed
    from tkbench.kinds.staged.reference import StagedRequirement
    from tkbench.profile.model import Profile, TestSpec, VolumeSpec
    from tkbench.rundir.records import TestPlan
    from tkbench.rundir.store import TestData
    from tkbench.targets.base import Target


@dataclass(frozen=True)
class Context:
    """What expanding a profile's test needs besides the test itself."""

    profile: Profile
    capacity: int  # the target's user capacity, bytes
    sector: int  # its logical sector, bytes
    active: int  # bytes the test addresses: the ActiveRange, or each job's test file
    notes: tuple[str, ...] = ()  # what fitting the test to a volume changed


class TestType:
    """One type of test.  The defaults are a fio test of workload points."""

    name = ""
    runs_fio = True  # False: the engine runs the type's own executor in place of fio
    addresses_target = True  # it reads and writes the target's ActiveRange or test files
    files_per_job = True  # a volume test: one file per fio job (False: one shared file)
    # its points are cells of its own table (keys other than block size x mix), so the
    # per-point tables, the convergence plot and repeatability leave them out
    own_tables = False
    # each point runs at a load of its own (a sweep's buffer counts, a virtual file's
    # threads), so the report states the loads per point, not the test's workload
    loads_per_point = False
    # the page cache: whether a profile's test of this type takes a ``cache`` state (and
    # if not, why, as the profile's error says), and the state its stored points ran
    # with when they state none
    takes_cache = True
    no_cache_why = ""
    unstated_cache = "as-is"
    # what a stage run in parts calls its parts when a run reports them unfinished
    # ("": parts, and only once one is stored)
    parts_word = ""
    # the name of its own part of a test's report chapter ("": none; tkbench.report.parts
    # maps the name to what the report builds: the report lies above the types)
    report_part = ""
    # whether its test may repeat until its runs agree (``repeat_until``)
    repeats_until = True
    # whether a steady test of it names its tracking variables (False: its stages
    # choose their own)
    needs_tracking = True

    # its own keys' class on ``TestSpec.family`` (None: a type without one, which says
    # itself which tests are its own)
    family: type[FamilySpec] | None = None

    # ------------------------------------------------------------------ recognising
    def claims(self, spec: TestSpec) -> bool:
        """Whether a profile's test is of this type (by default: its keys are of the
        type's :attr:`family`)."""
        return self.family is not None and isinstance(spec.family, self.family)

    def stored(self, plan: TestPlan) -> bool:
        """Whether a stored test (its ``test.json``) is of this type."""
        raise NotImplementedError

    def claims_keys(self, t: Mapping[str, Any]) -> bool:
        """Whether a profile's test, as its keys stand after every type's check
        (:data:`tkbench.kinds.CHECKS`), is of this type (a type that does not say
        claims none, and the basic type's answers stand for its tests)."""
        return self.family is not None and isinstance(t.get("family"), self.family)

    # ------------------------------------------------------------------ planning
    def expand(self, spec: TestSpec, ctx: Context) -> tuple[list[PlannedTest], list[str]]:
        """The planned tests of a profile's test, and plan notes (a test that cannot run
        on this target is left out with a note)."""
        raise NotImplementedError

    def fit_volume(
        self, spec: TestSpec, usable: int, free: int, vol: VolumeSpec
    ) -> tuple[TestSpec, list[str]] | None:
        """A volume test fitted to ``usable`` bytes by the type's own rule (None: the
        common rule of test files per job)."""
        return None

    def fio_files(self, test: PlannedTest, target: Target) -> dict[str, bytes]:
        """Files a round's fio reads from its working directory, by name (a replay's
        iolog), written there by the engine before fio starts."""
        return {}

    def prove_resume(self, stored: TestPlan, spec: TestSpec) -> None:
        """Before ``run --resume`` goes on with a stored test of this type (its
        ``test.json``, its profile's test ``spec``): refuse (SafetyError) when what the
        test was planned from is no longer what it would run."""

    # ------------------------------------------------------------------ tkbench plan
    def describe(self, t: PlannedTest) -> list[str] | None:
        """Every line ``tkbench plan`` prints of the test after its title (None: the
        common lines, with :meth:`load_words` and :meth:`detail_lines`)."""
        return None

    def load_words(self, t: PlannedTest) -> tuple[str, str]:
        """(jobs, queue depth) as the plan's load line states them."""
        wl = t.spec.workload
        return f"{wl.numjobs}", f"{wl.iodepth}"

    def detail_lines(self, t: PlannedTest) -> list[str]:
        """The type's own lines before the points."""
        return []

    def lists_point(self, pt: Point) -> bool:
        """Whether the plan lists this point on a line of its own."""
        return True

    # ------------------------------------------------------------------ the PTS
    # a test of several stages: the profile's ``procedure`` values it runs, and the
    # stages (tkbench.plan.model.PlannedTest.stage) each becomes
    procedures: tuple[str, ...] = ()
    stages: tuple[str, ...] = ()

    def requirement_rows(self, procedure: str, stage: str) -> tuple[Requirement, ...]:
        """The PTS 2.0.2 requirement rows of one stage of a procedure of this type
        (tkbench.conformance collects them: ``requirements.TABLE``)."""
        return ()

    def pts_reference(self, procedure: str) -> StagedRequirement | None:
        """What the PTS requires of a procedure of this type (None: no PTS test)."""
        return None

    # ------------------------------------------------------------------ results
    def cache_states(self, plan: TestPlan) -> list[str]:
        """The page-cache states a stored test's points ran with, in plan order (none
        where the cache was not in play: tkbench.cache.states_of)."""
        return cache.states_of(
            (p.cache for p in plan.points), plan.workload.direct, self.unstated_cache
        )

    def figure_names(self, spec: TestSpec) -> set[str] | None:
        """Every headline figure name a test of this spec will have (None: none)."""
        return None

    def result(self, test: TestData) -> object | None:
        """The type's own result of a stored test (its tables' cells, computed once per
        test: :attr:`tkbench.kinds.results.analysed.Analysed.own`; None: none)."""
        return None

    def figures(self, a: Analysed) -> list[Figure]:
        """The headline figures of a stored test of this type (``a``: the test with its
        results)."""
        return []

    def summary(self, a: Analysed) -> dict[str, Any] | None:
        """What ``show --json`` adds for a stored test of this type (None: the common
        part, a fixed test's repeated points)."""
        return None

    def stage_summary(self, t: TestData, tests: Sequence[TestData]) -> dict[str, Any]:
        """What ``show --json`` adds for a stage of a test of several stages (``tests``:
        the run's, for the stages before it)."""
        return {}

    def summary_lines(self, a: Analysed) -> list[str]:
        """``tkbench show``'s lines of what :meth:`summary` adds, read from the test's
        results (``a``), not from the ``show --json`` document."""
        return []
