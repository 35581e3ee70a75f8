"""The drive's temperature, read between rounds without ever holding a round up.

The engine asks once before a test's first round (the baseline of the drive's
thermal counters) and once after each round is stored.  Each reading runs in a
thread of its own and is waited for at most :data:`BOX` seconds: a drive or tool
that hangs costs one null temperature, never the run.  While a reading that timed
out has not returned, the next ones are skipped (null) rather than stacked up.

A round gets the temperature read after it and, as :class:`~tkbench.rundir.records.Thermal`,
what the drive's cumulative counters moved since the previous reading: minutes
above the warning and critical temperatures, transitions into and seconds in
thermal management (throttling).  When the previous reading is older than the
round's start by more than :data:`FRESH` seconds (preconditioning or an idle gap
lies between), or there is none, the changes are unknown (null).  A counter that
went backwards (the drive was power-cycled) is unknown too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from tkbench.device.thermal import ThermalReading
from tkbench.rundir.records import Round, Thermal

BOX = 3.0  # seconds the engine waits for a reading at most
FRESH = 30.0  # seconds: a reading this long before a round began still counts as its start

Reader = Callable[[], tuple[ThermalReading | None, str]]


class ThermalWatch:
    """Time-boxed readings of one drive, and the rounds they annotate."""

    def __init__(
        self,
        reader: Reader | None,
        *,
        box: float = BOX,
        clock: Callable[[], float] = time.time,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.reader = reader
        self.box = box
        self.clock = clock
        self.log = log
        self.previous: tuple[float, ThermalReading] | None = None
        self._pending: threading.Thread | None = None
        self._said: set[str] = set()

    def start(self) -> None:
        """The reading before the first round: the baseline of the counters."""
        got = self._read("before the first round")
        if got is not None:
            self.previous = got

    def after_round(self, record: Round) -> Round:
        """``record`` with the temperature read now (it is stored already); the record
        itself when there is no reading."""
        got = self._read(f"after round {record.round}")
        if got is None:
            return record
        at, reading = got
        thermal = self._thermal(record, at, reading)
        self.previous = got
        return replace(record, temperature_c=reading.temperature_c, thermal=thermal)

    # ------------------------------------------------------------------ internals
    def _note(self, why: str, when: str) -> None:
        if self.log is not None and why not in self._said:
            self._said.add(why)  # once per reason: a drive without a sensor says it once
            self.log(f"drive temperature not read {when}: {why}")

    def _read(self, when: str) -> tuple[float, ThermalReading] | None:
        if self.reader is None:
            return None
        if self._pending is not None and self._pending.is_alive():
            self._note("an earlier reading has not returned yet", when)
            return None
        reader = self.reader
        box: dict[str, tuple[ThermalReading | None, str]] = {}

        def work() -> None:
            try:
                box["result"] = reader()
            except Exception as exc:  # a reading never fails a run
                box["result"] = (None, f"{type(exc).__name__}: {exc}")

        thread = threading.Thread(target=work, name="tkbench-temperature", daemon=True)
        thread.start()
        thread.join(self.box)
        if thread.is_alive():
            self._pending = thread
            self._note(f"no answer within {self.box:g} s", when)
            return None
        reading, why = box.get("result", (None, "no answer"))
        if reading is None or reading.temperature_c is None:
            self._note(why or "the drive reported no temperature", when)
            return None
        return self.clock(), reading

    def _thermal(self, record: Round, at: float, reading: ThermalReading) -> Thermal:
        prev = self.previous
        base = prev[1].counters if prev and prev[0] >= record.started - FRESH else None

        def moved(*names: str) -> float | None:
            if base is None or not all(n in reading.counters and n in base for n in names):
                return None
            delta = sum(reading.counters[n] - base[n] for n in names)
            if any(reading.counters[n] < base[n] for n in names):
                return None  # the counters were reset (a power cycle)
            return float(delta)

        tmt = [n for n in ("tmt1", "tmt2") if f"{n}_seconds" in reading.counters]
        return Thermal(
            source=reading.source,
            read_at=at,
            since=prev[0] if base is not None and prev is not None else None,
            critical_warning=reading.critical_warning,
            warning_minutes=moved("warning_minutes"),
            critical_minutes=moved("critical_minutes"),
            throttle_transitions=moved(*(f"{n}_transitions" for n in tmt)) if tmt else None,
            throttle_seconds=moved(*(f"{n}_seconds" for n in tmt)) if tmt else None,
        )
