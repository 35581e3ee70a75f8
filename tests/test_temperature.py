"""The drive's temperature each round: how it is read (FAKE nvme-cli and smartctl of
tests/fakes: this machine has no NVMe, SATA or SAS drive), time-boxed between rounds
(tkbench.engine.thermalwatch), stored with each round by the engine (with the FAKE fio
runner), and what the analysis makes of it (tkbench.analysis.thermal).  A real run
on a regular file records null: tests/test_report_parts.py."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fakes.helpers import FakeTools

from tests.fakes.fio_runner import FakeClock, FakeFio
from tests.test_engine_rules import ONLY_IOPS, fresh_until, new_engine
from tkbench.analysis.thermal import round_events, temperature_of, unavailable_reason
from tkbench.device import thermal
from tkbench.device.thermal import ThermalReading
from tkbench.engine import clock as engine_clock
from tkbench.engine.thermalwatch import FRESH, ThermalWatch
from tkbench.rundir.records import Round, TargetRecord, Thermal
from tkbench.rundir.store import load_run

NVME_HOT = {
    "temperature": 351,  # kelvin, as nvme-cli 2.x prints it: 78 degrees Celsius
    "critical_warning": 2,
    "warning_temp_time": 3,
    "critical_comp_time": 0,
    "thm_temp1_trans_count": 4,
    "thm_temp2_trans_count": 1,
    "thm_temp1_total_time": 120,
    "thm_temp2_total_time": 15,
}


# --------------------------------------------------------------------------- reading


def test_nvme_smart_log_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = FakeTools(tmp_path, monkeypatch)
    fakes.configure(nvme={"smart_log": NVME_HOT})
    reading, why = thermal.read("/dev/nvme0n1", "nvme")
    assert why == "" and reading is not None
    assert (reading.source, reading.temperature_c, reading.critical_warning) == (
        "nvme smart-log",
        78.0,
        2,
    )
    assert reading.counters == {
        "warning_minutes": 3, "critical_minutes": 0, "tmt1_transitions": 4,
        "tmt2_transitions": 1, "tmt1_seconds": 120, "tmt2_seconds": 15,
    }  # fmt: skip
    assert fakes.calls() == [["nvme", "smart-log", "/dev/nvme0n1", "-o", "json"]]


def test_newer_nvme_cli_critical_warning_object() -> None:
    reading = thermal.parse_nvme({"temperature": 40, "critical_warning": {"value": 2}})
    assert (reading.temperature_c, reading.critical_warning) == (40.0, 2)


def test_nvme_falls_back_to_smartctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = FakeTools(tmp_path, monkeypatch, tools=("smartctl",))
    fakes.configure(smartctl={"kind": "nvme"})
    reading, _ = thermal.read("/dev/nvme0n1", "nvme")
    assert reading is not None and reading.temperature_c == 36.0
    assert reading.source == "smartctl" and reading.critical_warning == 0
    assert fakes.calls("smartctl") == [["smartctl", "--json", "-A", "/dev/nvme0n1"]]


@pytest.mark.parametrize(("kind", "celsius"), [("ata", 31.0), ("scsi", 29.0)])
def test_sata_and_sas_through_smartctl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, celsius: float
) -> None:
    fakes = FakeTools(tmp_path, monkeypatch)
    fakes.configure(smartctl={"kind": kind})
    reading, _ = thermal.read("/dev/sdb", "sata" if kind == "ata" else "sas")
    assert reading is not None and reading.temperature_c == celsius
    assert fakes.calls("nvme") == []  # nvme-cli is for NVMe only


def test_no_reading_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = FakeTools(tmp_path, monkeypatch)
    fakes.configure(smartctl={"kind": "error"})
    reading, why = thermal.read("/dev/sdc", "other")
    assert reading is None and "Unable to detect device type" in why
    (tmp_path / "none").mkdir()
    FakeTools(tmp_path / "none", monkeypatch, tools=())
    reading, why = thermal.read("/dev/nvme0n1", "nvme")
    assert reading is None
    assert "'nvme' (Debian package nvme-cli) is not installed" in why
    assert "'smartctl' (Debian package smartmontools) is not installed" in why


def test_a_hanging_tool_is_cut_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = FakeTools(tmp_path, monkeypatch, tools=("nvme",))
    fakes.configure(nvme={"delay": {"smart-log": 5}})
    t0 = time.monotonic()
    reading, why = thermal.read("/dev/nvme0n1", "nvme", timeout=0.5)
    assert reading is None and "timed out" in why
    assert time.monotonic() - t0 < 3.0


# --------------------------------------------------------------------------- between rounds


def nvme(temp: float, **counters: int) -> ThermalReading:
    base = {
        "warning_minutes": 0, "critical_minutes": 0, "tmt1_transitions": 0,
        "tmt2_transitions": 0, "tmt1_seconds": 0, "tmt2_seconds": 0,
    }  # fmt: skip
    return ThermalReading("nvme smart-log", temp, 0, {**base, **counters})


class Script:
    """A reader that answers from a list (a FAKE drive, in-process)."""

    def __init__(self, *readings: ThermalReading | None, delays: tuple[float, ...] = ()) -> None:
        self.readings = list(readings)
        self.delays = list(delays)  # seconds each call takes, in order (then none)
        self.calls = 0

    def __call__(self) -> tuple[ThermalReading | None, str]:
        self.calls += 1
        time.sleep(self.delays.pop(0) if self.delays else 0.0)
        got = self.readings.pop(0) if self.readings else None
        return got, "" if got else "no sensor"


def rnd(n: int, started: float) -> Round:
    return Round(round=n, points=(), tracking={}, started=started, ended=started + 60.0)


def test_counters_move_from_reading_to_reading() -> None:
    now = [1000.0]
    watch = ThermalWatch(
        Script(
            nvme(50),
            nvme(70, tmt1_transitions=1, tmt1_seconds=20),
            nvme(66, tmt1_transitions=1, tmt1_seconds=20),
        ),
        clock=lambda: now[0],
    )
    watch.start()  # the baseline, before round 1
    now[0] = 1062.0
    r1 = watch.after_round(rnd(1, 1001.0))
    assert r1.temperature_c == 70.0
    assert r1.thermal == Thermal(
        source="nvme smart-log", read_at=1062.0, since=1000.0, critical_warning=0,
        warning_minutes=0.0, critical_minutes=0.0, throttle_transitions=1.0,
        throttle_seconds=20.0,
    )  # fmt: skip
    now[0] = 1124.0
    r2 = watch.after_round(rnd(2, 1063.0))
    assert r2.thermal is not None and r2.thermal.throttle_seconds == 0.0  # 20 s, as before
    assert r2.thermal.since == 1062.0


def test_unknown_changes_after_a_gap_a_reset_or_no_baseline() -> None:
    now = [0.0]
    watch = ThermalWatch(
        Script(nvme(40, tmt1_seconds=100), nvme(41, tmt1_seconds=120), nvme(42)),
        clock=lambda: now[0],
    )
    watch.start()
    now[0] = 5000.0  # preconditioning lay between the baseline and this round
    r = watch.after_round(rnd(1, 4900.0 - FRESH))
    assert r.temperature_c == 41.0
    assert r.thermal is not None and r.thermal.since is None
    assert r.thermal.throttle_seconds is None
    now[0] = 5060.0
    r = watch.after_round(rnd(2, 5001.0))  # the counters fell: the drive was power-cycled
    assert r.thermal is not None and r.thermal.throttle_seconds is None
    first = ThermalWatch(Script(nvme(30))).after_round(rnd(1, time.time()))
    assert first.thermal is not None and first.thermal.since is None  # no baseline


def test_no_reader_or_no_reading_leaves_the_round_alone() -> None:
    r = rnd(1, 0.0)
    assert ThermalWatch(None).after_round(r) is r
    said: list[str] = []
    watch = ThermalWatch(Script(None, None, None), log=said.append)
    watch.start()
    assert watch.after_round(r) is r and watch.after_round(r) is r
    assert said == ["drive temperature not read before the first round: no sensor"]  # once


def test_a_slow_reading_never_holds_a_round_up() -> None:
    slow = Script(nvme(50), nvme(51), delays=(1.0,))  # the first answer takes a second
    said: list[str] = []
    watch = ThermalWatch(slow, box=0.1, log=said.append)
    t0 = time.monotonic()
    r = watch.after_round(rnd(1, time.time()))
    assert r.temperature_c is None
    # the next one is skipped while the first has not returned: no pile of threads
    assert watch.after_round(rnd(2, time.time())).temperature_c is None
    assert time.monotonic() - t0 < 0.8
    assert slow.calls == 1
    assert said == [
        "drive temperature not read after round 1: no answer within 0.1 s",
        "drive temperature not read after round 2: an earlier reading has not returned yet",
    ]
    time.sleep(1.1)  # it returned: readings go on
    assert watch.after_round(rnd(3, time.time())).temperature_c == 51.0


# --------------------------------------------------------------------------- the engine


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    c = FakeClock()
    monkeypatch.setattr(engine_clock, "source", c)
    yield c


def test_the_engine_reads_after_each_round_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    eng, out = new_engine(tmp_path, FakeFio(lambda call: 10_000.0), [*ONLY_IOPS])
    stored_first: list[bool] = []
    values = [45.0 + i for i in range(40)]
    temps = iter(values)

    def reader() -> tuple[ThermalReading | None, str]:
        done = sorted((out / "tests" / "iops" / "rounds").glob("*.json"))
        stored_first.append(len(done))
        return nvme(next(temps)), ""

    monkeypatch.setattr(eng.target, "thermal_reader", lambda: reader)
    assert eng.run().status == "complete"
    rounds = load_run(out).test("iops").rounds
    # a reading before round 1, then one after each round, once its record existed
    assert stored_first == list(range(len(rounds) + 1))
    assert [r.temperature_c for r in rounds] == values[1 : len(rounds) + 1]
    on_disk = json.loads((out / "tests/iops/rounds/0001.json").read_text())
    assert on_disk["schema"] == 3 and on_disk["temperature_c"] == 46.0
    assert on_disk["thermal"]["source"] == "nvme smart-log"


def test_a_file_target_records_null(tmp_path: Path, clock: FakeClock) -> None:
    eng, out = new_engine(tmp_path, FakeFio(lambda call: 10_000.0), [*ONLY_IOPS])
    assert eng.target.thermal_reader() is None
    eng.run()
    for f in sorted((out / "tests/iops/rounds").glob("*.json")):
        data = json.loads(f.read_text())
        assert data["temperature_c"] is None and "thermal" not in data


# --------------------------------------------------------------------------- analysis


def test_heat_events_in_and_out_of_the_window(tmp_path: Path, clock: FakeClock) -> None:
    eng, out = new_engine(tmp_path, FakeFio(fresh_until(4)), [*ONLY_IOPS])
    eng.run()
    run = load_run(out)
    t = run.test("iops")
    n = len(t.rounds)
    assert n == 8  # steady in rounds 4-8: round 1 lies outside the window
    hot = Thermal(source="nvme smart-log", throttle_seconds=30.0, warning_minutes=1.0)
    t.rounds[0] = replace(t.rounds[0], temperature_c=60.0, thermal=hot)
    t.rounds[-1] = replace(t.rounds[-1], temperature_c=80.0)
    target = TargetRecord(kind="block", identity={"interface": "nvme", "warning_temp_c": 75})
    temp = temperature_of(t, target)
    assert temp.available and temp.warning_c == 75.0
    assert [(e.round, e.in_window) for e in temp.events] == [(1, False), (n, True)]
    assert temp.events[0].what == (
        "30 s in thermal management (throttling); 1 min above its warning temperature"
    )
    assert temp.events[1].what == "80 °C, at or above its warning temperature of 75 °C"
    assert temp.warning("IOPS").startswith(
        f"Heat: inside the measurement window of IOPS the drive throttled or ran at or above "
        f"its warning temperature (round {n}: 80 °C"
    )
    assert temp.to_dict()["throttled_in_window"] is True


def test_why_there_is_no_temperature() -> None:
    assert "regular file" in unavailable_reason(TargetRecord(kind="file", identity={}))
    emu = TargetRecord(kind="nbd", identity={"interface": "nbd", "emulated": True})
    assert unavailable_reason(emu) == "the bundled SSD emulator models no drive temperature"
    vol = TargetRecord(kind="volume", identity={"interface": "volume"})
    assert unavailable_reason(vol).startswith("a volume benchmark measures a filesystem")
    loop = TargetRecord(kind="block", identity={"interface": "loop"})
    assert unavailable_reason(loop) == "a loop device has no temperature sensor"
    assert unavailable_reason(TargetRecord(kind="block", identity={"interface": "nvme"})) == ""
    crit = Round(round=1, points=(), tracking={}, thermal=Thermal(critical_warning=0x2))
    assert round_events(crit, None) == ["its critical warning reported the temperature"]
    calm = Round(round=1, points=(), tracking={}, temperature_c=74.0, thermal=Thermal())
    assert round_events(calm, 75.0) == []
