"""The record classes: every kept run directory loads, round-trips, and upgrades to the
formats tkbench writes now; newer formats are refused (no fio needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._rundir_outputs import RUNDIRS, RUNS
from tkbench.errors import RunDirError
from tkbench.rundir.records import (
    Context,
    Failure,
    Manifest,
    Precondition,
    Purge,
    Result,
    Round,
    TargetRecord,
    TestPlan,
)
from tkbench.rundir.records.base import dump
from tkbench.rundir.store import RunStore, load_run

HERE = Path("test.json")


@pytest.mark.parametrize("name", RUNS)
def test_kept_records_round_trip_through_their_json(name: str) -> None:
    run = load_run(RUNDIRS / name)
    again = Manifest.load_checked(run.manifest.to_json(), HERE)
    assert again == run.manifest
    for t in run.tests:
        assert TestPlan.load(t.plan.to_json(), HERE) == t.plan
        assert [Round.load(r.to_json(), HERE) for r in t.rounds] == t.rounds
        if t.result is not None:
            assert Result.load(t.result.to_json(), HERE) == t.result
        for rec, cls in ((t.purge, Purge), (t.precondition, Precondition)):
            if rec is not None:
                assert cls.load(rec.to_json(), HERE) == rec  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", RUNS)
def test_kept_files_are_version_1_and_read_as_the_current_format(name: str) -> None:
    # written before versions were kept per file: no "schema" but in the manifest
    rounds = sorted((RUNDIRS / name / "tests").glob("*/rounds/0001.json"))
    assert rounds
    for f in rounds:
        assert "schema" not in json.loads(f.read_text())
        assert Round.load(json.loads(f.read_text()), f).to_json()["schema"] == Round.VERSION == 3


def _plan(**fields: Any) -> dict[str, Any]:
    return {"kind": "steady", "points": [{"bs": 4096, "read_pct": 0}], **fields}


@pytest.mark.parametrize(
    ("target_kind", "asked", "used"),
    [("nbd", "auto", "nbd"), ("file", "auto", "libaio"), ("block", "auto", "libaio"),
     ("block", "io_uring", "io_uring"), ("nbd", "libaio", "nbd")],
)  # fmt: skip
def test_a_version_1_plan_gets_the_engine_as_it_was_resolved_then(
    target_kind: str, asked: str, used: str
) -> None:
    data = _plan(workload={"ioengine": asked})
    plan = TestPlan.load(data, HERE, Context(target_kind=target_kind))
    assert plan.ioengine_used == used


def test_a_recorded_engine_is_never_re_derived() -> None:
    data = _plan(workload={"ioengine": "auto"}, ioengine_used="sync")
    assert TestPlan.load(data, HERE, Context(target_kind="nbd")).ioengine_used == "sync"
    # nor in a current file, whatever the target
    current = {**data, "schema": 2}
    assert TestPlan.load(current, HERE, Context(target_kind="nbd")).ioengine_used == "sync"


@pytest.mark.parametrize(("written", "cut"), [(1000, True), (2000, False)])
def test_a_version_1_preconditioning_says_whether_it_was_cut_short(written: int, cut: bool) -> None:
    pre = Precondition.load({"total_bytes": 2000, "written_bytes": written}, HERE)
    assert pre.cut_short is cut


def test_a_version_1_failure_keeps_fios_command() -> None:
    old = {"argv": ["fio", "x.fio"], "returncode": 1, "error": "fio failed", "test": "iops"}
    f = Failure.load(old, HERE)
    assert f.fio.argv == ("fio", "x.fio") and f.fio.returncode == 1
    assert f.to_json()["fio"]["argv"] == ["fio", "x.fio"] and "argv" not in f.to_json()


def test_a_round_without_segment_is_segment_1() -> None:
    r = Round.load({"round": 3, "points": [], "tracking": {}}, HERE)
    assert r.segment == 1 and r.to_json()["segment"] == 1


@pytest.mark.parametrize("cls", [TestPlan, Round, Result, Purge, Precondition])
def test_a_newer_format_is_refused(cls: Any) -> None:
    v = cls.VERSION
    with pytest.raises(
        RunDirError, match=rf"newer tkbench \(format {v + 1}, this one reads up to {v}\)"
    ):
        cls.load(
            {"schema": v + 1, "kind": "steady", "points": [], "round": 1, "tracking": {}}, HERE
        )


@pytest.mark.parametrize("value", ["2", 0, True, 1.5])
def test_a_format_version_must_be_a_positive_integer(value: object) -> None:
    with pytest.raises(RunDirError, match="field schema"):
        Round.load({"schema": value, "round": 1, "points": [], "tracking": {}}, HERE)


def test_a_newer_run_directory_is_refused(tmp_path: Path) -> None:
    m = Manifest().to_json()
    m["schema"] = 2
    (tmp_path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(RunDirError, match="newer tkbench"):
        load_run(tmp_path)


def test_what_the_store_writes_carries_its_version(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path / "run", Manifest(status="running"))
    rnd = Round.load({"round": 1, "points": [{"bs": 4096, "read_pct": 0}], "tracking": {}}, HERE)
    store.save_round("iops", rnd, raw="", jobfile="")
    written = json.loads((tmp_path / "run/tests/iops/rounds/0001.json").read_text())
    assert written["schema"] == Round.VERSION and written["round"] == 1
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    assert (manifest["kind"], manifest["schema"]) == ("tkbench-run", 1)
    assert dump(store.update_manifest(status="complete"))["status"] == "complete"
    assert load_run(tmp_path / "run").manifest.status == "complete"


def test_numbers_a_record_cannot_hold_are_refused() -> None:
    with pytest.raises(RunDirError, match=r"field tracking.x is 1e\+300, not a usable number"):
        Round.load({"round": 1, "points": [], "tracking": {"x": 1e300}}, HERE)
    with pytest.raises(RunDirError, match="field round is a number, expected integer"):
        Round.load({"round": 1.0, "points": [], "tracking": {}}, HERE)
    with pytest.raises(RunDirError, match=r"field rounds\.window is 0, below 1"):
        TestPlan.load(_plan(rounds={"window": 0}), HERE)
    with pytest.raises(RunDirError, match=r"field tracking\.x is a string, expected number"):
        Round.load({"round": 1, "points": [], "tracking": {"x": "fast"}}, HERE)


def test_a_round_without_histograms_writes_no_bins_field() -> None:
    # the schema-1 readers of earlier tkbench refuse "bins_ns": null; a run directory
    # written now must still load there (its manifest says schema 1)
    point = {"bs": 4096, "read_pct": 0, "write": {"io_bytes": 1, "bins_ns": {"1000": 1}}}
    r = Round.load({"round": 1, "points": [point], "tracking": {}}, HERE)
    written = r.to_json()["points"][0]
    assert "bins_ns" not in written["read"] and written["write"]["bins_ns"] == {"1000": 1}


def test_a_version_2_round_has_no_temperature() -> None:
    # tkbench read no temperature before round format 3: null, and no thermal record
    r = Round.load({"schema": 2, "round": 4, "points": [], "tracking": {}}, HERE)
    assert r.temperature_c is None and r.thermal is None
    written = r.to_json()
    assert written["schema"] == 3 and written["temperature_c"] is None
    assert "thermal" not in written  # left out while there is none


def test_a_round_keeps_the_drives_thermal_report() -> None:
    data = {
        "schema": 3,
        "round": 2,
        "points": [],
        "tracking": {},
        "temperature_c": 71.0,
        "thermal": {"source": "nvme smart-log", "read_at": 5.0, "since": 4.0,
                    "critical_warning": 2, "warning_minutes": 1, "throttle_seconds": 30},
    }  # fmt: skip
    r = Round.load(data, HERE)
    assert r.thermal is not None and r.thermal.throttle_seconds == 30.0
    assert r.thermal.critical_minutes is None  # not reported
    assert Round.load(r.to_json(), HERE) == r
    with pytest.raises(RunDirError, match="field temperature_c is a string, expected number"):
        Round.load({**data, "temperature_c": "hot"}, HERE)


def test_per_host_results_are_kept_and_left_out_when_there_are_none() -> None:
    host = {"host": "10.0.0.2,8765", "iops": 900.0, "write": {"io_bytes": 8, "iops": 900.0}}
    point = {"bs": 4096, "read_pct": 0, "iops": 1000.0, "hosts": [host, {"host": "sock:/s"}]}
    r = Round.load({"schema": 3, "round": 1, "points": [point], "tracking": {}}, HERE)
    assert [h.host for h in r.points[0].hosts] == ["10.0.0.2,8765", "sock:/s"]
    assert r.points[0].hosts[0].write.iops == 900.0
    assert Round.load(r.to_json(), HERE) == r
    # without fio servers the file is as before: an older reader sees no new field
    plain = Round.load({"round": 1, "points": [{"bs": 4096, "read_pct": 0}], "tracking": {}}, HERE)
    assert plain.points[0].hosts == () and "hosts" not in plain.to_json()["points"][0]
    with pytest.raises(RunDirError, match=r"field points\[0\]\.hosts\[0\]\.host is missing"):
        Round.load(
            {"round": 1, "points": [{**point, "hosts": [{"iops": 1.0}]}], "tracking": {}}, HERE
        )


def test_the_identity_is_read_into_typed_facts_once() -> None:
    """The outputs read a target's identity through :class:`DeviceFacts`: a value of
    the wrong kind is not said, a fact the run did not record is told apart from one
    it recorded as unknown, and the stored mapping stays exactly as written."""
    ident = {
        "model": "PM1733",
        "serial": 42,
        "logical_sector": 512,
        "physical_sector": "4096",
        "emulated": 1,
        "notes": ["read with nvme-cli", ""],
        "manufacturer": None,
        "host_link": "not a mapping",
    }
    target = TargetRecord(identity=ident)
    facts = target.device
    assert (facts.model, facts.serial, facts.firmware) == ("PM1733", "42", None)
    assert (facts.logical_sector, facts.physical_sector) == (512, None)
    assert facts.emulated is True and facts.notes == ("read with nvme-cli",)
    assert facts.manufacturer_recorded and facts.manufacturer is None
    assert facts.host_link_recorded and facts.host_link is None
    assert not TargetRecord().device.manufacturer_recorded
    assert target.device is facts  # read once
    assert dump(target)["identity"] == ident
