"""What every step of a run works with: the plan, the target, fio, the run directory,
the progress display and the options; and the steps made of one fio run each (the
preconditioning, the histogram phase), the job files and working directories, the
hand-off directories, a round's record and what the writes reached."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from tkbench import kinds
from tkbench.analysis import steady
from tkbench.analysis.segments import segment_verdicts
from tkbench.analysis.stoprules import kind_of
from tkbench.engine import clock, events
from tkbench.engine.options import EngineOptions, Progress
from tkbench.engine.state import TestState
from tkbench.engine.thermalwatch import ThermalWatch
from tkbench.errors import DeviceError, Interrupted, TkbenchError
from tkbench.fio import jobfile
from tkbench.fio.handoff import private_dir
from tkbench.fio.results import (
    LiveFigures,
    StatusStream,
    summarize_round,
    tracking_values,
    written_bytes,
)
from tkbench.fio.runner import FioFailed, FioRun, FioRunner
from tkbench.plan.build import Plan
from tkbench.plan.model import PlannedTest
from tkbench.rundir.records import Failure, Precondition, Round, Series, TestPlan
from tkbench.rundir.records.base import dump
from tkbench.rundir.store import RunStore
from tkbench.targets.base import Target


class Steps:
    """The means of one run of the engine, shared by its session, round loop, start-ahead
    pipeline and stage parts."""

    def __init__(
        self,
        plan: Plan,
        target: Target,
        runner: FioRunner,
        store: RunStore,
        progress: Progress,
        options: EngineOptions,
    ) -> None:
        self.plan = plan
        self.target = target
        self.runner = runner
        self.store = store
        self.progress = progress
        self.options = options
        # whether this engine has begun to write the target (a purge or a fio run
        # started): only then is the data the run leaves tkbench's (runs._execute)
        self.wrote = False
        self.runtime: Path | None = None  # the run's private hand-off directory
        # the byte ranges [start, end) its writes reached: all of the target for a
        # purge, a test's active range for its fio runs (what a mark may vouch for)
        self.extent: set[tuple[int, int]] = set()

    def writing(self, test: PlannedTest | None) -> None:
        """A write of the target begins: a fio run of ``test`` (its active range), or
        a purge (``None``: the whole target)."""
        self.wrote = True
        end = test.active_bytes if test is not None and test.active_bytes else 0
        self.extent.add((0, end or self.target.capacity))

    def check_stop(self) -> None:
        if self.options.stop():
            raise Interrupted("stop requested")

    # ------------------------------------------------------------------ the rules
    def record(self, test: PlannedTest) -> TestPlan:
        """The test as its ``test.json`` states it (what the stop rules read)."""
        if not kinds.of_spec(test.spec).runs_fio:  # read() and write() (kinds.copyrun)
            return test.record(ioengine_used="read/write")
        used = self.target.fio_options(test.spec.workload.ioengine)["ioengine"]
        return test.record(ioengine_used=str(used))

    def stop_reason(self, state: TestState, now: float | None = None) -> str | None:
        """Why the test stops now (recorded in its result), or None to run a round."""
        progress = state.standing(self.target.capacity, clock.time() if now is None else now)
        record = self.record(state.test)
        return kind_of(record).stop_reason(record, progress)

    def verdicts(self, state: TestState) -> dict[str, steady.Verdict]:
        """The steady-state verdicts so far (none for a kind without a steady-state
        criterion: write saturation, fixed and copy tests)."""
        record = self.record(state.test)
        if not kind_of(record).has_steady_state:
            return {}
        return segment_verdicts(record, state.rounds, state.segment)

    # ------------------------------------------------------------------ fio runs
    def workdir(self) -> Path:
        return self.scratch(f"fio-{os.getpid()}-{clock.monotonic_ns()}")

    def scratch(self, name: str) -> Path:
        d = self.store.root / ".scratch" / name
        try:
            d.mkdir(parents=True)
        except OSError as exc:
            raise DeviceError(
                f"cannot write {d}: {exc.strerror or exc} (is the results filesystem full?)"
            ) from None
        return d

    def write_jobfile(self, text: str) -> tuple[Path, Path]:
        """A fresh fio working directory with the job file in it: (workdir, job file)."""
        workdir = self.workdir()
        path = workdir / "job.fio"
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise DeviceError(
                f"cannot write {path}: {exc.strerror or exc} (is the results filesystem full?)"
            ) from None
        return workdir, path

    def fio(
        self,
        test: PlannedTest,
        name: str,
        text: str,
        json_plus: bool,
        planned: float,
        labels: Mapping[str, str],
        busy: bool = False,
    ) -> FioRun:
        """Run one fio job file (the preconditioning); live figures go to the progress
        display as ``fio_status`` events, from fio's own status reports (``labels``: fio
        job name -> what people call it; ``busy``: its jobs never pause, so fio's
        watchdog watches it from its start, tkbench.fio.runner)."""
        workdir, path = self.write_jobfile(text)
        timeout = planned + self.options.fio_timeout_margin

        def show(fig: LiveFigures) -> None:
            self.progress.event(events.FioStatus(test, fig))

        on_line = StatusStream(labels, show).feed
        try:
            self.writing(test)
            run = self.runner.run(
                path, workdir, json_plus=json_plus, timeout=timeout, on_line=on_line, busy=busy
            )
        except FioFailed as exc:
            info = Failure(test=test.name, error=str(exc), fio=exc.run.call())
            self.store.save_failure(
                test.name, f"{name}-{int(clock.time())}", exc.run.stdout, text, info
            )
            raise
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return run

    def precondition(self, test: PlannedTest, segment: int) -> None:
        pre = test.precondition
        assert pre is not None
        wl = test.spec.workload
        self.progress.event(events.Phase(test, "precondition", bytes=pre.total_bytes))
        text = jobfile.precondition_jobfile(test, self.target.fio_options(wl.ioengine))
        limit = self.plan.profile.precondition.max_duration
        # generous: at 1 MB/s per GB of capacity this still ends (a real drive is far faster)
        planned = limit or max(3600.0, pre.total_bytes / 1e6)
        run = self.fio(
            test,
            "precondition",
            text,
            json_plus=False,
            planned=planned,
            labels={"precondition": "preconditioning"},
            busy=True,
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

    # ------------------------------------------------------------------ the hand-off
    def handoff(self) -> jobfile.Handoff | None:
        """The hand-off hooks of a job file: none when fio runs on fio servers (their
        hosts run no tkbench)."""
        if self.runner.hosts:
            return None
        return jobfile.Handoff(
            str(self.handoff_dir()),
            timeout_margin=self.options.fio_timeout_margin,
            owner=str(self.store.root.absolute() / ".scratch"),
        )

    def handoff_dir(self) -> Path:
        """A round's hand-off markers: in the run's private directory on a local
        filesystem (tkbench.fio.handoff.private_dir), never below the run directory."""
        try:
            if self.runtime is None:
                self.runtime = Path(private_dir())
            d = self.runtime / f"handoff-{clock.monotonic_ns()}"
            d.mkdir()
        except OSError as exc:
            raise DeviceError(f"cannot create the hand-off directory: {exc}") from None
        return d

    # ------------------------------------------------------------------ a round
    def round_record(
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
                test.name, f"round-{n:04d}-{int(clock.time())}", run.stdout, text, info
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

    def thermal(self) -> ThermalWatch:
        """The drive's temperature between rounds, started (tkbench.engine.thermalwatch)."""
        thermal = ThermalWatch(self.target.thermal_reader(), clock=clock.time, log=self.store.log)
        thermal.start()
        return thermal

    def temperature(self, test: PlannedTest, thermal: ThermalWatch, record: Round) -> Round:
        """The drive's temperature, read once the round is stored (time-boxed, never
        failing the run), added to the round's record."""
        noted = thermal.after_round(record)
        if noted is not record:
            self.store.update_round(test.name, noted)
        return noted
