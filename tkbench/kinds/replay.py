"""A replay test (``replay = true``; the bundled profile ``rwsw``, with ``tkbench run
--workload FILE.tkw``): a workload captured on a server (``tkbench capture``,
docs/replay.md) on the drive under test, after SNIA's Real World Storage Workload
test specification.

Its stages (test directory names):

==========================  ===========================================================
``<name>-replay``           purge and workload-independent preconditioning, then one
                            round of two points: the captured trace replayed with fio
                            (``read_iolog`` of the trace as a version 3 iolog,
                            ``replay_redirect`` to the target, offsets wrapped or scaled
                            to the test's ActiveRange) at the captured timing, then as
                            fast as possible (``replay_no_stall``)
``<name>-applied``          purge and preconditioning again, then rounds of the
                            *applied workload* until the PTS steady state: the streams
                            that hold ``coverage`` % of the captured I/Os as one fio job
                            (per-direction ``bssplit``, ``rwmixread``,
                            ``percentage_random``, ``random_distribution`` from the LBA
                            heat; :func:`tkbench.workload.fiojobs.applied_options`)
``<name>-intensity``        the thread count x queue depth grid of the applied workload,
``<name>-operating``        and its MaxIOPS, MidIOPS and MinIOPS, chosen as DIRTH
                            chooses them: the stages of :mod:`.staged.intensity`
==========================  ===========================================================

The workload file is read when the test is planned (an unreadable, damaged or newer
file is one line) and again, for the replay's iolog, when its round starts; its
reduction goes into every stage's ``test.json`` (``capture``) for the report.  This
module reads the file through :mod:`tkbench.workload`'s model (the file, its trace,
its reduction and the fio options: a layer below the test types, docs/architecture.md);
capturing stays above.

fio 3.33 drops up to ``iodepth - 1`` I/Os still in flight when a replay reaches the
end of its log: the iolog ends with as many one-block reads at offset 0 for it to
drop instead (:data:`tkbench.workload.fiojobs.PAD_NOTE`), stated in every plan.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tkbench.errors import InputError, SafetyError
from tkbench.kinds.base import Context, KeyRules, TestKeys, TestType
from tkbench.kinds.staged.common import KEYS as STAGED_KEYS
from tkbench.kinds.staged.common import StagedSpec, stage_spec
from tkbench.kinds.staged.common import own as staged_own
from tkbench.kinds.staged.intensity import INTENSITY
from tkbench.plan.model import PlannedTest, Point, workload_independent
from tkbench.profile.model import COMPOSITE, Mix, TestSpec, Tracking
from tkbench.units import format_duration
from tkbench.workload import fiojobs, tkw

if TYPE_CHECKING:
    from tkbench.kinds.results.analysed import Analysed
    from tkbench.rundir.records import TestPlan
    from tkbench.rundir.store import TestData
    from tkbench.targets.base import Target

PROCEDURE = "rwsw"  # the procedure its stages record (test.json ``procedure``)
IOLOG = "replay.iolog"  # the trace as fio reads it, in fio's working directory
TIMINGS = (("captured", "at the captured timing"), ("fast", "as fast as possible"))
KEYS = ("replay", "capture", "coverage", "offsets")
# a replay at the captured timing may run this much longer than the capture before
# fio is stopped (a drive slower than the server's falls behind its schedule)
SLOWER = 4.0
MIN_CAP = 30.0  # seconds


@dataclass(frozen=True)
class ReplaySpec(StagedSpec):
    """A replay test's own keys; the demand-intensity grid's keys (threads, iodepths,
    prewrite, response ceiling, operating points) are a staged test's, so that its
    grid and operating stages are DIRTH's (:data:`INTENSITY`) built from the same spec."""

    capture: str = ""  # the workload file (--workload): "" until given
    coverage: float = 90.0  # % of the captured I/Os the applied workload's streams hold
    offsets: str = "wrap"  # how the trace's offsets reach the ActiveRange: wrap | scale


def own(spec: TestSpec) -> ReplaySpec:
    if not isinstance(spec.family, ReplaySpec):
        raise TypeError(f"test {spec.name} is no replay test")
    return spec.family


def load(spec: TestSpec) -> tkw.Workload:
    """The workload file of a replay test (one line when there is none or it is bad)."""
    path = own(spec).capture
    if not path:
        raise InputError(
            f"test {spec.name} replays a captured workload: give --workload FILE.tkw "
            "(made by tkbench capture)"
        )
    return tkw.load(Path(path))


def applied_point(spec: TestSpec, applied: fiojobs.Applied) -> Point:
    """The applied workload as one point at the test's load."""
    opts = applied.options
    rw = str(opts["rw"])
    read = int(str(opts.get("rwmixread", 100 if rw == "randread" else 0)))
    return Point(
        index=0,
        bs=COMPOSITE,
        mix=Mix(read),
        pattern="random",
        numjobs=spec.workload.numjobs,
        iodepth=spec.workload.iodepth,
        runtime=spec.point_runtime,
        bssplit=str(opts["bssplit"]),
        zones=str(opts["random_distribution"]),
        random_pct=str(opts["percentage_random"]),
        tag="applied",
    )


def unfit_sizes(applied: fiojobs.Applied, sector: int) -> list[int]:
    """Block sizes of the applied workload the target cannot address."""
    return sorted({s.bs for s in applied.streams if s.bs % sector})


def replay_cap(workload: tkw.Workload) -> float:
    """Seconds after which a replay at the captured timing is stopped."""
    return max(MIN_CAP, SLOWER * workload.reduction.duration_s)


@dataclass(frozen=True)
class ReplayRun:
    """One replay of the replay stage, as fio counted it (``show --json``'s keys)."""

    timing: str
    seconds: float
    read_ios: float
    read_iops: float
    write_ios: float
    write_iops: float


@dataclass(frozen=True)
class Replayed:
    """The replay stage's own result: its replays."""

    replays: tuple[ReplayRun, ...]


class Replay(TestType):
    """A captured workload: replayed natively, then applied to steady state and across
    thread counts and queue depths."""

    name = "replay"
    family = ReplaySpec
    report_part = "workload"  # tkbench.report.parts: its stages and its own chapter
    rules = KeyRules(
        marker="replay",
        own=KEYS[1:],
        own_why="only a replay test (replay = true) has it",
        scope="device",
        scope_why="a replay test runs on a drive, not in a volume",
        needs=("threads", "iodepths"),
        needs_why="a replay test needs it (the applied workload's grid)",
        foreign=("procedure", "modes", "bssplit", "zones"),
        foreign_why="a replay test takes its mix from the workload",
    )

    def fill_keys(self, k: TestKeys) -> None:
        """Its block size, mix and tracking stand in for the captured workload's until
        the file is read (:meth:`expand`)."""
        t = k.values
        t["block_sizes"] = (COMPOSITE,)
        t["mixes"] = (Mix(0),)
        t["tracking"] = (Tracking("iops", COMPOSITE, Mix(0)),)
        t["kind"] = "steady"
        grid = {key: t[key] for key in STAGED_KEYS if key != "procedure"}
        k.family = ReplaySpec(
            procedure=PROCEDURE,
            capture=t["capture"],
            coverage=t["coverage"],
            offsets=t["offsets"],
            **grid,
        )

    def stored(self, plan: TestPlan) -> bool:
        return plan.procedure == PROCEDURE

    def expand(self, spec: TestSpec, ctx: Context) -> tuple[list[PlannedTest], list[str]]:
        workload = load(spec)
        mine = own(spec)
        applied = fiojobs.applied_options(workload, mine.coverage / 100.0)
        if unfit_sizes(applied, ctx.sector):
            return [], [
                f"test {spec.name} skipped: the workload's block sizes do not fit "
                f"{ctx.sector}-byte sectors"
            ]
        red = workload.header["reduction"]  # as the file holds it, into test.json
        point = applied_point(spec, applied)
        spec = dataclasses.replace(
            spec,
            mixes=(point.mix,),
            tracking=(Tracking("iops", COMPOSITE, point.mix),),
        )
        notes = (
            *ctx.notes,
            f"the applied workload: {len(applied.streams)} stream(s) holding "
            f"{applied.coverage_pct:g} % of the captured I/Os",
            fiojobs.PAD_NOTE,
        )
        wipc = workload_independent(spec, ctx.profile, ctx.capacity, 0)
        depth = fiojobs.replay_depth(workload)
        cap = replay_cap(workload)
        replay_points = tuple(
            dataclasses.replace(
                point,
                index=i,
                numjobs=1,
                iodepth=depth,
                runtime=cap,
                mix=Mix(round(workload.reduction.read_pct)),
                bssplit="",
                zones="",
                random_pct="",
                iolog=IOLOG,
                replay=timing,
                tag=f"replay {timing}",
            )
            for i, (timing, _) in enumerate(TIMINGS)
        )
        replay = PlannedTest(
            name=f"{spec.name}-replay",
            spec=stage_spec(spec, "fixed", repeat=1),
            title=f"{spec.title}: the captured trace replayed",
            purge=spec.purge,
            precondition=wipc,
            points=replay_points,
            tracking=(),
            active_bytes=ctx.active,
            notes=notes,
            stage="replay",
            procedure=PROCEDURE,
            capture=red,
            capture_sha256=workload.sha256,
            capture_size=workload.size,
        )
        steady = PlannedTest(
            name=f"{spec.name}-applied",
            spec=stage_spec(spec, "steady", purge=spec.purge),
            title=f"{spec.title}: the applied workload to steady state",
            purge=spec.purge,
            precondition=wipc,
            points=(point,),
            tracking=spec.tracking,
            active_bytes=ctx.active,
            notes=notes,
            stage="applied",
            procedure=PROCEDURE,
            capture=red,
            capture_sha256=workload.sha256,
            capture_size=workload.size,
        )
        # the demand-intensity pair's own stages (DIRTH's grid and operating points),
        # without its preconditioning stage: the applied stage's steady state stands in
        _, intensity, operating = INTENSITY.build(spec, ctx.active, point.bssplit, notes)
        staged = [
            dataclasses.replace(
                t,
                points=tuple(
                    dataclasses.replace(p, zones=point.zones, random_pct=point.random_pct)
                    for p in t.points
                ),
                capture=red,
                capture_sha256=workload.sha256,
                capture_size=workload.size,
                procedure=PROCEDURE,
                sample=staged_own(t.spec).sample,
                response_ceiling=mine.response_ceiling if t.derive_from else 0.0,
            )
            for t in (intensity, operating)
        ]
        return [replay, steady, *staged], []

    def prove_resume(self, stored: TestPlan, spec: TestSpec) -> None:
        """The workload file the stage was planned with, unchanged where it was given (a
        run made before the file was pinned: not proven)."""
        if not stored.capture_sha256:
            return
        path = own(spec).capture
        found = tkw.fingerprint(Path(path))
        if found is None:
            raise SafetyError(
                f"test {stored.name}: the workload file {path} is gone: a resumed run "
                "replays the file it was planned with"
            )
        digest, size = found
        if (digest, size) != (stored.capture_sha256, stored.capture_size):
            raise SafetyError(
                f"test {stored.name}: the workload file {path} is not the one the run was "
                f"planned with: SHA-256 {digest[:12]} ≠ {stored.capture_sha256[:12]} "
                f"({size} ≠ {stored.capture_size} bytes)"
            )

    def fio_files(self, test: PlannedTest, target: Target) -> dict[str, bytes]:
        """The trace as fio's iolog, on the target (its offsets mapped to the test's
        ActiveRange), for a replay stage's round."""
        if not any(p.iolog for p in test.points):
            return {}
        workload = load(test.spec)
        filename = str(target.fio_options()["filename"])
        text = fiojobs.iolog_text(
            workload,
            filename,
            test.active_bytes,
            mapping=own(test.spec).offsets,
            align=max(512, target.info().logical_sector),
        )
        return {IOLOG: text.encode("ascii")}

    def result(self, test: TestData) -> Replayed | None:
        """The replay stage: each replay's reads and writes as fio counted them (its two
        points share a block size and mix: they are no repetitions of one point)."""
        if test.plan.stage != "replay":
            return None
        rnd = test.rounds[-1] if test.rounds else None
        return Replayed(
            tuple(
                ReplayRun(
                    p.replay,
                    round(max(p.read.runtime_ms, p.write.runtime_ms) / 1e3, 6),
                    *(
                        round(float(getattr(d, attr) or 0), 3)
                        for d in (p.read, p.write)
                        for attr in ("total_ios", "iops")
                    ),
                )
                for p in (rnd.points if rnd is not None else ())
                if p.replay
            )
        )

    def summary(self, a: Analysed) -> dict[str, Any] | None:
        own = a.own
        if not isinstance(own, Replayed):
            return None
        return {"replay": [dataclasses.asdict(r) for r in own.replays]}

    def stage_result(self, a: Analysed) -> object | None:
        """Its intensity and operating stages' results, as DIRTH's stages measure them."""
        return INTENSITY.stage_result(a)

    def stage_summary(self, a: Analysed) -> dict[str, Any]:
        """The grid and the operating points, as DIRTH's stages give them."""
        return INTENSITY.stage_summary(a)

    def summary_lines(self, a: Analysed) -> list[str]:
        own = a.own
        return [
            f"  replay {r.timing:<9} {r.read_ios:,.0f} reads, {r.write_ios:,.0f} writes "
            f"in {r.seconds:g} s ({r.read_iops + r.write_iops:,.0f} IOPS)"
            for r in (own.replays if isinstance(own, Replayed) else ())
        ]

    def detail_lines(self, t: PlannedTest) -> list[str]:
        if not t.capture:
            return []
        red = tkw.Reduction.parse(t.capture)
        mine = own(t.spec)
        lines = [
            f"  workload: {mine.capture} ({red.ios} I/Os in "
            f"{format_duration(red.duration_s)}, "
            f"{red.read_pct:g} % reads, "
            f"{red.random_pct:g} % random)"
        ]
        if t.stage == "replay":
            lines.append(
                f"  offsets {mine.offsets}ped to the ActiveRange; fio stops a replay after "
                f"{format_duration(t.points[0].runtime)}"
            )
        return lines


REPLAY = Replay()
