"""Progress for people: rich progress bars on a terminal, timestamped log lines otherwise."""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from tkbench.cli import support
from tkbench.cli.terminal import printable
from tkbench.engine import events
from tkbench.engine.events import Event
from tkbench.fio.results import LiveFigures
from tkbench.units import format_duration, human_bytes, timestamp


def _stamp() -> str:
    return timestamp()


def _shown(value: object) -> str:
    """A string from a run, a drive or a profile inside rich markup: control
    characters escaped, square brackets not taken for markup."""
    from rich.markup import escape

    return escape(printable(str(value)))


def status_text(fig: LiveFigures) -> str:
    """fio's live figures for people: ``4k 0/100: 81,978 IOPS, 335.8 MB/s, 0.39 ms``."""
    return f"{fig.point}: {fig.iops:,.0f} IOPS, {fig.mbs:,.1f} MB/s, {fig.lat_ms:.3g} ms"


class WatchedProgress:
    """Passes progress events on; remembers the run directory, and keeps a run going
    when whoever reads its progress lines goes away (a closed pipe, a closed terminal)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.broken = False

    def event(self, event: Event) -> None:
        if isinstance(event, events.RunStarted) and event.run_dir:
            support.SESSION.run_dir = Path(event.run_dir)
        if self.broken:
            return
        try:
            self.inner.event(event)
        except BrokenPipeError:
            self.broken = True
            support.silence(sys.stderr)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None and not self.broken:
            with contextlib.suppress(BrokenPipeError):
                close()


class LogProgress:
    """One structured, timestamped line per event (for logs and CI); fio's live figures
    at most every ``status_every`` seconds (0: never)."""

    def __init__(self, stream: TextIO | None = None, status_every: float = 60.0) -> None:
        self.stream = stream or sys.stderr
        self.status_every = status_every
        self._last_status = -math.inf

    def _line(self, text: str) -> None:
        self.stream.write(f"{_stamp()} {printable(text)}\n")
        self.stream.flush()

    def event(self, event: Event) -> None:
        match event:
            case events.RunStarted(plan=plan, run_dir=run_dir):
                lo, hi = plan.estimate()
                self._line(
                    f"run start dir={run_dir} profile={plan.profile.name} "
                    f"tests={','.join(t.name for t in plan.tests)} "
                    f"estimate={format_duration(lo)}..{format_duration(hi)} "
                    f"estimate_s={lo:.0f}..{hi:.0f}"
                )
            case events.TestStarted(test=test, rounds_done=done):
                self._line(
                    f"test start name={test.name} rounds_done={done} max_rounds={test.max_rounds}"
                )
            case events.TestResumed(test=test, action=action, rounds=kept):
                self._line(f"test resume name={test.name} action={action} rounds_kept={kept}")
            case events.TestSkipped(test=test, reason=reason):
                self._line(f"test skip name={test.name} reason={reason!r}")
            case events.Phase(test=test, phase=phase, bytes=size):
                extra = f" bytes={size}" if size is not None else ""
                self._line(f"phase name={test.name} phase={phase}{extra}")
            case events.RoundStarted(test=test, round=n, seconds=seconds):
                self._line(f"round start test={test.name} round={n} seconds={seconds:.1f}")
            case events.RoundDone(test=test, round=n, tracking=tracking, verdicts=steady):
                parts = [f"round done test={test.name} round={n}"]
                parts += [f"{k.replace(' ', '_')}={v:.4g}" for k, v in tracking.items()]
                # state= only for a test with a steady-state criterion (a fixed, write
                # saturation or copy test has none: "not-steady" would misread)
                if steady:
                    reached = all(v.reached for v in steady.values())
                    parts.append("state=" + ("steady" if reached else "not-steady"))
                self._line(" ".join(parts))
            case events.RoundRetried(test=test, round=n, reason=why):
                self._line(f"round retry test={test.name} round={n} reason={why!r}")
            case events.TestDone(test=test, result=result):
                self._line(f"test done name={test.name} result={result.summary!r}")
            case events.RunDone(manifest=manifest):
                self._line(f"run done status={manifest.status}")
            case events.FioStatus(test=test, figures=fig) if self.status_every > 0:
                now = time.monotonic()
                if now - self._last_status >= self.status_every:
                    self._last_status = now
                    self._line(
                        f"status test={test.name} point={fig.point.replace(' ', '_')} "
                        f"iops={fig.iops:.4g} mbs={fig.mbs:.4g} lat_ms={fig.lat_ms:.4g}"
                    )


class RichProgress:
    """Bars with ETA per run, test and round on a terminal."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.console = Console(stderr=True)
        self.bars = Progress(
            TextColumn("{task.description:<20}"),
            BarColumn(bar_width=16),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[info]}"),
            console=self.console,
            transient=False,
        )
        self.run_task: Any = None
        self.test_task: Any = None
        self.round_task: Any = None
        self._round_start = 0.0
        self._round_len = 0.0
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._plan: Any = None
        self._test_t0 = 0.0
        self._done_tests = 0

    def _tick(self) -> None:
        while not self._stop.wait(0.25):
            if self.round_task is not None and self._round_len > 0:
                el = min(time.monotonic() - self._round_start, self._round_len)
                self.bars.update(self.round_task, completed=el)

    def event(self, event: Event) -> None:
        match event:
            case events.RunStarted(plan=plan, run_dir=run_dir):
                self._plan = plan
                self.bars.start()
                self.console.print(f"[bold]tkbench[/] run directory: {_shown(run_dir)}")
                self.run_task = self.bars.add_task("run", total=len(plan.tests), info="")
                self._ticker = threading.Thread(target=self._tick, daemon=True)
                self._ticker.start()
            case events.TestStarted(test=test, rounds_done=done):
                if self.test_task is not None:
                    self.bars.remove_task(self.test_task)
                self.test_task = self.bars.add_task(
                    _shown(test.title),
                    total=test.max_rounds,
                    completed=done,
                    info=f"up to {test.max_rounds} rounds",
                )
            case events.TestResumed(test=test, action=action, rounds=kept):
                self.console.print(
                    f"resuming {_shown(test.name)}: {_shown(action)} ({kept} round(s) kept)"
                )
            case events.TestSkipped(test=test, reason=reason):
                self.console.print(f"{_shown(test.name)}: {_shown(reason)}")
                self._advance_run()
            case events.Phase(phase=phase, bytes=size):
                extra = f" {human_bytes(size)}" if size is not None else ""
                self.bars.update(self.test_task, info=_shown(f"{phase}{extra}"))
                self._round_len = 0.0  # no round runs: live figures go to the test's bar
            case events.RoundStarted(round=n, seconds=seconds):
                if self.round_task is None:
                    self.round_task = self.bars.add_task("round", total=1, info="")
                self._round_start = time.monotonic()
                self._round_len = max(seconds, 0.01)
                self.bars.reset(
                    self.round_task, total=self._round_len, description=f"  round {n}", info=""
                )
            case events.RoundDone(test=test, round=n, tracking=tracking, verdicts=verdicts):
                vals = ", ".join(f"{k} {v:,.1f}" for k, v in tracking.items())
                steady = bool(verdicts) and all(v.reached for v in verdicts.values())
                self.bars.update(
                    self.test_task, advance=1, info=("steady " if steady else "") + vals
                )
                self.console.print(f"  {_shown(test.name)} round {n}: {_shown(vals)}")
            case events.RoundRetried(test=test, round=n, reason=why):
                self.console.print(
                    f"{_shown(test.name)} round {n}: {_shown(why)}; running it again"
                )
            case events.TestDone(test=test, result=result):
                self.console.print(f"[bold]{_shown(test.title)}[/]: {_shown(result.summary)}")
                full = test.max_rounds  # the bar's total, whatever ended the test
                self.bars.update(self.test_task, completed=full)
                self._advance_run()
            case events.RunDone():
                self.close()
            case events.FioStatus(figures=fig):
                task = self.round_task if self._round_len > 0 else self.test_task
                if task is not None:
                    self.bars.update(task, info=_shown(status_text(fig)))

    def _advance_run(self) -> None:
        if self.run_task is not None:
            self.bars.update(self.run_task, advance=1)

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(Exception):
            self.bars.stop()


class FleetDisplay:
    """Several drives at once on a terminal: one line per drive (its test, round,
    fio's live IOPS and the time left by its plan's estimate), redrawn in place by
    rich; each drive's other lines (warnings, errors, test results) are printed above
    it, tagged with the drive.  The drives' round-by-round lines are in their
    events.log and, off a terminal, in the fleet's own tagged output."""

    # lines shown in the display's table rather than printed above it
    _TABLE = (
        "run start",
        "test start",
        "test resume",
        "phase",
        "round start",
        "round done",
        "status",
    )

    def __init__(self, names: list[str], stream: TextIO | None = None) -> None:
        from rich.console import Console
        from rich.live import Live

        from tkbench.fleet.progress import DriveState

        self.console = Console(file=stream or sys.stderr)
        self.drives = {n: DriveState(n) for n in names}
        self._lock = threading.Lock()
        self.live = Live(
            get_renderable=self._table, console=self.console, refresh_per_second=2, transient=False
        )

    def _table(self) -> Any:
        from rich.table import Table

        now = time.time()
        table = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("drive", "state", "test", "round", "IOPS (live)", "ETA"):
            table.add_column(col, no_wrap=True, justify="right" if col == "IOPS (live)" else "left")
        with self._lock:
            for d in self.drives.values():
                table.add_row(
                    *(
                        _shown(c)
                        for c in (
                            d.name,
                            d.state,
                            d.test,
                            d.round_text(),
                            d.iops_text(),
                            d.eta(now),
                        )
                    )
                )
        return table

    def __enter__(self) -> FleetDisplay:
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.refresh()
        self.live.stop()

    def line(self, name: str, text: str) -> None:
        """One line of a drive's run."""
        from tkbench.fleet.progress import line_kind

        with self._lock:
            drive = self.drives.setdefault(name, self._new(name))
            drive.feed(text, time.time())
        if line_kind(text) not in self._TABLE:
            self.console.print(f"[bold]\\[{_shown(name)}][/] {_shown(text)}", highlight=False)

    def ended(self, name: str, code: int, outcome: str) -> None:
        with self._lock:
            self.drives.setdefault(name, self._new(name)).ended(code, outcome)

    @staticmethod
    def _new(name: str) -> Any:
        from tkbench.fleet.progress import DriveState

        return DriveState(name)
