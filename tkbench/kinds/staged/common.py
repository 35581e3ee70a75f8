"""Tests of several stages: the PTS 2.0.2 tests beyond the basic four (pure planning).

Each such test of a profile (``procedure = "hir" | "xsr" | "cbw" | "dirth"``)
becomes a sequence of planned tests, its *stages*, which the engine runs like any
other test (purge, rounds until the stage's kind says stop, records) one after the
other.  The stages are built from general capabilities of a point: its own thread
count and queue depth, a block-size mix (``bssplit``), LBA zones, repeated
intervals, unmeasured pre-writes, host idle (``thinktime``) and per-interval logs
(``sample``); and one derived step: a stage whose points are chosen, when it
starts, from an earlier stage's measurement window (the operating points).

=========  =============================================================
procedure  stages (test directory names)
=========  =============================================================
hir        ``hir-precondition`` (steady: intervals of 4 KiB random writes),
           ``hir-recovery`` (one round: per wait state, write bursts with
           host idle, then a return to baseline; sampled per interval)
xsr        ``xsr`` (one round: the access groups back to back, sampled)
cbw/dirth  ``<name>-precondition`` (steady: intervals of 100 % writes at the
           highest load), ``<name>-intensity`` (steady: a pre-write, then
           the thread count x queue depth grid at the test's mix),
           ``<name>-operating`` (one round: for MaxIOPS, MidIOPS and MinIOPS a
           pre-write and a measurement with the full latency histogram)
=========  =============================================================

docs/methodology.md says where each parameter comes from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from tkbench.kinds.base import Context, TestKeys, TestType
from tkbench.kinds.pts.rows import IMPL, Requirement, Source
from tkbench.kinds.staged import rows
from tkbench.kinds.staged.reference import StagedRequirement
from tkbench.plan.model import PlannedTest, Point, bssplit_text, workload_independent, zones_text
from tkbench.profile.model import FamilySpec, Group, Mix, TestSpec
from tkbench.rundir.records import OperatingPoint, TestPlan

WRITE = Mix(0)
NAMES = ("max", "mid", "min")
TITLES = {"max": "MaxIOPS", "mid": "MidIOPS", "min": "MinIOPS"}


@dataclass(frozen=True)
class StagedSpec(FamilySpec):
    """A test of several stages' own keys (docs/profiles.md, "Tests of several
    stages"); a stage's spec holds the stage's own ``intervals`` and ``sample``."""

    procedure: str
    intervals: int = 1  # a round repeats each point this many times (PTS: 30 one-minute)
    tracking_interval: str = "last"  # which repeated interval a round's tracking value is
    threads: tuple[int, ...] = ()  # demand intensity: thread counts (outer loop)
    iodepths: tuple[int, ...] = ()  # ... and queue depths (inner loop)
    prewrite: float = 0.0  # seconds of 100 % writes at the round's start, not measured
    wait_states: tuple[float, ...] = ()  # host idle recovery: seconds of idle
    bursts: int = 360  # ... write-idle repetitions per wait state
    burst: float = 5.0  # ... seconds of writes of each repetition
    baseline: float = 1800.0  # ... seconds of continuous writes after each wait state
    groups: tuple[Group, ...] = ()  # cross-stimulus recovery: the access groups in order
    sample: float = 0.0  # seconds per sample of the per-interval logs (0: none)
    response_ceiling: float = 0.005  # seconds: the highest mean response time of MaxIOPS
    operating_prewrite: float = 3600.0  # seconds of writes before each operating point
    operating_runtime: float = 600.0  # seconds each operating point is measured


# the keys of a profile's test that are a staged test's own
KEYS = tuple(f.name for f in dataclasses.fields(StagedSpec))


def own(spec: TestSpec) -> StagedSpec:
    """A test of several stages' own keys."""
    if not isinstance(spec.family, StagedSpec):
        raise TypeError(f"test {spec.name} is no test of several stages")
    return spec.family


def stage_spec(
    spec: TestSpec, kind: str, *, intervals: int = 1, sample: float = 0.0, **changes: object
) -> TestSpec:
    """The spec a stage runs with: its kind, its own intervals and sampling, and no
    phase of the basic tests."""
    base: dict[str, object] = {
        "kind": kind,
        "precondition": False,
        "response_histogram": 0.0,
        "split_block_sizes": False,
        "family": dataclasses.replace(own(spec), intervals=intervals, sample=sample),
    }
    base.update(changes)
    return dataclasses.replace(spec, **base)  # type: ignore[arg-type]


def load_spec(spec: TestSpec, numjobs: int, iodepth: int) -> TestSpec:
    """``spec`` with the stage's own load as its workload."""
    return dataclasses.replace(
        spec, workload=dataclasses.replace(spec.workload, numjobs=numjobs, iodepth=iodepth)
    )


def intervals(spec: TestSpec, base: Point) -> tuple[Point, ...]:
    """A round of ``own(spec).intervals`` repetitions of ``base``; the one the tracking
    variable reads (the first or the last) has role "", the others "interval"."""
    n = own(spec).intervals
    tracked = 0 if own(spec).tracking_interval == "first" else n - 1
    return tuple(
        dataclasses.replace(
            base,
            index=i,
            role="" if i == tracked else "interval",
            tag=f"#{i + 1}" if n > 1 else "",
        )
        for i in range(n)
    )


def base_point(
    spec: TestSpec, bss: str, mix: Mix, numjobs: int, iodepth: int, runtime: float
) -> Point:
    return Point(
        index=0,
        bs=spec.block_sizes[0],
        mix=mix,
        pattern=spec.pattern,
        numjobs=numjobs,
        iodepth=iodepth,
        runtime=runtime,
        bssplit=bss,
        zones=zones_text(spec.zones) if spec.zones else "",
    )


def operating_points(
    spec: TestSpec, write: Point, chosen: Sequence[OperatingPoint]
) -> tuple[Point, ...]:
    """The operating-point stage's round: for each chosen load a pre-write (100 %
    writes at that load) and the measurement at the test's mix."""
    points: list[Point] = []
    for op in chosen:
        name = TITLES[op.name]
        if own(spec).operating_prewrite > 0:
            points.append(
                dataclasses.replace(
                    write,
                    index=len(points),
                    runtime=own(spec).operating_prewrite,
                    role="prewrite",
                    tag=f"pre-write {name}",
                    numjobs=op.numjobs,
                    iodepth=op.iodepth,
                )
            )
        points.append(
            dataclasses.replace(
                write,
                index=len(points),
                mix=spec.mixes[0],
                runtime=own(spec).operating_runtime,
                role="",
                tag=f"{name} T{op.numjobs}Q{op.iodepth}",
                numjobs=op.numjobs,
                iodepth=op.iodepth,
            )
        )
    return tuple(points)


def resolve(test: PlannedTest, chosen: Sequence[OperatingPoint]) -> PlannedTest:
    """The operating-point stage with its loads chosen (``chosen``: max, mid, min)."""
    write = test.points[0]
    write = dataclasses.replace(write, mix=WRITE, role="", tag="")
    return dataclasses.replace(
        test,
        points=operating_points(test.spec, write, chosen),
        operating=tuple(chosen),
    )


class Staged(TestType):
    """A test of several stages; a type of it builds its stages from the profile's test."""

    report_part = "stages"  # tkbench.report.parts: each stage's chapter
    takes_cache = False
    no_cache_why = "a test of several stages does not take a cache state"
    repeats_until = False
    needs_tracking = False

    # where its reference values come from (its rows' source), and the values
    source = ""
    references: tuple[StagedRequirement, ...] = ()

    # a profile's test of it: the keys each of its procedures needs (docs/profiles.md,
    # "Tests of several stages"), whether it has exactly one block size and mix (not
    # XSR: its groups have theirs) and whether it takes the workload-independent
    # preconditioning (not HIR and XSR)
    needs: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    one_point = True
    preconditions = True

    def claims(self, spec: TestSpec) -> bool:
        return isinstance(spec.family, StagedSpec) and spec.family.procedure in self.procedures

    def pts_reference(self, procedure: str) -> StagedRequirement | None:
        return next((r for r in self.references if r.procedure == procedure), None)

    def requirement_rows(self, procedure: str, stage: str) -> tuple[Requirement, ...]:
        return rows.stage_rows(Source(IMPL, self.source), stage)

    def claims_keys(self, k: TestKeys) -> bool:
        return k.values["procedure"] in self.procedures

    def check_keys(self, k: TestKeys) -> None:
        """A test of one of its procedures: the keys the procedure needs, what it
        implies (:meth:`fill_keys`), its one point and its preconditioning."""
        t = k.values
        proc = t["procedure"]
        if proc not in self.procedures:
            return
        for key in self.needs[proc]:
            if not t[key]:
                raise k.refuse(key, f"a {proc} test needs {key}")
        self.fill_keys(k)
        for key in ("mixes", "block_sizes"):
            if self.one_point and t[key] is not None and len(t[key]) != 1:
                raise k.refuse(key, f"a {proc} test has exactly one")
        if t["precondition"] and not self.preconditions:
            raise k.refuse(
                "precondition",
                f"a {proc} test has no workload-independent preconditioning: "
                "set precondition = false",
            )
        k.family = StagedSpec(**{key: t[key] for key in KEYS})

    def stored(self, plan: TestPlan) -> bool:
        return plan.procedure in self.procedures

    def build(
        self, spec: TestSpec, active: int, bss: str, notes: tuple[str, ...]
    ) -> list[PlannedTest]:
        """The stages of ``spec`` (``bss``: fio's bssplit, "" for one block size)."""
        raise NotImplementedError

    def expand(self, spec: TestSpec, ctx: Context) -> tuple[list[PlannedTest], list[str]]:
        """The stages of a test of several stages, and plan notes (a test that cannot
        run on this device is left out with a note).  The first stage takes the test's
        workload-independent preconditioning (CBW and DIRTH; HIR and XSR have none)."""
        wipc = workload_independent(spec, ctx.profile, ctx.capacity, spec.block_sizes[0])
        sector = ctx.sector
        bss = ""
        notes = list(ctx.notes)
        if spec.bssplit:
            bss, fold = bssplit_text(spec.bssplit, sector)
            notes += fold
        elif any(bs % sector for bs in spec.block_sizes):
            return [], [
                f"test {spec.name} skipped: its block size does not fit {sector}-byte sectors"
            ]
        staged = [
            dataclasses.replace(
                s,
                procedure=own(spec).procedure,
                sample=own(s.spec).sample,
                response_ceiling=own(spec).response_ceiling if s.derive_from else 0.0,
            )
            for s in self.build(spec, ctx.active, bss, tuple(notes))
        ]
        if wipc is not None:
            staged[0] = dataclasses.replace(staged[0], precondition=wipc)
        return staged, []

    def detail_lines(self, t: PlannedTest) -> list[str]:
        n = own(t.spec).intervals
        if n <= 1:
            return []
        return [
            f"  intervals each round repeats its point {n} times; the tracking "
            f"variable reads the {own(t.spec).tracking_interval} (the others are listed once)"
        ]

    def lists_point(self, pt: Point) -> bool:
        return pt.role != "interval"  # the repeated intervals are listed once
