"""The engine: executes a plan on a target, storing every step before the next.

For each planned test: purge -> workload-independent preconditioning -> rounds
until every tracking variable is steady (or the round limit; for write
saturation, until the written-bytes or time limit; for fixed tests, N times).

Resume rule (docs/resume.md): tests with a result are kept as they are.  In
the interrupted test, an interrupted fio run is discarded and re-run from its
start.  If the test was still in purge or preconditioning, it restarts from
its purge.  If it was in its rounds and the last complete round ended no more
than ``resume_gap`` seconds before the resumed run starts, the rounds simply
continue.  After a longer gap the drive may have recovered while idle, so the
test is preconditioned again and a new *segment* of rounds begins: a
steady-state window never spans a gap.

Rounds back to back (docs/methodology.md): while a round runs, the next round's
fio is started and held at its start by the hand-off; it is taken up once the
running round is stored and has not ended the test, and otherwise stopped and
discarded, never stored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import platform
import shutil
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from . import __version__, fiologs, histphase, jobfile, kinds
from .analysis import stages, steady
from .analysis.segments import segment_of, segment_rounds, segment_verdicts
from .analysis.stoprules import Standing, kind_named, kind_of, test_result
from .analysis.window import window, window_records
from .cacherecord import RunRecordSink
from .device.purge import PurgeRecord
from .errors import DeviceError, Interrupted, RunDirError, TkbenchError
from .handoff import markers_time, private_dir
from .kinds import copyrun
from .kinds.staged import common as procedures
from .plan import Plan, PlannedTest, Point
from .records import (
    Failure,
    Host,
    Manifest,
    Precondition,
    ProfileRef,
    Purge,
    Resume,
    Round,
    Series,
    TargetRecord,
    TargetState,
    TestPlan,
)
from .records.base import dump
from .results import (
    LiveFigures,
    StatusStream,
    counter_figures,
    point_at,
    summarize_round,
    tracking_values,
    written_bytes,
)
from .runner import STATUS_INTERVAL, FioFailed, FioProcess, FioRun, FioRunner
from .store import RunStore, TestData
from .target import Target
from .thermalwatch import ThermalWatch

# Seconds of idle between two rounds after which the drive may have recovered
# (docs/resume.md): the default --resume-gap, and the least gap inside a run that
# begins a new segment.  tkbench itself leaves a few ms between rounds started ahead,
# and where it cannot start them ahead (sequential points, fio servers) ~5 ms of its
# own between one fio's end and the next one's start, plus fio's start-up of about
# 0.4 s; any longer idle is an interruption, and SSDs recover within seconds (the
# PTS measures it in its Host Idle Recovery test).
IDLE_GAP_MIN = 1.0
FIO_STARTUP = 0.5  # seconds from starting fio to the first point's I/O, about
# How long before a round is expected to end the next round's fio is started and held
# (docs/methodology.md, "Rounds back to back"): well beyond fio's start-up and the
# threads' jobfile.LEAD, so the next round's first point is waiting when this one
# ends; a round shorter than that has its successor started at once.
START_AHEAD = 5.0
POLL = 0.05  # seconds between looks at a round whose successor is not yet started


class Progress(Protocol):
    """What the engine tells the user interface (the CLI renders it)."""

    def event(self, kind: str, **info: Any) -> None: ...


class NullProgress:
    def event(self, kind: str, **info: Any) -> None:
        pass


@dataclass
class EngineOptions:
    resume_gap: float = IDLE_GAP_MIN  # seconds of idle after which a test re-preconditions
    fio_timeout_margin: float = jobfile.STALL_MARGIN  # beyond a fio run's planned duration
    stop: Callable[[], bool] = field(default=lambda: False)  # polled between steps
    # start each round's successor while it runs (docs/methodology.md); off: a new
    # fio after each round (the benchmark's baseline)
    back_to_back: bool = True
    # called once every test is done and the writes have ended, before the manifest
    # says complete (runs._execute keeps the own-data mark there, so that no signal
    # between "complete" and the mark can lose it)
    before_complete: Callable[[], None] | None = None


def host_info() -> Host:
    uname = platform.uname()
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    os_name = "unknown"
    try:
        with open("/etc/os-release", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    os_name = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    mem = 0
    with contextlib.suppress(OSError, ValueError):
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return Host(
        hostname=socket.gethostname(),
        kernel=uname.release,
        os=os_name,
        machine=uname.machine,
        cpu=cpu,
        cpus=os.cpu_count(),
        memory_bytes=mem,
        python=sys.version.split()[0],
    )


def new_manifest(
    plan: Plan, target: Target, fio_version: str, command_line: list[str], hosts: list[str]
) -> Manifest:
    return Manifest(
        run_id=str(uuid.uuid4()),  # survives copying or moving the run directory
        tkbench_version=__version__,
        fio_version=fio_version,
        host=host_info(),
        fio_servers=tuple(hosts),
        command_line=tuple(command_line),
        profile=ProfileRef(
            name=plan.profile.name, source=plan.profile.source, resolved=plan.profile.resolved
        ),
        target=target_record(target),
        active_bytes=plan.active_bytes,
        tests=tuple(t.name for t in plan.tests),
        plan_notes=tuple(plan.notes),
        status="running",
        started=time.time(),
    )


def target_record(target: Target) -> TargetRecord:
    """The manifest's record of ``target``, with what proves it on a resume: the
    resolved path of a file or block device, a regular file's device and inode."""
    from .device.owndata import identify_node

    resolved = node = None
    if target.kind == "block":
        resolved = os.path.realpath(target.path)
    elif target.kind == "file":  # it exists: a run creates it before its manifest
        resolved, node, _ = identify_node(target.path)
    return TargetRecord(
        spec=target.spec,
        kind=target.kind,
        path=target.path,
        capacity_bytes=target.capacity,
        logical_sector=target.logical_sector,
        identity=target.identity,
        resolved=resolved,
        st_dev=node[0] if node else None,
        st_ino=node[1] if node else None,
        st_gen=node[2] if node else None,
    )


class Engine:
    def __init__(
        self,
        plan: Plan,
        target: Target,
        runner: FioRunner,
        store: RunStore,
        progress: Progress | None = None,
        options: EngineOptions | None = None,
    ) -> None:
        self.plan = plan
        self.target = target
        self.runner = runner
        self.store = store
        self.progress = progress or NullProgress()
        self.options = options or EngineOptions()
        # whether this engine has begun to write the target (a purge or a fio run
        # started): only then is the data the run leaves tkbench's (runs._execute)
        self.wrote = False
        self._runtime: Path | None = None  # the run's private hand-off directory
        # the byte ranges [start, end) its writes reached: all of the target for a
        # purge, a test's active range for its fio runs (what a mark may vouch for)
        self.extent: set[tuple[int, int]] = set()
        # the target's digest (tkbench.device.owndata.digest) once this engine's
        # writes had ended, however the run ended; None: not taken (nothing written,
        # not a target marked, or unreadable)
        self.ended_digest: str | None = None

    def _writing(self, test: PlannedTest | None) -> None:
        """A write of the target begins: a fio run of ``test`` (its active range), or
        a purge (``None``: the whole target)."""
        self.wrote = True
        end = test.active_bytes if test is not None and test.active_bytes else 0
        self.extent.add((0, end or self.target.capacity))

    # ------------------------------------------------------------------ run
    def run(self) -> Manifest:
        """Run (or continue) every planned test.  Returns the final manifest."""
        store = self.store
        data = store.load()
        self.progress.event("run_started", plan=self.plan, run_dir=str(store.root))
        # the drive's volatile write cache, set before the first test touches the drive
        setting = self.plan.profile.workload.write_cache
        cache = self.target.write_cache(setting, RunRecordSink(store))
        try:
            self._target_state(writing=True)
            cache.begin()
            for test in self.plan.tests:
                self._check_stop()
                existing = _find(data.tests, test.name)
                if existing is not None and existing.finished:
                    self.progress.event("test_skipped", test=test, reason="already complete")
                    continue
                if test.derive_from:
                    test = self._derive(test, existing)
                self.run_test(test, existing)
            cache.end()
            self._settle()
            if self.options.before_complete is not None:
                self.options.before_complete()
        except (KeyboardInterrupt, Interrupted):
            self._settle()
            store.log("interrupted: completed rounds are kept; continue with --resume")
            store.update_manifest(status="interrupted", ended=time.time())
            raise Interrupted(
                "interrupted: completed rounds are kept; resume with "
                f"tkbench run --resume {store.root}"
            ) from None
        except TkbenchError as exc:
            self._settle()
            store.log(f"failed: {exc}")
            store.update_manifest(status="failed", ended=time.time(), error=str(exc))
            raise
        except Exception as exc:  # a bug: keep the run directory truthful, then report it
            self._settle()
            why = f"internal error: {type(exc).__name__}: {exc}"
            store.log(f"failed: {why}")
            store.update_manifest(status="failed", ended=time.time(), error=why)
            raise
        finally:
            cache.end()  # after an error or an interrupt too (done once)
            if self._runtime is not None:
                shutil.rmtree(self._runtime, ignore_errors=True)
        manifest = store.update_manifest(status="complete", ended=time.time())
        store.log("run complete")
        self.progress.event("run_done", manifest=manifest)
        shutil.rmtree(store.root / ".scratch", ignore_errors=True)
        return manifest

    def _target_state(self, writing: bool, found: tuple[str, int] | None = None) -> None:
        """``target.json`` of a regular-file target (the proof a resume checks,
        docs/resume.md): ``writing`` from before the first write of a session until its
        writes have ended, then the digest ``found`` then."""
        if self.target.kind != "file":
            return
        before = self.store.target_state()
        digest, size = found or ((before.digest, before.size) if before else ("", 0))
        state = TargetState(size=size, digest=digest, writing=writing, at=time.time())
        self.store.save_target_state(state)

    def _settle(self) -> None:
        """The writes of this session have ended (every fio stopped, however the run
        ends): take the target's digest, for the mark and for ``target.json``.  Never
        fails the run (an unreadable target or a full results filesystem leave the
        proof open: a resume then compares what it can, and says so)."""
        if self.ended_digest is not None or not self.target.marks_own_data:
            return
        from .device import owndata

        found = owndata.digest_within(self.target.path)
        if found is None:
            self.store.log(f"cannot read {self.target.spec} for its digest after the run")
            return
        self.ended_digest = found[0]
        try:
            self._target_state(writing=False, found=found)
        except (OSError, TkbenchError) as exc:
            self.store.log(f"target.json not written: {exc}")

    def _check_stop(self) -> None:
        if self.options.stop():
            raise Interrupted("stop requested")

    # ------------------------------------------------------------------ test
    def run_test(self, test: PlannedTest, existing: TestData | None) -> None:
        store = self.store
        rounds = list(existing.rounds) if existing else []
        segment = max((r.segment for r in rounds), default=1)
        needs_purge = test.purge
        needs_pre = test.precondition is not None
        resumed = existing is not None
        if resumed:
            assert existing is not None
            # judged as of the last round: the idle time since then is no test time
            reason = (
                self._stop_reason(
                    test,
                    rounds,
                    segment,
                    _written(rounds),
                    _started(rounds),
                    now=rounds[-1].ended,
                )
                if rounds
                else None
            )
            if reason is not None:
                # the rounds were complete; only the result was not yet written
                store.log(f"resume {test.name}: its rounds were complete; result written")
                self._finish(test, rounds, segment, _written(rounds), reason)
                return
            action = self._resume_action(test, existing)
            kept = self._parts_kept(test) if action == "continue-parts" else None
            resume = Resume(
                at=time.time(),
                test=test.name,
                rounds_kept=len(rounds),
                action=action,
                parts_kept=kept,
            )
            store.update_manifest(resumes=(*store.manifest().resumes, resume))
            kept_words = (
                f"{kept} part(s)" if kept is not None else f"{len(rounds)} complete round(s)"
            )
            store.log(f"resume {test.name}: {action} ({kept_words} kept)")
            self.progress.event("test_resumed", test=test, action=action, rounds=len(rounds))
            if action in ("continue", "continue-parts"):
                needs_purge = needs_pre = False
            elif action == "re-precondition":
                needs_purge = False
                segment += 1
            elif action == "new-segment":
                needs_purge = needs_pre = False
                segment += 1
            else:  # restart
                rounds = []
                self._discard_rounds(test)
        else:
            # what the engine knows now and a reader could only guess later
            store.save_test_plan(test.name, self._record(test))
        self.progress.event("test_started", test=test, rounds_done=len(rounds))
        store.log(f"test {test.name}: started")
        self._health(test, "before")

        if needs_purge:
            self._check_stop()
            self._purge(test, segment)
        if needs_pre and test.precondition is not None:
            self._check_stop()
            self._precondition(test, segment)

        if not kinds.of_spec(test.spec).runs_fio:  # the copy step (tkbench.kinds.copyrun)
            self._copy_rounds(test, rounds, segment)
        else:
            if self._in_parts(test) and not rounds:
                self._parts(test, rounds, segment)
            self._rounds(test, rounds, segment)

    def _derive(self, test: PlannedTest, existing: TestData | None) -> PlannedTest:
        """A stage whose loads are chosen from an earlier stage's measurement window
        (the operating points): chosen now, or as recorded when it first started."""
        if existing is not None and existing.plan.operating:
            return procedures.resolve(test, existing.plan.operating)
        source = _find(self.store.load().tests, test.derive_from)
        if source is None or not source.finished:
            raise DeviceError(f"test {test.name}: stage {test.derive_from} has not completed")
        rounds = window_records(source.rounds, window(source))
        chosen = stages.choose(stages.grid(rounds), test.spec.response_ceiling * 1e9)
        for op in chosen:
            self.store.log(
                f"test {test.name}: {procedures.TITLES[op.name]} = T{op.numjobs}/Q{op.iodepth} "
                f"({op.iops:,.0f} IOPS, {op.lat_mean_ns / 1e6:.3f} ms): {op.why}"
            )
        return procedures.resolve(test, chosen)

    def _purge(self, test: PlannedTest, segment: int) -> None:
        self.progress.event("phase", test=test, phase="purge")
        t0 = time.time()
        profile = self.plan.profile
        if profile.purge.method != "none":
            self._writing(None)
        else:
            self.wrote = True
        try:
            record = self.target.purge(profile.purge.method, profile.purge.allow_fallback)
        except DeviceError as exc:
            failed = getattr(exc, "record", None)
            if failed is not None:  # the commands that ran, for the person fixing it
                info = purge_record(failed, t0, time.time(), segment, error=str(exc))
                self.store.save_phase(test.name, "purge-failed", info)
            raise
        done = purge_record(record, t0, time.time(), segment)
        self.store.save_phase(test.name, "purge", done)
        self.store.log(f"test {test.name}: purge by {done.method} in {done.seconds} s")

    def _health(self, test: PlannedTest, when: str) -> None:
        """Keep a SMART/health snapshot of the drive (block devices only; never fails a run)."""
        try:
            snap = self.target.health()
        except DeviceError as exc:
            snap = {"notes": [f"no health snapshot: {exc}"]}  # keys as a device's own
        if snap is None:
            return
        if when == "before" and (self.store.test_dir(test.name) / "health-before.json").exists():
            when = f"resume-{int(time.time())}"  # keep the snapshot from the test's start
        self.store.save_health(test.name, f"health-{when}", snap)

    def _resume_action(self, test: PlannedTest, existing: TestData) -> str:
        if not existing.rounds:
            # a stage run in parts goes on from its parts (the last of them again); with
            # one part stored, that is where it started: from its purge, as planned
            if self._in_parts(test) and self.store.load_parts(test.name):
                return "continue-parts"
            return "restart"
        gap = time.time() - existing.rounds[-1].ended
        return kind_named(test.spec.kind).resume_action(
            gap, self.options.resume_gap, test.precondition is not None
        )

    def _parts_kept(self, test: PlannedTest) -> int:
        """The parts of a stage run in parts that a resume keeps: every stored one (the
        last may run again before the next, as a lead-in: ``_parts``)."""
        return len(self.store.load_parts(test.name))

    def _in_parts(self, test: PlannedTest) -> bool:
        """Whether the engine runs ``test`` in parts: a stage of one long round, with the
        hand-off that lets a part follow the one before it closely (not with fio
        servers, whose hosts run no hand-off: there one fio runs the whole round)."""
        return test.in_parts and not self.runner.hosts

    def _discard_rounds(self, test: PlannedTest) -> None:
        d = self.store.test_dir(test.name)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        for name in ("rounds", "purge.json", "precondition.json", "histogram.json"):
            p = d / name
            if p.exists():
                p.rename(d / f"discarded-{stamp}-{name}")

    # ------------------------------------------------------------------ phases
    def _workdir(self) -> Path:
        return self._scratch(f"fio-{os.getpid()}-{time.monotonic_ns()}")

    def _scratch(self, name: str) -> Path:
        d = self.store.root / ".scratch" / name
        try:
            d.mkdir(parents=True)
        except OSError as exc:
            raise DeviceError(
                f"cannot write {d}: {exc.strerror or exc} (is the results filesystem full?)"
            ) from None
        return d

    def _jobfile(self, text: str) -> tuple[Path, Path]:
        """A fresh fio working directory with the job file in it: (workdir, job file)."""
        workdir = self._workdir()
        path = workdir / "job.fio"
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise DeviceError(
                f"cannot write {path}: {exc.strerror or exc} (is the results filesystem full?)"
            ) from None
        return workdir, path

    def _fio(
        self,
        test: PlannedTest,
        name: str,
        text: str,
        json_plus: bool,
        planned: float,
        labels: Mapping[str, str],
    ) -> FioRun:
        """Run one fio job file (the preconditioning); live figures go to the progress
        display as ``fio_status`` events, from fio's own status reports (``labels``: fio
        job name -> what people call it)."""
        workdir, path = self._jobfile(text)
        timeout = planned + self.options.fio_timeout_margin

        def show(fig: LiveFigures) -> None:
            self.progress.event("fio_status", test=test, **fig.to_dict())

        on_line = StatusStream(labels, show).feed
        try:
            self._writing(test)
            run = self.runner.run(
                path, workdir, json_plus=json_plus, timeout=timeout, on_line=on_line
            )
        except FioFailed as exc:
            info = Failure(test=test.name, error=str(exc), fio=exc.run.call())
            self.store.save_failure(
                test.name, f"{name}-{int(time.time())}", exc.run.stdout, text, info
            )
            raise
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return run

    def _precondition(self, test: PlannedTest, segment: int) -> None:
        pre = test.precondition
        assert pre is not None
        wl = test.spec.workload
        self.progress.event("phase", test=test, phase="precondition", bytes=pre.total_bytes)
        text = jobfile.precondition_jobfile(test, self.target.fio_options(wl.ioengine))
        limit = self.plan.profile.precondition.max_duration
        # generous: at 1 MB/s per GB of capacity this still ends (a real drive is far faster)
        planned = limit or max(3600.0, pre.total_bytes / 1e6)
        run = self._fio(
            test,
            "precondition",
            text,
            json_plus=False,
            planned=planned,
            labels={"precondition": "preconditioning"},
        )
        assert run.output is not None
        written = sum(j.write.io_bytes for j in run.output.jobs)
        record = Precondition(
            **dump(pre.record()),
            written_bytes=written,
            started=run.started,
            ended=run.started + run.seconds,
            seconds=round(run.seconds, 3),
            segment=segment,
            fio=run.call(),
            # precondition.max_duration ended it before the planned amount
            cut_short=written < pre.total_bytes,
        )
        # segment 1 is precondition.json; a later segment's keeps its own record
        phase = "precondition" if segment == 1 else f"precondition-s{segment}"
        self.store.save_phase(test.name, phase, record, raw=run.stdout, jobfile=text)
        self.store.log(
            f"test {test.name}: preconditioned with {written} bytes in {run.seconds:.1f} s"
        )

    def _round_text(
        self,
        test: PlannedTest,
        handoff: jobfile.Handoff | None,
        rounds: Sequence[Round] = (),
        follow: jobfile.Follow | None = None,
    ) -> str:
        # sequential streams go on where the stored rounds left them; a round started
        # ahead has none (_may_start_ahead): the round before it is not stored yet.  A
        # part of a stage (_parts) is its stage's first round: its streams start where
        # that round's would, wherever the part before it is
        starts = jobfile.stream_starts(test.points, rounds, test.active_bytes)
        assert follow is None or not starts or not rounds
        return jobfile.round_jobfile(
            test, self.target.fio_options(test.spec.workload.ioengine), handoff, starts, follow
        )

    def _rounds(self, test: PlannedTest, rounds: list[Round], segment: int) -> None:
        """Rounds until the test's kind says stop.  While a round runs, the next one is
        started ahead and held at its start by the hand-off (``_await``), so the rounds
        follow each other as closely as the points of a round; it is used only once the
        round before it is stored and has not ended the test, otherwise it is stopped
        and discarded, never stored (docs/methodology.md, "Rounds back to back")."""
        total_written = int(sum(r.written_bytes for r in rounds))
        started = rounds[0].started if rounds else time.time()
        cur: _RoundRun | None = None
        ahead: _RoundRun | None = None  # the next round, started while ``cur`` runs
        thermal = ThermalWatch(self.target.thermal_reader(), clock=time.time, log=self.store.log)
        thermal.start()
        try:
            while True:
                n = len(rounds) + 1
                reason = self._stop_reason(test, rounds, segment, total_written, started)
                if reason is not None:
                    if ahead is not None:
                        self._discard(test, ahead, f"round {n - 1} ended the test ({reason})")
                        ahead = None
                    break
                self._check_stop()
                if ahead is None:
                    segment = self._after_idle(test, rounds, segment)
                    self.progress.event(
                        "round_started", test=test, round=n, seconds=test.round_seconds
                    )
                    cur = self._start_round(test, n, rounds)
                else:
                    cur, ahead = ahead, None  # under way since the last round ended
                    cur.end_eta = time.monotonic() + test.round_seconds  # from now, not drifting
                    self.progress.event(
                        "round_started", test=test, round=n, seconds=test.round_seconds
                    )
                cur.sampler = CounterSampler(
                    self.target,
                    test.points,
                    lambda fig: self.progress.event("fio_status", test=test, **fig.to_dict()),
                    startup=FIO_STARTUP if cur.follows is None else 0.0,
                )
                ahead = self._await(test, cur, rounds, segment, total_written, started)
                run = self._collect(test, cur)
                cur.last_done = _last_point_done(cur)
                began = run.started
                if cur.follows is not None:
                    # it began when the round before it ended its last point
                    began = cur.follows.last_done or began
                    cur.follows = None
                    if self._idle_gap(test, rounds, segment, began):
                        # released long after the round before it ended (nothing in tkbench
                        # waits that long; the machine stood still): the drive may have
                        # recovered before it, so it is no round of this segment
                        self._discard(test, cur, "it began after an idle gap")
                        if ahead is not None:
                            self._discard(test, ahead, f"round {n} was discarded")
                            ahead = None
                        cur = None
                        continue
                record = self._round_record(
                    test, n, segment, run, cur.text, began, total_written, cur.series
                )
                self.store.save_round(test.name, record, run.stdout, cur.text)
                # read once the round is stored (the next round, started ahead, runs)
                record = self._temperature(test, thermal, record)
                total_written = int(record.total_written_bytes)
                rounds.append(record)
                cur = None  # stored; ``ahead`` (if any) still knows when it ended
                self.progress.event(
                    "round_done",
                    test=test,
                    round=n,
                    tracking=record.tracking,
                    verdicts=self._verdicts(test, rounds, segment),
                    total_written=total_written,
                )
        finally:
            # an error or an interrupt: the fio of the round under way, and of one started
            # ahead of it, are stopped; neither is stored (a later resume runs them anew)
            _stop_runs(cur, ahead)
        self._finish(test, rounds, segment, total_written, reason)

    def _parts(self, test: PlannedTest, rounds: list[Round], segment: int) -> None:
        """The one round of a stage run in parts (``PlannedTest.in_parts``): one fio per
        point, each started ahead of the one before it ends and held by the hand-off,
        so the points follow each other as closely as in one fio run, and each stored
        as it ends (rounds/0001.parts/).  Once all are stored they form the round, the
        record one fio run would have made; ``_rounds`` then sees the stage done.

        Resumed with parts stored, the stored parts stand.  The next part must follow
        its stimulus directly, as planned, not a drive that rested: unless it is a
        pre-write (which conditions the drive itself), the last stored part runs again
        first as a *lead-in*, kept beside the parts but never in place of the first
        attempt's record (docs/resume.md)."""
        parts = self.store.load_parts(test.name)
        count = len(test.points)
        todo = [(k + 1, test.part(k)) for k in range(len(parts), count)]
        if parts and todo and test.points[len(parts)].role != "prewrite":
            todo.insert(0, (0, test.part(len(parts) - 1)))  # 0: the lead-in
            self.store.log(
                f"test {test.name}: part {len(parts)} of {count} runs again as a lead-in "
                f"(its first record stands), so that part {len(parts) + 1} follows it as planned"
            )
        self.progress.event(
            "round_started",
            test=test,
            round=1,
            seconds=math.fsum(p.round_seconds for _, p in todo),
        )
        thermal = ThermalWatch(self.target.thermal_reader(), clock=time.time, log=self.store.log)
        thermal.start()
        written = int(parts[-1].total_written_bytes) if parts else _written(rounds)
        cur: _RoundRun | None = None
        ahead: _RoundRun | None = None
        try:
            for at, (k, part) in enumerate(todo):
                self._check_stop()
                if ahead is None:
                    cur = self._start_round(part, 1, ())
                else:
                    cur, ahead = ahead, None
                    cur.end_eta = time.monotonic() + part.round_seconds
                point = part.points[0]
                what = f"part {k} of {count}" if k else f"lead-in: part {point.index + 1} again"
                self.progress.event("phase", test=test, phase=f"{what}: {point.tag or point.label}")
                cur.sampler = CounterSampler(
                    self.target,
                    part.points,
                    lambda fig: self.progress.event("fio_status", test=test, **fig.to_dict()),
                    startup=FIO_STARTUP if cur.follows is None else 0.0,
                )
                if at + 1 < len(todo) and self.options.back_to_back and cur.handoff is not None:
                    following = todo[at + 1][1]
                    ahead = _ahead_of(
                        cur, functools.partial(self._start_round, following, 1, (), after=cur)
                    )
                run = self._collect(part, cur)
                cur.last_done = _last_point_done(cur)
                began = run.started
                if cur.follows is not None:
                    began = cur.follows.last_done or began  # when the part before it ended
                    cur.follows = None
                record = self._round_record(
                    part, 1, segment, run, cur.text, began, written, cur.series
                )
                written = int(record.total_written_bytes)
                if k:
                    self.store.save_part(test.name, k, record, run.stdout, cur.text)
                    self.store.log(f"test {test.name}: part {k} of {count} stored")
                    parts.append(record)
                else:
                    self.store.save_lead_in(
                        test.name, point.index + 1, record, run.stdout, cur.text
                    )
                cur = None
        finally:
            _stop_runs(cur, ahead)  # never stored: a resume runs them again
        points = tuple(p for part_round in parts for p in part_round.points)
        record = Round(
            test=test.name,
            round=1,
            segment=segment,
            started=parts[0].started,
            ended=parts[-1].ended,
            fio=parts[0].fio,
            points=points,
            tracking=tracking_values(list(points), test.tracking),
            written_bytes=math.fsum(p.written_bytes for p in parts),
            total_written_bytes=written,
        )
        self.store.save_round_of_parts(test.name, record, len(parts))
        record = self._temperature(test, thermal, record)
        rounds.append(record)
        self.progress.event(
            "round_done",
            test=test,
            round=1,
            tracking=record.tracking,
            verdicts={},
            total_written=int(record.total_written_bytes),
        )

    def _copy_rounds(self, test: PlannedTest, rounds: list[Round], segment: int) -> None:
        """A copy test's runs (tkbench.copyrun) in place of fio's rounds: its file sets
        written (or found complete) first, then each round copies every set x data
        pattern once and is stored before the next begins; the test's kind says when
        to stop, as for any test."""
        workdir = getattr(self.target, "workdir", None)
        if workdir is None:
            raise DeviceError(f"test {test.name}: a copy test runs in a volume's working directory")
        session = copyrun.CopySession(test.spec, Path(workdir), self.store.log, self.options.stop)

        def announce(what: str, size: int) -> None:
            self.progress.event("phase", test=test, phase=what, bytes=size)

        session.prepare(announce)
        total_written = _written(rounds)
        started = _started(rounds)
        while True:
            reason = self._stop_reason(test, rounds, segment, total_written, started)
            if reason is not None:
                break
            self._check_stop()
            n = len(rounds) + 1
            self.progress.event("round_started", test=test, round=n, seconds=test.round_seconds)
            began = time.time()
            copies = []
            for point in test.points:
                self._check_stop()
                self.progress.event("phase", test=test, phase=f"copy {point.tag}", bytes=point.size)
                copies.append(session.copy(point))
            written = sum(p.size for p in test.points)
            record = Round(
                test=test.name,
                round=n,
                segment=segment,
                started=began,
                ended=time.time(),
                points=tuple(c.result() for c in copies),
                tracking={},
                written_bytes=written,
                total_written_bytes=total_written + written,
            )
            self.store.save_copy_round(test.name, record, copyrun.round_log(copies))
            total_written = int(record.total_written_bytes)
            rounds.append(record)
            self.progress.event(
                "round_done",
                test=test,
                round=n,
                tracking={f"{c.point.copy_set} {c.point.data} MB/s": c.mb_s for c in copies},
                verdicts={},
                total_written=total_written,
            )
        session.close()
        self._finish(test, rounds, segment, total_written, reason)

    def _handoff(self) -> jobfile.Handoff | None:
        """The hand-off hooks of a job file: none when fio runs on fio servers (their
        hosts run no tkbench)."""
        if self.runner.hosts:
            return None
        return jobfile.Handoff(
            str(self._handoff_dir()),
            timeout_margin=self.options.fio_timeout_margin,
            owner=str(self.store.root.absolute() / ".scratch"),
        )

    def _start_round(
        self,
        test: PlannedTest,
        n: int,
        rounds: Sequence[Round],
        after: _RoundRun | None = None,
    ) -> _RoundRun:
        """Start round ``n``'s fio: at once, or ``after`` a round that still runs, held at
        its start until that round's last point is over."""
        handoff = self._handoff()
        now = time.monotonic()
        follow = None
        if after is not None:
            assert handoff is not None and after.handoff is not None
            shift = max(0.0, after.end_eta - now)
            follow = jobfile.Follow(after.handoff.directory, after.last, shift)
        else:
            shift = FIO_STARTUP
        text = self._round_text(test, handoff, rounds, follow)
        workdir, path = self._jobfile(text)
        timeout = shift + test.round_seconds + self.options.fio_timeout_margin
        try:
            self._writing(test)
            process = self.runner.start(
                path, workdir, json_plus=test.spec.histogram, timeout=timeout
            )
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        return _RoundRun(
            number=n,
            text=text,
            handoff=handoff,
            process=process,
            workdir=workdir,
            end_eta=now + shift + test.round_seconds,
            last=test.points[-1],
            follows=after,
        )

    def _may_start_ahead(
        self,
        test: PlannedTest,
        cur: _RoundRun,
        rounds: list[Round],
        segment: int,
        total_written: int,
        started: float,
    ) -> bool:
        """Whether the round after ``cur`` is started while ``cur`` runs: not without the
        hand-off (fio servers); not for a test with sequential points, whose streams
        start where the *stored* rounds left them (docs/methodology.md); not when ``cur``
        is certainly the test's last (a round or repetition limit)."""
        if not self.options.back_to_back or cur.handoff is None:
            return False
        if any(p.pattern == "sequential" for p in test.points):
            return False
        standing = Standing(
            rounds=rounds,
            segment=segment,
            total_written=total_written,
            started=started,
            now=time.time(),
            capacity=self.target.capacity,
        )
        record = self._record(test)
        return not kind_of(record).next_is_last(record, standing)

    def _await(
        self,
        test: PlannedTest,
        cur: _RoundRun,
        rounds: list[Round],
        segment: int,
        total_written: int,
        started: float,
    ) -> _RoundRun | None:
        """While ``cur`` runs: start the next round ``START_AHEAD`` seconds before ``cur``
        is expected to end (at once for a shorter round), or None when no round is
        started ahead (see ``_may_start_ahead``) or ``cur`` ended before that."""
        if not self._may_start_ahead(test, cur, rounds, segment, total_written, started):
            return None

        def start_next() -> _RoundRun:
            self.progress.event("round_started_ahead", test=test, round=cur.number + 1)
            return self._start_round(test, cur.number + 1, rounds, after=cur)

        return _ahead_of(cur, start_next)

    def _collect(self, test: PlannedTest, cur: _RoundRun) -> FioRun:
        """Wait for a round's fio; a failed run is kept in ``failed/`` and raised."""
        try:
            run = cur.process.wait()
            if test.spec.sample > 0:  # per-interval logs, read before the directory goes
                cur.series = {
                    p.job_name: fiologs.read_series(cur.workdir, p.job_name, test.spec.sample)
                    for p in test.points
                }
            return run
        except FioFailed as exc:
            info = Failure(test=test.name, error=str(exc), fio=exc.run.call())
            self.store.save_failure(
                test.name,
                f"round-{cur.number:04d}-{int(time.time())}",
                exc.run.stdout,
                cur.text,
                info,
            )
            raise
        finally:
            if cur.sampler is not None:
                cur.sampler.stop()
            shutil.rmtree(cur.workdir, ignore_errors=True)

    def _discard(self, test: PlannedTest, r: _RoundRun, why: str) -> None:
        """Stop a round started ahead (if still running) and forget it: its output is
        never read, nothing of it is stored or counted."""
        _stop_runs(r)
        self.store.log(f"test {test.name}: round {r.number}, started ahead, discarded: {why}")
        self.progress.event("round_discarded", test=test, round=r.number, reason=why)

    def _round_record(
        self,
        test: PlannedTest,
        n: int,
        segment: int,
        run: FioRun,
        text: str,
        began: float,
        total_before: int,
        series: Mapping[str, Series | None] | None = None,
    ) -> Round:
        assert run.output is not None
        try:
            points = summarize_round(test.points, run.output, with_bins=test.spec.histogram)
            if series:
                points = [dataclasses.replace(p, series=series.get(p.job)) for p in points]
            values = tracking_values(points, test.tracking)
        except TkbenchError as exc:
            info = Failure(test=test.name, error=str(exc), fio=run.call())
            self.store.save_failure(
                test.name, f"round-{n:04d}-{int(time.time())}", run.stdout, text, info
            )
            raise
        written = written_bytes(points)
        return Round(
            test=test.name,
            round=n,
            segment=segment,
            started=began,
            ended=run.started + run.seconds,
            fio=run.call(),
            points=tuple(points),
            tracking=values,
            written_bytes=written,
            total_written_bytes=total_before + written,
        )

    def _finish(
        self,
        test: PlannedTest,
        rounds: list[Round],
        segment: int,
        total_written: int,
        stop_reason: str,
    ) -> None:
        self._histogram_phase(test, rounds, stop_reason)
        seg = segment_rounds(rounds, segment) or rounds
        result = test_result(
            self._record(test),
            rounds,
            self.target.capacity,
            segment,
            total_written,
            len(seg),
            stop_reason=stop_reason,
        )
        self._health(test, "after")
        self.target.test_done(test.name)
        self.store.save_result(test.name, result)
        self.store.log(f"test {test.name}: {result.summary}")
        self.progress.event("test_done", test=test, result=result)

    def _histogram_phase(self, test: PlannedTest, rounds: list[Round], stop_reason: str) -> None:
        """After the rounds, the response-time histogram phase (tkbench/histphase.py),
        unless the test has none or it is stored already."""
        point = test.histogram_point
        done = self.store.test_dir(test.name) / f"{histphase.PHASE}.json"
        if point is None or done.exists():
            return
        self._check_stop()
        self.progress.event("phase", test=test, phase="response-time histogram")
        options = self.target.fio_options(test.spec.workload.ioengine)
        text = histphase.jobfile_text(test, options, self._handoff())
        labels = {point.job_name: "response-time histogram"}
        run = self._fio(test, histphase.PHASE, text, True, point.runtime, labels=labels)
        info = histphase.record(test, run, rounds, stop_reason)
        self.store.save_phase(test.name, histphase.PHASE, info, raw=run.stdout, jobfile=text)
        self.store.log(f"test {test.name}: response-time histogram in {run.seconds:.1f} s")

    def _temperature(self, test: PlannedTest, thermal: ThermalWatch, record: Round) -> Round:
        """The drive's temperature, read once the round is stored (time-boxed, never
        failing the run), added to the round's record."""
        noted = thermal.after_round(record)
        if noted is not record:
            self.store.update_round(test.name, noted)
        return noted

    def _after_idle(self, test: PlannedTest, rounds: list[Round], segment: int) -> int:
        """A gap between rounds longer than ``resume_gap`` (the machine was suspended,
        tkbench was stopped) lets the drive recover: start a new segment, after
        preconditioning again, so no steady-state window spans the gap."""
        if not self._idle_gap(test, rounds, segment, time.time()):
            return segment
        gap = time.time() - rounds[-1].ended
        segment += 1
        self.store.log(
            f"test {test.name}: {gap:.0f} s idle since round {rounds[-1].round}; "
            f"new segment {segment}"
        )
        self.progress.event(
            "test_resumed", test=test, action="idle gap: new segment", rounds=len(rounds)
        )
        if test.precondition is not None:
            self._precondition(test, segment)
        return segment

    def _idle_gap(self, test: PlannedTest, rounds: list[Round], segment: int, at: float) -> bool:
        """Whether a round beginning at ``at`` (epoch seconds) follows the last stored
        round after an idle gap the drive could have recovered in: longer than
        ``resume_gap`` and than IDLE_GAP_MIN, for a kind whose idle gaps begin a segment."""
        if (
            not rounds
            or not kind_named(test.spec.kind).idle_starts_segment
            or segment_of(rounds[-1]) != segment
        ):
            # no rounds, or a segment a resume has just begun (after preconditioning
            # again): the gap before it is already dealt with
            return False
        return at - rounds[-1].ended > max(self.options.resume_gap, IDLE_GAP_MIN)

    def _handoff_dir(self) -> Path:
        """A round's hand-off markers: in the run's private directory on a local
        filesystem (tkbench.handoff.private_dir), never below the run directory."""
        try:
            if self._runtime is None:
                self._runtime = Path(private_dir())
            d = self._runtime / f"handoff-{time.monotonic_ns()}"
            d.mkdir()
        except OSError as exc:
            raise DeviceError(f"cannot create the hand-off directory: {exc}") from None
        return d

    def _verdicts(
        self, test: PlannedTest, rounds: list[Round], segment: int
    ) -> dict[str, steady.Verdict]:
        return segment_verdicts(self._record(test), rounds, segment)

    def _stop_reason(
        self,
        test: PlannedTest,
        rounds: list[Round],
        segment: int,
        total_written: int,
        started: float,
        now: float | None = None,
    ) -> str | None:
        """Why the test stops now (recorded in its result), or None to run a round."""
        progress = Standing(
            rounds=rounds,
            segment=segment,
            total_written=total_written,
            started=started,
            now=time.time() if now is None else now,
            capacity=self.target.capacity,
        )
        record = self._record(test)
        return kind_of(record).stop_reason(record, progress)

    def _record(self, test: PlannedTest) -> TestPlan:
        """The test as its ``test.json`` states it (what the stop rules read)."""
        if not kinds.of_spec(test.spec).runs_fio:  # read() and write() (kinds.copyrun)
            return test.record(ioengine_used="read/write")
        used = self.target.fio_options(test.spec.workload.ioengine)["ioengine"]
        return test.record(ioengine_used=str(used))


class CounterSampler:
    """Live figures of a round from the target device's kernel counters, every
    :data:`STATUS_INTERVAL` seconds, for the point the schedule says is running
    (``startup``, fio's start-up of about half a second, is not counted; a round
    started ahead has none left when it is taken up).  Targets without a
    block device of this kernel (NBD) give none."""

    def __init__(
        self,
        target: Target,
        points: Sequence[Point],
        show: Callable[[LiveFigures], None],
        startup: float = FIO_STARTUP,
    ) -> None:
        self.target, self.points, self.show = target, points, show
        self.startup = startup  # seconds from now to the round's first I/O, about
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if target.io_counters() is not None:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        t0 = last_t = time.monotonic()
        last = self.target.io_counters()
        while not self._stop.wait(STATUS_INTERVAL):
            now, counters = time.monotonic(), self.target.io_counters()
            point = point_at(self.points, now - t0 - self.startup)
            if last is not None and counters is not None and point is not None:
                fig = counter_figures(last, counters, now - last_t, point.label)
                if fig is not None:
                    with contextlib.suppress(Exception):  # a display, never the run's fault
                        self.show(fig)
            last, last_t = counters, now

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


@dataclass
class _RoundRun:
    """A round's fio under way: started when its turn came, or ahead of time, after
    the round ``follows`` (then held at its start by the hand-off)."""

    number: int
    text: str  # its job file
    handoff: jobfile.Handoff | None
    process: FioProcess
    workdir: Path
    end_eta: float  # time.monotonic() at which its last point is expected to end
    last: Point  # its last point (the one a round started after it waits for)
    follows: _RoundRun | None = None
    sampler: CounterSampler | None = None
    last_done: float | None = None  # epoch seconds its last point ended (once known)
    series: dict[str, Series | None] | None = None  # per-interval samples by fio job


def _stop_runs(*runs: _RoundRun | None) -> None:
    """Stop the fio of each run still under way and drop its working directory."""
    for r in runs:
        if r is not None:
            r.process.stop()
            if r.sampler is not None:
                r.sampler.stop()
            shutil.rmtree(r.workdir, ignore_errors=True)


def _ahead_of(cur: _RoundRun, start: Callable[[], _RoundRun]) -> _RoundRun | None:
    """While ``cur`` runs: ``start`` the next fio ``START_AHEAD`` seconds before ``cur``
    is expected to end (at once for a shorter run); None when ``cur`` ended first."""
    due = cur.end_eta - START_AHEAD
    while not cur.process.finished():
        left = due - time.monotonic()
        if left <= 0:
            return start()
        time.sleep(min(POLL, left))
    return None


def _last_point_done(r: _RoundRun) -> float | None:
    """When the last point of a finished round ended: the time its clones left their
    hand-off markers (None without markers: no hand-off, or a fake fio)."""
    if r.handoff is None:
        return None
    return markers_time(r.handoff.directory, r.last.index)


def _written(rounds: list[Round]) -> int:
    return int(rounds[-1].total_written_bytes) if rounds else 0


def _started(rounds: list[Round]) -> float:
    return rounds[0].started if rounds else time.time()


def purge_record(
    done: PurgeRecord, started: float, ended: float, segment: int, error: str | None = None
) -> Purge:
    """A purge (or a failed one, with ``error``) as the run directory keeps it."""
    return Purge(
        method=done.method,
        pts_compliant=done.pts_compliant,
        device=done.device,
        interface=done.interface,
        requested_method=done.requested_method,
        commands=tuple(done.commands),
        seconds=done.seconds,
        started_at=done.started_at,
        notes=tuple(done.notes),
        started=started,
        ended=ended,
        segment=segment,
        error=error,
    )


def _find(tests: list[TestData], name: str) -> TestData | None:
    for t in tests:
        if t.name == name:
            return t
    return None


def check_resumable(data: Any) -> None:
    status = data.manifest.status
    if status == "complete":
        raise RunDirError(f"{data.root}: the run is already complete; nothing to resume")
