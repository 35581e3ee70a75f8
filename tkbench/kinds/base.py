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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tkbench import cache
from tkbench.errors import ProfileError
from tkbench.plan.model import PlannedTest, Point
from tkbench.profile.model import FamilySpec
from tkbench.profile.schema import TEST_SCHEMA

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


@dataclass
class TestKeys:
    """A profile's test while its keys are checked: every type's check reads them,
    refuses what its tests cannot have and fills in what its tests imply
    (:func:`tkbench.kinds.check_keys`); :mod:`tkbench.profile.build` makes a
    ``TestSpec`` of them."""

    scope: str  # the profile's: "device" or "volume"
    name: str
    values: dict[str, Any]  # every key of TEST_SCHEMA: given, inherited or its default
    workload: dict[str, Any]  # its [workload]: the profile's with the test's own keys
    given: Mapping[str, Any]  # the test's own table as the profile writes it
    refusal: Callable[[str, str], ProfileError]  # (full key, why) -> one line
    family: FamilySpec | None = None  # its type's own keys, set by the type

    def refuse(self, key: str, why: str) -> ProfileError:
        """The error naming the test's ``key`` (``workload.numjobs``: its workload's)."""
        return self.refusal(f"tests.{self.name}.{key}", why)

    def set(self, key: str) -> bool:
        """Whether the test has ``key``: given in its table, or filled in by an earlier
        type's check (its value no longer the key's default)."""
        return key in self.given or self.values[key] != TEST_SCHEMA[key][1]


@dataclass(frozen=True)
class KeyRules:
    """A test type's rules for a profile's test, alike for every type that has them
    and checked in this order by :meth:`TestType.check_keys`; each refusal names the
    key.  A test is the type's when its ``marker`` key is set (to ``marker_value``, if
    given)."""

    marker: str
    marker_value: str = ""
    own: tuple[str, ...] = ()  # keys only the type's tests have: refused on others
    own_why: str = ""
    scope: str = ""  # the profile scope its tests need ("": either), refused on the marker
    scope_why: str = ""
    # keys (and stop rules) that make a test no test of the type: refused on the marker
    conflicts: tuple[str, ...] = ()
    conflict_kinds: tuple[str, ...] = ()
    conflicts_why: str = ""
    needs: tuple[str, ...] = ()  # keys its tests must have a value for
    needs_why: str = ""
    foreign: tuple[str, ...] = ()  # keys its tests cannot have (the type sets them)
    foreign_why: str = ""

    def marks(self, values: Mapping[str, Any]) -> bool:
        value = values[self.marker]
        return value == self.marker_value if self.marker_value else bool(value)


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
    # its rules for a profile's test's keys (None: it checks its keys itself)
    rules: KeyRules | None = None

    # ------------------------------------------------------------------ recognising
    def claims(self, spec: TestSpec) -> bool:
        """Whether a profile's test is of this type (by default: its keys are of the
        type's :attr:`family`)."""
        return self.family is not None and isinstance(spec.family, self.family)

    def stored(self, plan: TestPlan) -> bool:
        """Whether a stored test (its ``test.json``) is of this type."""
        raise NotImplementedError

    def claims_keys(self, k: TestKeys) -> bool:
        """Whether a profile's test, as its keys stand after every type's check
        (:func:`tkbench.kinds.check_keys`), is of this type (a type that does not say
        claims none, and the basic type's answers stand for its tests)."""
        return self.family is not None and isinstance(k.family, self.family)

    # ------------------------------------------------------------------ a profile's test
    def check_keys(self, k: TestKeys) -> None:
        """Check a profile's test against the type's :attr:`rules`; a test of the type
        then gets what it implies (:meth:`fill_keys`), any other :meth:`leave_keys`."""
        rules = self.rules
        if rules is None:
            return
        if not rules.marks(k.values):
            for key in rules.own:
                if key in k.given:
                    raise k.refuse(key, rules.own_why)
            self.leave_keys(k)
            return
        if rules.scope and k.scope != rules.scope:
            raise k.refuse(rules.marker, rules.scope_why)
        if any(k.values[key] for key in rules.conflicts) or (
            k.values["kind"] in rules.conflict_kinds
        ):
            raise k.refuse(rules.marker, rules.conflicts_why)
        for key in rules.needs:
            if not k.values[key]:
                raise k.refuse(key, rules.needs_why)
        for key in rules.foreign:
            if k.set(key):
                raise k.refuse(key, rules.foreign_why)
        self.fill_keys(k)

    def fill_keys(self, k: TestKeys) -> None:
        """A test of the type, its rules kept: its remaining checks, the keys it
        implies, and its :attr:`family` of keys on ``k.family``."""

    def leave_keys(self, k: TestKeys) -> None:
        """A test not of the type: what its keys' defaults mean for it."""

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

    def stage_result(self, a: Analysed) -> object | None:
        """What a stored stage of a test of several stages measured
        (:mod:`tkbench.kinds.staged.results`; computed once per test:
        :attr:`tkbench.kinds.results.analysed.Analysed.staged`, which reads the stages
        before it through ``a.stage_of``; None: none)."""
        return None

    def stage_summary(self, a: Analysed) -> dict[str, Any]:
        """What ``show --json`` adds for a stage of a test of several stages, read from
        what it measured (``a.staged``)."""
        return {}

    def summary_lines(self, a: Analysed) -> list[str]:
        """``tkbench show``'s lines of what :meth:`summary` adds, read from the test's
        results (``a``), not from the ``show --json`` document."""
        return []
