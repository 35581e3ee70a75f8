"""SNIA PTS 2.0.2 as a table, and what a judgement against it says (pure).

The reference is :data:`TESTS`, :data:`VARIANTS` and ``COMMON``
(:mod:`tkbench.kinds.pts.common`): the requirements of PTS 2.0.2 for the four basic
tests (IOPS, Throughput, Latency, Write Saturation) and those common to them, in
the code -- never a profile file of the installation, so a newer tkbench with other
bundled profiles judges an old run by the same text.
docs/methodology.md ("The PTS 2.0.2 requirements tkbench checks") says where each
entry comes from.  :mod:`.conformance` applies the table to a plan or to a run's
records and gives a :class:`Judgement`: the variant, the PTS tests judged, and every
:class:`Departure` as ``{"test", "requirement", "required", "actual"}``.

The variant is the profile's ``pts_variant`` ("E", "C" or "none": no PTS claim).
A run whose stored profile predates that key is judged as tkbench judged such runs
then: PTS-C for the profile named ``pts-c``, PTS-E for any other
(:func:`stored_variant`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tkbench.conformance.ptsstages import STAGED
from tkbench.rundir.records import Manifest
from tkbench.typed import Typed

K = 1024
MINUTE = 60.0
DAY = 86400.0
SPEC = "SNIA PTS 2.0.2"


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Variant:
    """What differs between PTS-E and PTS-C."""

    letter: str  # "E", "C"
    name: str  # "PTS-E"
    load: tuple[int, int]  # (thread count, queue depth) of IOPS and WSAT
    active_range: float  # percent of the user capacity
    write_cache: str  # the volatile write cache: "disabled" (WCD) or "enabled" (WCE)


@dataclass(frozen=True)
class TestRequirement:
    """One PTS test: its access pattern, loops, load, steady-state rule or stop rule."""

    name: str  # the profile's test section that runs it
    title: str
    kind: str  # steady | saturation (tkbench.analysis.stoprules)
    pattern: str  # random | sequential
    block_sizes: tuple[int, ...]  # the inner loop, in its order (largest first)
    mixes: tuple[int, ...]  # read percentages: the outer loop, in its order
    tracking: tuple[str, ...] = ()  # steady-state tracking variables
    load: tuple[int, int] | None = None  # (threads, queue depth); None: the variant's
    precondition: bool = True  # workload-independent preconditioning before the rounds
    per_block_size: bool = False  # each block size purged and preconditioned at its size
    stop_written_multiple: float = 0.0  # write saturation: x user capacity written ...
    max_duration: float = 0.0  # ... or seconds, whichever comes first


VARIANTS: dict[str, Variant] = {
    "E": Variant("E", "PTS-E", (4, 32), 100.0, "disabled"),
    "C": Variant("C", "PTS-C", (2, 16), 75.0, "enabled"),
}
TESTS: tuple[TestRequirement, ...] = (
    TestRequirement(
        "iops",
        "IOPS",
        "steady",
        "random",
        (1024 * K, 128 * K, 64 * K, 32 * K, 16 * K, 8 * K, 4 * K, 512),
        (100, 95, 65, 50, 35, 5, 0),
        ("iops 4k 0/100", "iops 64k 65/35", "iops 1024k 100/0"),
    ),
    TestRequirement(
        "throughput",
        "Throughput",
        "steady",
        "sequential",
        (1024 * K, 128 * K),
        (100, 0),
        ("bw 1024k 0/100", "bw 128k 0/100"),
        load=(1, 32),
        per_block_size=True,
    ),
    TestRequirement(
        "latency",
        "Latency",
        "steady",
        "random",
        (8 * K, 4 * K, 512),
        (100, 65, 0),
        ("lat_mean 4k 0/100",),
        load=(1, 1),
    ),
    TestRequirement(
        "wsat",
        "Write Saturation",
        "saturation",
        "random",
        (4 * K,),
        (0,),
        precondition=False,
        stop_written_multiple=4.0,
        max_duration=DAY,
    ),
)
BY_NAME = {r.name: r for r in TESTS}
# Write Saturation's optional workloads (profile key ``wsat_workload``): PTS 2.0 lets the
# operator run WSAT with one of these instead of the required RND 4 KiB writes (values
# from a PTS 2.0 implementation, see docs/methodology.md).  (pattern, block size, read %)
WSAT_OPTIONS: dict[str, tuple[str, int, int]] = {
    "oltp": ("random", 8 * K, 65),
    "vod": ("sequential", 128 * K, 90),
    "metadata": ("sequential", 512, 50),
    "composite": ("random", 0, 0),
}


def wsat_option(plan_points: Sequence[tuple[str, int, int]]) -> TestRequirement | None:
    """Write Saturation's requirement for an optional workload its points run
    ((pattern, block size, read %) of each point), or None for the required one."""
    ref = BY_NAME["wsat"]
    for pattern, bs, read in WSAT_OPTIONS.values():
        if list(plan_points) == [(pattern, bs, read)]:
            return replace(ref, pattern=pattern, block_sizes=(bs,), mixes=(read,))
    return None


NO_VARIANT = "none"


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Departure(Typed):
    """One requirement a test (or the whole run: ``test`` None) does not meet."""

    test: str | None  # the run's test name, the PTS test's, or None: every test
    requirement: str
    required: str
    actual: str
    # the test's title, for people ("" for the whole run); not in the JSON
    title: str = field(default="", metadata={"internal": True})

    def words(self) -> str:
        """``block sizes: 64k, 4k (PTS 2.0.2: 1024k, ..., 512)``."""
        return f"{self.requirement}: {self.actual} (PTS 2.0.2: {self.required})"

    def sentence(self) -> str:
        """The departure in plain words, with its test."""
        return f"{self.title or 'All tests'}: {self.words()}"


@dataclass(frozen=True)
class Stated(Typed):
    """An operator choice a test made, as the set-up states it (never a departure)."""

    test: str
    requirement: str
    value: str
    title: str = field(default="", metadata={"internal": True})  # not in the JSON

    def words(self) -> str:
        return f"{self.title or self.test}: {self.requirement}: {self.value}"


@dataclass(frozen=True)
class Judgement:
    """A run's (or a plan's) standing against PTS 2.0.2."""

    variant: str | None  # "E", "C"; None: the profile declares no PTS variant
    tests: tuple[str, ...] = ()  # the PTS tests judged, by name (iops, throughput, ...)
    departures: tuple[Departure, ...] = ()
    planned: bool = False  # judged from a plan, before anything ran
    choices: tuple[Stated, ...] = ()  # operator choices: stated, not counted
    # the fixed requirements judged for these tests, and how many of them come from
    # an implementation of PTS 2.0 (or SNIA's pages), not the 2.0.2 text
    requirements: int = 0
    secondhand: int = 0

    @property
    def conforms(self) -> bool:
        return self.variant is not None and bool(self.tests) and not self.departures

    @property
    def name(self) -> str:
        """``SNIA PTS-E 2.0.2``."""
        return f"SNIA {VARIANTS[self.variant].name} 2.0.2" if self.variant else SPEC

    @property
    def titles(self) -> list[str]:
        return [t.title for n in self.tests if (t := BY_NAME.get(n) or STAGED.get(n))]

    @property
    def claim(self) -> str | None:
        """What a page header and the file's title may say: the specification's name
        for a conforming run, the number of departures otherwise (None: no claim)."""
        if self.variant is None:
            return None
        if self.conforms:
            return self.name
        n = self.count()
        return f"tkbench report ({n} departure{'s' if n != 1 else ''} from {self.name})"

    def count(self) -> int:
        """How many departures there are, one shared by several tests counted once
        (the list people read: :meth:`merged`)."""
        return len(self.merged())

    def to_dict(self) -> dict[str, Any]:
        """``pts`` of ``show --json`` and ``plan --json`` (a view, kept by hand: the
        statement computed, the choices and the sources' share only with a claim)."""
        out: dict[str, Any] = {
            "variant": self.variant,
            "conforms": self.conforms,
            "tests": list(self.tests),
            "statement": self.statement(),
            "departures": [d.to_dict() for d in self.departures],
        }
        if self.variant is not None:  # a claim: the operator's choices, the sources' share
            out["choices"] = [c.to_dict() for c in self.choices]
            out["requirements"] = {"judged": self.requirements, "secondhand": self.secondhand}
        return out

    def sources(self) -> str:
        """How much of the table the judgement rests on is secondhand, in a sentence."""
        if not self.requirements:
            return ""
        share = 100.0 * self.secondhand / self.requirements
        return (
            f" {self.secondhand} of the {self.requirements} requirements judged for these "
            f"tests ({share:.0f} %) come from implementations of PTS 2.0 or SNIA's pages on "
            "the 1.x tests, not from the 2.0.2 text itself, which could not be read whole "
            "where tkbench was built (tkbench's docs/methodology.md, Sources)."
        )

    def statement(self) -> str:
        """The claim in one sentence."""
        if self.variant is None:
            return (
                "No SNIA PTS claim: the profile declares no PTS variant (pts_variant), so "
                "its numbers are not presented as PTS results."
            )
        caveat = self.sources()
        if self.conforms:
            how = " as planned" if self.planned else ""
            return f"Conforms to {self.name}{how} (tests {', '.join(self.titles)}).{caveat}"
        n = self.count()
        what = "This plan departs" if self.planned else "This run departs"
        return (
            f"{what} from {self.name} in {n} way{'s' if n != 1 else ''} (each listed "
            f"once, for the tests it concerns); its numbers are not "
            f"{VARIANTS[self.variant].name} results.{caveat}"
        )

    def merged(self) -> list[tuple[str, str]]:
        """For people: (tests, words) with a departure several tests share said once."""
        tests: dict[tuple[str, str, str], list[str]] = {}
        words: dict[tuple[str, str, str], str] = {}
        for d in self.departures:
            key = (d.requirement, d.required, d.actual)
            names = tests.setdefault(key, [])
            title = d.title or "All tests"
            if title not in names:
                names.append(title)
            words[key] = d.words()
        return [
            ("All tests" if "All tests" in names else ", ".join(names), words[key])
            for key, names in tests.items()
        ]

    def groups(self) -> list[tuple[str, list[str]]]:
        """The departures by the tests they concern, in order: (tests, [words, ...])."""
        out: dict[str, list[str]] = {}
        for tests, words in self.merged():
            out.setdefault(tests, []).append(words)
        return list(out.items())

    def lines(self) -> list[str]:
        """For ``show`` and ``plan``: the statement, then the departures by test."""
        out = [self.statement()]
        for tests, items in self.groups():
            out.append(f"  {tests}:")
            out += [f"    {w}" for w in items]
        if self.choices:
            out.append("  Operator choices (stated, not departures):")
            out += [f"    {c.words()}" for c in self.choices]
        return out


def stored_variant(manifest: Manifest) -> str | None:
    """The PTS variant the run's stored profile declares ("E", "C", None for none)."""
    resolved = manifest.profile.resolved
    if "pts_variant" in resolved:
        v = resolved["pts_variant"]
        return v if isinstance(v, str) and v in VARIANTS else None
    # stored before profiles declared a variant: judged as tkbench judged such runs then
    return "C" if manifest.profile.name == "pts-c" else "E"
