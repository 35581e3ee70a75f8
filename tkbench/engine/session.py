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

The run session is here (:class:`Engine`: the tests in turn, purge, preconditioning,
resume, result); a test's progress is one :class:`~tkbench.engine.state.TestState`;
the round loop (:mod:`~tkbench.engine.rounds`), the rounds started ahead
(:mod:`~tkbench.engine.pipeline`), a stage run in parts (:mod:`~tkbench.engine.parts`)
and the single fio runs (:mod:`~tkbench.engine.steps`) have their own modules.
"""

from __future__ import annotations

import shutil

from tkbench import kinds
from tkbench.analysis.segments import segment_rounds
from tkbench.analysis.stoprules import kind_named, test_result
from tkbench.analysis.window import window, window_records
from tkbench.device import owndata
from tkbench.engine import clock, events, histphase
from tkbench.engine.copying import copy_rounds
from tkbench.engine.manifest import purge_record
from tkbench.engine.options import EngineOptions, NullProgress, Progress
from tkbench.engine.parts import in_parts, parts_kept, run_parts
from tkbench.engine.pipeline import Pipeline
from tkbench.engine.rounds import RoundLoop
from tkbench.engine.state import TestState
from tkbench.engine.steps import Steps
from tkbench.errors import DeviceError, Interrupted, TkbenchError
from tkbench.fio.runner import FioRunner
from tkbench.kinds.staged import common as procedures
from tkbench.kinds.staged import results as stages
from tkbench.plan.build import Plan
from tkbench.plan.model import PlannedTest
from tkbench.rundir.records import Manifest, Resume, Round, TargetState
from tkbench.rundir.store import RunStore, TestData
from tkbench.rundir.writecache import RunRecordSink
from tkbench.targets.base import Target


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
        self.steps = Steps(plan, target, runner, store, self.progress, self.options)
        self.pipeline = Pipeline(self.steps)
        self.loop = RoundLoop(self.steps, self.pipeline)
        # the target's digest (tkbench.device.owndata.digest) once this engine's
        # writes had ended, however the run ended; None: not taken (nothing written,
        # not a target marked, or unreadable)
        self.ended_digest: str | None = None

    @property
    def wrote(self) -> bool:
        """Whether this engine has begun to write the target (a purge or a fio run
        started): only then is the data the run leaves tkbench's (runs._execute)."""
        return self.steps.wrote

    @property
    def extent(self) -> set[tuple[int, int]]:
        """The byte ranges [start, end) its writes reached: all of the target for a
        purge, a test's active range for its fio runs (what a mark may vouch for)."""
        return self.steps.extent

    # ------------------------------------------------------------------ run
    def run(self) -> Manifest:
        """Run (or continue) every planned test.  Returns the final manifest."""
        store = self.store
        data = store.load()
        self.progress.event(events.RunStarted(self.plan, str(store.root)))
        # the drive's volatile write cache, set before the first test touches the drive
        setting = self.plan.profile.workload.write_cache
        cache = self.target.write_cache(setting, RunRecordSink(store))
        try:
            self._target_state(writing=True)
            cache.begin()
            for test in self.plan.tests:
                self.steps.check_stop()
                existing = _find(data.tests, test.name)
                if existing is not None and existing.finished:
                    self.progress.event(events.TestSkipped(test, "already complete"))
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
            store.update_manifest(status="interrupted", ended=clock.time())
            raise Interrupted(
                "interrupted: completed rounds are kept; resume with "
                f"tkbench run --resume {store.root}"
            ) from None
        except TkbenchError as exc:
            self._settle()
            store.log(f"failed: {exc}")
            store.update_manifest(status="failed", ended=clock.time(), error=str(exc))
            raise
        except Exception as exc:  # a bug: keep the run directory truthful, then report it
            self._settle()
            why = f"internal error: {type(exc).__name__}: {exc}"
            store.log(f"failed: {why}")
            store.update_manifest(status="failed", ended=clock.time(), error=why)
            raise
        finally:
            cache.end()  # after an error or an interrupt too (done once)
            if self.steps.runtime is not None:
                shutil.rmtree(self.steps.runtime, ignore_errors=True)
        manifest = store.update_manifest(status="complete", ended=clock.time())
        store.log("run complete")
        self.progress.event(events.RunDone(manifest))
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
        state = TargetState(size=size, digest=digest, writing=writing, at=clock.time())
        self.store.save_target_state(state)

    def _settle(self) -> None:
        """The writes of this session have ended (every fio stopped, however the run
        ends): take the target's digest, for the mark and for ``target.json``.  Never
        fails the run (an unreadable target or a full results filesystem leave the
        proof open: a resume then compares what it can, and says so)."""
        if self.ended_digest is not None or not self.target.marks_own_data:
            return
        found = owndata.digest_within(self.target.path)
        if found is None:
            self.store.log(f"cannot read {self.target.spec} for its digest after the run")
            return
        self.ended_digest = found[0]
        try:
            self._target_state(writing=False, found=found)
        except (OSError, TkbenchError) as exc:
            self.store.log(f"target.json not written: {exc}")

    # ------------------------------------------------------------------ test
    def run_test(self, test: PlannedTest, existing: TestData | None) -> None:
        store, steps = self.store, self.steps
        state = TestState.of(test, list(existing.rounds) if existing else [])
        rounds = state.rounds
        needs_purge = test.purge
        needs_pre = test.precondition is not None
        resumed = existing is not None
        if resumed:
            assert existing is not None
            # judged as of the last round: the idle time since then is no test time
            reason = steps.stop_reason(state, now=rounds[-1].ended) if rounds else None
            if reason is not None:
                # the rounds were complete; only the result was not yet written
                store.log(f"resume {test.name}: its rounds were complete; result written")
                self._finish(state, reason)
                return
            action = self._resume_action(test, existing)
            kept = parts_kept(steps, test) if action == "continue-parts" else None
            resume = Resume(
                at=clock.time(),
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
            self.progress.event(events.TestResumed(test, action, len(rounds)))
            if action in ("continue", "continue-parts"):
                needs_purge = needs_pre = False
            elif action == "re-precondition":
                needs_purge = False
                state.segment += 1
            elif action == "new-segment":
                needs_purge = needs_pre = False
                state.segment += 1
            else:  # restart
                state.rounds = rounds = []
                self._discard_rounds(test)
        else:
            # what the engine knows now and a reader could only guess later
            store.save_test_plan(test.name, steps.record(test))
        self.progress.event(events.TestStarted(test, len(rounds)))
        store.log(f"test {test.name}: started")
        self._health(test, "before")

        if needs_purge:
            steps.check_stop()
            self._purge(test, state.segment)
        if needs_pre and test.precondition is not None:
            steps.check_stop()
            steps.precondition(test, state.segment)

        if not kinds.of_spec(test.spec).runs_fio:  # the copy step (tkbench.kinds.copyrun)
            reason = copy_rounds(steps, state)
        else:
            if in_parts(steps, test) and not rounds:
                run_parts(steps, self.pipeline, state)
            reason = self.loop.run(state)
        self._finish(state, reason)

    def _derive(self, test: PlannedTest, existing: TestData | None) -> PlannedTest:
        """A stage whose loads are chosen from an earlier stage's measurement window
        (the operating points): chosen now, or as recorded when it first started."""
        if existing is not None and existing.plan.operating:
            return procedures.resolve(test, existing.plan.operating)
        source = _find(self.store.load().tests, test.derive_from)
        if source is None or not source.finished:
            raise DeviceError(f"test {test.name}: stage {test.derive_from} has not completed")
        rounds = window_records(source.rounds, window(source))
        chosen = stages.choose(stages.grid(rounds), test.response_ceiling * 1e9)
        for op in chosen:
            self.store.log(
                f"test {test.name}: {procedures.TITLES[op.name]} = T{op.numjobs}/Q{op.iodepth} "
                f"({op.iops:,.0f} IOPS, {op.lat_mean_ns / 1e6:.3f} ms): {op.why}"
            )
        return procedures.resolve(test, chosen)

    def _purge(self, test: PlannedTest, segment: int) -> None:
        self.progress.event(events.Phase(test, "purge"))
        t0 = clock.time()
        profile = self.plan.profile
        if profile.purge.method != "none":
            self.steps.writing(None)
        else:
            self.steps.wrote = True
        try:
            record = self.target.purge(profile.purge.method, profile.purge.allow_fallback)
        except DeviceError as exc:
            failed = getattr(exc, "record", None)
            if failed is not None:  # the commands that ran, for the person fixing it
                info = purge_record(failed, t0, clock.time(), segment, error=str(exc))
                self.store.save_phase(test.name, "purge-failed", info)
            raise
        done = purge_record(record, t0, clock.time(), segment)
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
            when = f"resume-{int(clock.time())}"  # keep the snapshot from the test's start
        self.store.save_health(test.name, f"health-{when}", snap)

    def _resume_action(self, test: PlannedTest, existing: TestData) -> str:
        if not existing.rounds:
            # a stage run in parts goes on from its parts (the last of them again); with
            # one part stored, that is where it started: from its purge, as planned
            if in_parts(self.steps, test) and self.store.load_parts(test.name):
                return "continue-parts"
            return "restart"
        gap = clock.time() - existing.rounds[-1].ended
        return kind_named(test.spec.kind).resume_action(
            gap, self.options.resume_gap, test.precondition is not None
        )

    def _discard_rounds(self, test: PlannedTest) -> None:
        d = self.store.test_dir(test.name)
        stamp = clock.strftime("%Y%m%dT%H%M%S")
        for name in ("rounds", "purge.json", "precondition.json", "histogram.json"):
            p = d / name
            if p.exists():
                p.rename(d / f"discarded-{stamp}-{name}")

    def _finish(self, state: TestState, stop_reason: str) -> None:
        test, rounds = state.test, state.rounds
        self._histogram_phase(test, rounds, stop_reason)
        seg = segment_rounds(rounds, state.segment) or rounds
        result = test_result(
            self.steps.record(test),
            rounds,
            self.target.capacity,
            state.segment,
            state.total_written,
            len(seg),
            stop_reason=stop_reason,
        )
        self._health(test, "after")
        self.target.test_done(test.name)
        self.store.save_result(test.name, result)
        self.store.log(f"test {test.name}: {result.summary}")
        self.progress.event(events.TestDone(test, result))

    def _histogram_phase(self, test: PlannedTest, rounds: list[Round], stop_reason: str) -> None:
        """After the rounds, the response-time histogram phase (tkbench/engine/histphase.py),
        unless the test has none or it is stored already."""
        point = test.histogram_point
        done = self.store.test_dir(test.name) / f"{histphase.PHASE}.json"
        if point is None or done.exists():
            return
        self.steps.check_stop()
        self.progress.event(events.Phase(test, "response-time histogram"))
        options = self.target.fio_options(test.spec.workload.ioengine)
        text = histphase.jobfile_text(test, options, self.steps.handoff())
        labels = {point.job_name: "response-time histogram"}
        run = self.steps.fio(test, histphase.PHASE, text, True, point.runtime, labels=labels)
        info = histphase.record(test, run, rounds, stop_reason)
        self.store.save_phase(test.name, histphase.PHASE, info, raw=run.stdout, jobfile=text)
        self.store.log(f"test {test.name}: response-time histogram in {run.seconds:.1f} s")


def _find(tests: list[TestData], name: str) -> TestData | None:
    for t in tests:
        if t.name == name:
            return t
    return None
