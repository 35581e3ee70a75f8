"""The shape of a requirement row, and what a row is judged with (pure).

A row names the planned parameters it governs (``params``: paths into a test's
``test.json``, e.g. ``workload.iodepth`` or ``points.pattern``), where its value
comes from (:class:`Source`), and either a ``check`` (a fixed requirement: what the
plan or run does instead, or nothing) or a ``state`` (an operator choice: the words
the report's set-up states, never a departure).  Rows are kept per test family and
stage (:data:`Rows`, keyed ``"iops"``, ``"hir/recovery"``, ...) so that a test-type
module can carry its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tkbench.rundir.records import TestPlan
from tkbench.rundir.records.base import dump

TEXT = "text"  # the PTS 2.0.2 text (as quoted: docs/methodology.md, Sources)
IMPL = "implementation"  # an implementation of PTS 2.0, or SNIA's pages on the 1.x tests
CHOICE = "operator choice"  # left to the test operator: stated, not judged
# the planned parameters of a test's load (thread count, queue depth)
LOAD = ("workload.numjobs", "workload.iodepth", "points.numjobs", "points.iodepth")


@dataclass(frozen=True)
class Source:
    kind: str  # TEXT | IMPL | CHOICE
    where: str  # the section, or the implementation(s)

    def words(self) -> str:
        return f"{self.kind}: {self.where}"


@dataclass(frozen=True)
class Ctx:
    """What a row is judged with: one planned test (one stage) and its reference."""

    plan: TestPlan
    variant: Any  # tkbench.conformance.pts.Variant
    ref: Any  # TestRequirement (the basic four) or StagedRequirement (the rest)
    capacity: int = 0
    planned: bool = True  # judged from a plan (True) or from what a run recorded
    # the response-time histogram phase after the rounds: seconds planned (a plan) or
    # recorded (a run; None when none was recorded, 0.0 when the test has none)
    histogram: float | None = 0.0
    finished: bool = True  # a run's test ended by its stop rule (a plan: as planned)


@dataclass(frozen=True)
class Finding:
    """A departure a row found: what the text requires and what the test does."""

    required: str
    actual: str
    requirement: str = ""  # "" : the row's own name


Check = Callable[[Ctx], Iterable[Finding]]
State = Callable[[Ctx], str | None]


@dataclass(frozen=True)
class Requirement:
    name: str  # the requirement, as a departure names it ("outstanding I/O")
    params: tuple[str, ...]  # the planned parameters it governs
    source: Source
    check: Check | None = None  # a fixed requirement
    state: State | None = None  # an operator choice: the words the set-up states
    plan_only: bool = False  # a limit a plan may break but a run only if it did

    @property
    def choice(self) -> bool:
        return self.source.kind == CHOICE

    @property
    def secondhand(self) -> bool:
        return self.source.kind == IMPL


Rows = Mapping[str, Sequence[Requirement]]


@dataclass(frozen=True)
class NotJudged:
    """A planned parameter that is no stimulus the PTS speaks of (a name, a label)."""

    param: str
    why: str


@dataclass(frozen=True)
class Choice:
    """An operator choice as the set-up states it."""

    test: str
    title: str
    requirement: str
    value: str
    source: str = field(default="")

    def words(self) -> str:
        return f"{self.requirement}: {self.value}"


def family(plan: TestPlan) -> str:
    """``iops``, ``throughput``, ..., ``hir/recovery``: the rows a planned test takes."""
    if plan.procedure and plan.stage:
        return f"{plan.procedure}/{plan.stage}"
    return plan.spec or plan.name


def parameters(plan: TestPlan) -> dict[str, Any]:
    """Every planned parameter of ``plan`` as ``test.json`` writes it, by path
    (``workload.iodepth``; a point's as ``points.bs``, the set of its values)."""
    data = dump(plan)
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "points":
            for point in value:
                for k, v in point.items():
                    out.setdefault(f"points.{k}", set()).add(repr(v))
        elif isinstance(value, Mapping):
            for k, v in value.items():
                out[f"{key}.{k}"] = v
        else:
            out[key] = value
    return out
