"""Where each drive of a fleet is, read from its run's log lines (pure).

A fleet's children are ``tkbench run`` processes without a terminal, so they write
the structured, timestamped lines of :class:`tkbench.cli.ui.LogProgress`
(``2026-11-23T10:00:36+00:00 round start test=iops round=3 seconds=12.0``).  The
fleet reads every line anyway (to tag it with the drive); :class:`DriveState` turns
them into what the fleet's terminal display shows per drive: the test, the round
(of at most how many), the live IOPS of fio's last status report, and the time
left by the plan's estimate.  Lines it does not know leave the state as it was.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tkbench.units import format_duration

# seconds between a child's status lines while the fleet display is on a terminal
# (the child's own default off a terminal is one a minute); read by `tkbench run`
STATUS_ENV = "TKBENCH_FLEET_STATUS"

# a timestamp, one or two words ("round start", "status"), then key=value fields
_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\S+ (?P<what>[a-z]+(?: [a-z]+(?![\w=]))?)(?P<rest>.*)$")
_FIELD = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\S+)")


def line_kind(line: str) -> str | None:
    """What a log line is about (``"round start"``, ``"status"``); None for other text
    (warnings, errors, anything not a progress line)."""
    m = _LINE.match(line)
    return m.group("what") if m is not None else None


def fields(text: str) -> dict[str, str]:
    """``key=value`` pairs of a log line (``'quoted'`` values unquoted)."""
    return {k: v[1:-1] if v.startswith("'") else v for k, v in _FIELD.findall(text)}


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _whole(text: str | None) -> int | None:
    value = _number(text)
    return int(value) if value is not None else None


# What a child's progress line says, parsed once from its text (a child runs in
# another process: its lines, not the engine's events, are what the fleet has).


@dataclass(frozen=True)
class RunStartLine:
    estimate: tuple[float, float] | None  # the plan's seconds, lowest and highest


@dataclass(frozen=True)
class TestStartLine:
    """A test starts or resumes."""

    name: str
    max_rounds: int | None


@dataclass(frozen=True)
class PhaseLine:
    name: str | None  # the test (None: the line did not say)
    phase: str


@dataclass(frozen=True)
class RoundStartLine:
    round: int | None


@dataclass(frozen=True)
class StatusLine:
    iops: float | None
    point: str


@dataclass(frozen=True)
class TestDoneLine:
    pass


@dataclass(frozen=True)
class RunDoneLine:
    status: str


ProgressLine = (
    RunStartLine
    | TestStartLine
    | PhaseLine
    | RoundStartLine
    | StatusLine
    | TestDoneLine
    | RunDoneLine
)


def parse_line(line: str) -> ProgressLine | None:
    """The progress a line of a child's output reports; None for any other line."""
    m = _LINE.match(line)
    if m is None:
        return None
    what, f = m.group("what"), fields(m.group("rest"))
    if what == "run start":
        lo, _, hi = f.get("estimate_s", "").partition("..")
        low, high = _number(lo), _number(hi)
        return RunStartLine(None if low is None or high is None else (low, high))
    if what in ("test start", "test resume"):
        return TestStartLine(f.get("name", ""), _whole(f.get("max_rounds")))
    if what == "phase":  # the step before the rounds: purge, precondition...
        return PhaseLine(f.get("name"), f.get("phase", ""))
    if what == "round start":
        return RoundStartLine(_whole(f.get("round")))
    if what == "status":
        return StatusLine(_number(f.get("iops")), f.get("point", "").replace("_", " "))
    if what == "test done":
        return TestDoneLine()
    if what == "run done":
        return RunDoneLine(f.get("status", "?"))
    return None


@dataclass
class DriveState:
    """One drive of a fleet, as its log lines told it."""

    name: str
    state: str = "starting"  # starting | running | done: STATUS | exit N
    test: str = ""
    phase: str = ""  # purge, precondition... while no round runs
    round: int | None = None
    max_rounds: int | None = None
    iops: float | None = None  # fio's last status report (None: none yet this step)
    point: str = ""  # the point those IOPS are of
    started: float | None = None  # epoch seconds of the run's start line, by our clock
    estimate: tuple[float, float] | None = None  # the plan's seconds, lowest and highest

    def feed(self, line: str, now: float) -> bool:
        """Take one line of the run's output; True when it changed what is shown."""
        match parse_line(line):
            case RunStartLine(estimate=estimate):
                self.state, self.started = "running", now
                if estimate is not None:
                    self.estimate = estimate
            case TestStartLine(name=name, max_rounds=rounds):
                self.state = "running"
                self.test, self.phase, self.round, self.iops = name, "", None, None
                self.max_rounds = rounds
            case PhaseLine(name=name, phase=phase):
                self.test, self.phase = self.test if name is None else name, phase
                self.iops = None
            case RoundStartLine(round=n):
                self.round, self.phase = n, ""
                self.iops, self.point = None, ""  # the figures were of the previous step
            case StatusLine(iops=iops, point=point):
                self.iops, self.point = iops, point
            case TestDoneLine():
                self.phase, self.iops = "done", None
            case RunDoneLine(status=status):
                self.state = f"done: {status}"
                self.iops = None
            case _:
                return False
        return True

    def ended(self, code: int, outcome: str) -> None:
        self.state, self.iops = f"exit {code}: {outcome}", None

    def eta(self, now: float) -> str:
        """The time left by the plan's estimate: a range, as the estimate is (a
        steady-state test ends when it reaches steady state); "" when unknown."""
        if self.estimate is None or self.started is None or self.state != "running":
            return ""
        gone = now - self.started
        lo, hi = (max(0.0, e - gone) for e in self.estimate)
        if hi <= 0:
            return "past the estimate"
        if round(lo) == round(hi):
            return format_duration(hi)
        if lo < 1:
            return f"up to {format_duration(hi)}"
        return f"{format_duration(lo)}–{format_duration(hi)}"

    def round_text(self) -> str:
        if self.phase and self.phase != "done":
            return self.phase
        if self.round is None:
            return ""
        return f"{self.round}" + (f" of ≤{self.max_rounds}" if self.max_rounds else "")

    def iops_text(self) -> str:
        if self.iops is None:
            return ""
        return f"{self.iops:,.0f}" + (f" ({self.point})" if self.point else "")
