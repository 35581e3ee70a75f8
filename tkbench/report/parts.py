"""A test type's own part of its report chapter, by the name its type gives it
(:attr:`tkbench.kinds.base.TestType.report_part`).

A test type lies below the report (tkbench/kinds/ may not import tkbench/report/), so
it names its part and this registry maps the name to what the report builds: the
chapter's section (:mod:`.sections`: what a stage or a copy test shows in place of
the per-point tables), the chapter's fields of the type's own (a sweep's tables, a
virtual file's, a copy test's rows) and, for a test fio does not run, its procedure
table.  The report asks :func:`part_of` and never which type a test is; a new type
with a chapter of its own is a :class:`Part` here and its template.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tkbench.kinds import of_plan
from tkbench.kinds.copy import COPY
from tkbench.kinds.replay import REPLAY
from tkbench.kinds.results.analysed import Analysed
from tkbench.kinds.results.copy import TITLES as COPY_SETS
from tkbench.kinds.staged.common import Staged
from tkbench.kinds.sweep import SWEEP
from tkbench.kinds.vfile import VFILE
from tkbench.report import fmt
from tkbench.report.copy import copy_report
from tkbench.report.model import Row
from tkbench.report.sections import SECTIONS, STAGES, Section
from tkbench.report.sweep import sweep_report
from tkbench.report.vfile import vfile_report
from tkbench.report.workload import chapter as workload_chapter
from tkbench.rundir.records import TestPlan
from tkbench.rundir.store import TestData
from tkbench.units import format_size


class Part:
    """What a test type adds to its chapter; the defaults add nothing (a basic test)."""

    def __init__(self, name: str = "") -> None:
        self.name = name  # the name the type gives its part (TestType.report_part)

    def section(self, plan: TestPlan, base: Section) -> Section:
        """The chapter's section (``base``: its stop rule's)."""
        return base

    def fields(self, a: Analysed) -> dict[str, Any]:
        """The chapter's fields of the type's own (:class:`.model.TestReport`), from
        the test's results (and those of its run's other tests, which a stage's chapter
        may read: ``a.stage_of``)."""
        return {}

    def parameters(self, t: TestData, stop: str) -> tuple[Row, ...] | None:
        """The procedure table in place of a fio test's (None: a fio test's)."""
        return None


class Table(Part):
    """A part that is one field of the chapter, named as the part (a sweep's tables and
    best combinations, a virtual file's nodes/s, a copy test's rows), built by the
    type's report module (:mod:`.sweep`, :mod:`.vfile`, :mod:`.copy`)."""

    def __init__(self, name: str, build: Callable[[Analysed], object]) -> None:
        super().__init__(name)
        self.build = build

    def fields(self, a: Analysed) -> dict[str, Any]:
        return {self.name: self.build(a)}


class CopyPart(Table):
    """A copy test: its rows (its section, that of its stop rule, leaves out the
    per-point tables), and its sets, data patterns and copy step in place of a fio
    workload."""

    def parameters(self, t: TestData, stop: str) -> tuple[Row, ...] | None:
        return copy_parameters(t.plan, stop)


class StagesPart(Part):
    """A stage of a test of several stages: its own chapter (:mod:`.stages`)."""

    def section(self, plan: TestPlan, base: Section) -> Section:
        build = STAGES.get(plan.stage)
        return build(base) if build is not None else base


class WorkloadPart(StagesPart):
    """A replay test (tkbench.kinds.replay): its stages' sections as a staged test's
    (its demand-intensity pair's chapters), and in its replay stage the chapter "Your
    workload on this drive" (:mod:`.workload`), which reads the run's other tests."""

    def fields(self, a: Analysed) -> dict[str, Any]:
        return {self.name: workload_chapter(a)}


PARTS: dict[str, Part] = {
    p.name: p
    for p in (
        Part(),
        Table(SWEEP.report_part, sweep_report),
        Table(VFILE.report_part, vfile_report),
        CopyPart(COPY.report_part, copy_report),
        StagesPart(Staged.report_part),
        WorkloadPart(REPLAY.report_part),
    )
}


def part_of(plan: TestPlan) -> Part:
    """The report part of a stored test's type."""
    return PARTS[of_plan(plan).report_part]


def section_for(plan: TestPlan) -> Section:
    """The report section of a stored test: its kind's, or its type's own."""
    try:
        base = SECTIONS[plan.kind]
    except KeyError:
        raise ValueError(f"no report section for test kind {plan.kind!r}") from None
    return part_of(plan).section(plan, base)


def copy_parameters(plan: TestPlan, stop: str) -> tuple[Row, ...]:
    """A copy test's procedure table (tkbench.kinds.copy): its sets, data patterns, buffer
    and how each copy is timed."""
    sets = []
    for p in plan.points:
        text = f"{COPY_SETS.get(p.copy_set, p.copy_set)}: {p.files} files, {fmt.gb(p.size)}"
        if text not in sets:
            sets.append(text)
    buffer = format_size(plan.points[0].bs) if plan.points else "?"
    return (
        Row("File sets", "; ".join(sets)),
        Row("Data patterns", ", ".join(dict.fromkeys(p.data for p in plan.points))),
        Row("Copy", f"within the volume, read() and write() through one {buffer} buffer"),
        Row("Timed", "until every copied file and folder is fsynced"),
        Row("Cache", "the sources' cached pages dropped before every copy"),
        Row("Purge", "none (a volume benchmark)"),
        Row("Stop rule", stop),
    )
