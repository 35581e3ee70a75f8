"""The drive's temperature per round, and what heat did inside the measurement window
(pure).

Every round records the temperature read after it was stored and what the drive's
thermal counters moved since the reading before (:class:`~tkbench.rundir.records.Thermal`).
A round is a *thermal event* when the drive

* spent time in thermal management (NVMe host-controlled thermal management levels
  1 and 2: the drive throttled itself), or entered it;
* spent minutes above its warning or critical composite temperature (NVMe WCTEMP,
  CCTEMP; the drive counts whole minutes);
* had the temperature bit of its critical warning set; or
* was read at or above its warning temperature (NVMe WCTEMP, a SCSI drive's trip
  temperature), as identified when the run began.

Events inside the measurement window qualify the test's numbers: the report warns
on page 1 and in the chapter.  Where no temperature was read, the reason is told
from the target: files, NBD exports (the emulator too), loop devices and virtio
disks have no drive temperature.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tkbench.analysis.window import window
from tkbench.rundir.records import Round, TargetRecord
from tkbench.rundir.store import TestData

TEMPERATURE_WARNING_BIT = 0x2  # NVMe critical warning, bit 1: a temperature threshold crossed


@dataclass(frozen=True)
class ThermalEvent:
    round: int
    in_window: bool
    what: str  # in words: "30 s in thermal management (throttling)"


@dataclass(frozen=True)
class TestTemperature:
    """One test's temperatures, the drive's limits, and its thermal events."""

    __test__ = False  # not a pytest test class, whatever its name

    rounds: tuple[int, ...]
    celsius: tuple[float | None, ...]  # per round; None: not read
    warning_c: float | None  # the drive's warning temperature, as identified
    critical_c: float | None
    window: tuple[int, ...]
    events: tuple[ThermalEvent, ...]
    unavailable: str  # why no temperature was read at all ("" when some was)

    @property
    def available(self) -> bool:
        return not self.unavailable

    @property
    def window_events(self) -> tuple[ThermalEvent, ...]:
        return tuple(e for e in self.events if e.in_window)

    @property
    def read_rounds(self) -> int:
        return sum(1 for c in self.celsius if c is not None)

    def warning(self, title: str) -> str:
        """The sentence for page 1 and the chapter ("" without events in the window)."""
        events = self.window_events
        if not events:
            return ""
        said = "; ".join(f"round {e.round}: {e.what}" for e in events)
        return (
            f"Heat: inside the measurement window of {title} the drive throttled or ran "
            f"at or above its warning temperature ({said}). Its numbers there may be "
            "limited by temperature rather than describe its steady state; check the "
            "drive's cooling."
        )

    def to_dict(self) -> dict[str, Any]:
        """For ``tkbench show --json`` (a view, kept by hand: computed keys first, the
        reason as null when there is none, the window left out)."""
        return {
            "available": self.available,
            "unavailable": self.unavailable or None,
            "warning_c": self.warning_c,
            "critical_c": self.critical_c,
            "rounds": list(self.rounds),
            "celsius": list(self.celsius),
            "events": [asdict(e) for e in self.events],
            "throttled_in_window": bool(self.window_events),
        }


def unavailable_reason(target: TargetRecord) -> str:
    """Why a target has no drive temperature ("" when it may have one)."""
    facts = target.device
    interface = facts.interface
    if target.kind == "synthetic" or facts.synthetic:
        return "synthetic data: no drive was read"
    if target.kind == "file" or interface == "file":
        return "the target is a regular file, which has no drive temperature"
    if target.kind == "volume" or interface == "volume":
        return "a volume benchmark measures a filesystem: its drive's temperature is not read"
    if target.kind == "nbd" or interface == "nbd":
        if facts.emulated:
            return "the bundled SSD emulator models no drive temperature"
        return "an NBD export reports no drive temperature"
    if interface == "loop":
        return "a loop device has no temperature sensor"
    if interface == "virtio":
        return "a virtio disk reports no temperature"
    return ""


def round_events(r: Round, warning_c: float | None) -> list[str]:
    """What heat did in one round, in words (empty: nothing)."""
    out = []
    th = r.thermal
    if th is not None:
        if th.throttle_seconds:
            out.append(f"{th.throttle_seconds:g} s in thermal management (throttling)")
        elif th.throttle_transitions:
            out.append("entered thermal management (throttling)")
        if th.critical_minutes:
            out.append(f"{th.critical_minutes:g} min above its critical temperature")
        if th.warning_minutes:
            out.append(f"{th.warning_minutes:g} min above its warning temperature")
        if th.critical_warning is not None and th.critical_warning & TEMPERATURE_WARNING_BIT:
            out.append("its critical warning reported the temperature")
    t = r.temperature_c
    if t is not None and warning_c is not None and t >= warning_c:
        out.append(f"{t:g} °C, at or above its warning temperature of {warning_c:g} °C")
    return out


def temperature_of(t: TestData, target: TargetRecord) -> TestTemperature:
    warning_c = target.device.warning_temp_c
    win = window(t)
    events = tuple(
        ThermalEvent(r.round, r.round in win, "; ".join(what))
        for r in t.rounds
        if (what := round_events(r, warning_c))
    )
    celsius = tuple(r.temperature_c for r in t.rounds)
    unavailable = ""
    if all(c is None for c in celsius):
        unavailable = unavailable_reason(target) or (
            "no round was completed"
            if not t.rounds
            else "the drive reported none (events.log says why), or the run was made "
            "before tkbench read drive temperatures"
        )
    return TestTemperature(
        rounds=tuple(r.round for r in t.rounds),
        celsius=celsius,
        warning_c=warning_c,
        critical_c=target.device.critical_temp_c,
        window=win,
        events=events,
        unavailable=unavailable,
    )
