"""The volatile write cache: set, read back, refuse and restore through FAKE nvme,
hdparm and sdparm (tests/fakes: this machine has no NVMe, SATA or SAS drive; the
fakes keep the drive's cache setting in a state file and print what the real
tools print)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakes.helpers import FakeTools

from tkbench.device import DeviceIdentity
from tkbench.device.cacherecord import WriteCacheRecord, describe
from tkbench.device.writecache import (
    WriteCacheError,
    WriteCacheSession,
    check,
    plan_text,
    restore_warning,
)
from tkbench.errors import DeviceError, RunDirError, ToolMissingError

ROOT = Path(__file__).resolve().parent.parent


def ident(interface: str, path: str, partition_of: str | None = None) -> DeviceIdentity:
    return DeviceIdentity(
        path=path, kernel_name=os.path.basename(path), is_block_device=True,
        interface=interface, serial="FAKE123", partition_of=partition_of,
    )  # fmt: skip


NVME = ident("nvme", "/dev/nvme0n1")
SATA = ident("sata", "/dev/sda")
SAS = ident("sas", "/dev/sdb")
LOOP = ident("loop", "/dev/loop3")
VIRTIO = ident("virtio", "/dev/vda")

SET_OFF = [
    "nvme", "set-feature", "/dev/nvme0n1", "--feature-id=6", "--namespace-id=4294967295",
    "--value=0",
]  # fmt: skip
SET_ON = [*SET_OFF[:-1], "--value=1"]
GET = ["nvme", "get-feature", "/dev/nvme0n1", "--feature-id=6", "--namespace-id=4294967295"]


class Sink:
    """The run directory's part, in memory: every saved record, every log line."""

    def __init__(self, previous: dict[str, Any] | None = None) -> None:
        self.before = previous
        self.saved: list[dict[str, Any]] = []
        self.lines: list[str] = []

    def previous(self) -> dict[str, Any] | None:
        return self.before

    def save(self, record: dict[str, Any]) -> None:
        self.saved.append(copy.deepcopy(record))

    def log(self, message: str) -> None:
        self.lines.append(message)

    @property
    def record(self) -> WriteCacheRecord:
        return WriteCacheRecord.from_dict(self.saved[-1])


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    return FakeTools(tmp_path, monkeypatch)


def session(identity: DeviceIdentity, setting: str, sink: Sink) -> WriteCacheSession:
    return WriteCacheSession(identity, setting, sink, clock=lambda: 1000.0)


def drive_cache(fakes: FakeTools) -> bool:
    """The fake NVMe drive's WCE bit (enabled unless a test set it otherwise)."""
    return bool(fakes.state().get("vwc_enabled", True))


# --------------------------------------------------------------------------- NVMe


def test_nvme_disable_is_set_read_back_and_restored(fakes: FakeTools) -> None:
    sink = Sink()
    s = session(NVME, "disabled", sink)
    s.begin()
    assert drive_cache(fakes) is False
    calls = fakes.calls("nvme")
    assert calls == [["nvme", "id-ctrl", "/dev/nvme0n1", "-o", "json"], GET, SET_OFF, GET]
    assert "--save" not in SET_OFF  # a power cycle returns the drive to its saved setting
    # the record said "tkbench changed it" before the command was sent
    before_set = sink.saved[-2]["sessions"][0]
    assert before_set["changed"] is True and before_set["after"] is None
    (run,) = sink.record.sessions
    assert (run.before, run.after, run.verified) == ("enabled", "disabled", True)
    assert [c["step"] for c in run.commands] == ["identify", "read", "set", "read"]
    s.end()
    assert drive_cache(fakes) is True
    assert fakes.calls("nvme")[4:] == [GET, SET_ON, GET]
    run = sink.record.sessions[0]
    assert (run.restored, run.restore_verified, run.ended) == ("enabled", True, 1000.0)
    assert describe(sink.record) == (
        "disabled (set by tkbench, verified; restored to enabled after the run)"
    )
    assert restore_warning(sink.record) is None
    assert any("set disabled, read back disabled (was enabled)" in x for x in sink.lines)
    assert any("restored to enabled" in x for x in sink.lines)


def test_nvme_enable_for_pts_c_and_back(fakes: FakeTools) -> None:
    fakes.configure(nvme={"vwc_enabled": False})
    sink = Sink()
    s = session(NVME, "enabled", sink)
    s.begin()
    assert drive_cache(fakes) is True
    s.end()
    assert drive_cache(fakes) is False
    assert [c for c in fakes.calls("nvme") if c[1] == "set-feature"] == [SET_ON, SET_OFF]


def test_nvme_already_as_asked_sends_nothing(fakes: FakeTools) -> None:
    fakes.configure(nvme={"vwc_enabled": False})
    sink = Sink()
    s = session(NVME, "disabled", sink)
    s.begin()
    s.end()
    assert not [c for c in fakes.calls("nvme") if c[1] == "set-feature"]
    assert describe(sink.record) == (
        "disabled (already disabled before the run, verified by tkbench)"
    )


def test_nvme_without_a_volatile_cache(fakes: FakeTools) -> None:
    fakes.configure(nvme={"id_ctrl": {"vwc": 6}})  # flush bits set, present bit 0 clear
    sink = Sink()
    s = session(NVME, "disabled", sink)
    s.begin()  # nothing to disable: PTS-E's "write cache disabled" holds
    s.end()
    assert [c[1] for c in fakes.calls("nvme")] == ["id-ctrl"]
    assert describe(sink.record) == (
        "disabled: the drive has no volatile write cache (checked with nvme-cli)"
    )
    # but there is nothing to enable for PTS-C: refused, and nothing was sent
    sink = Sink()
    s = session(NVME, "enabled", sink)
    with pytest.raises(WriteCacheError, match="no volatile write cache") as err:
        s.begin()
    s.end()
    assert "\n" not in str(err.value)
    assert "Identify Controller VWC bit 0 is 0" in str(err.value)
    assert not [c for c in fakes.calls("nvme") if c[1] == "set-feature"]
    assert sink.record.sessions[0].error == str(err.value)


def test_nvme_drive_that_refuses(fakes: FakeTools) -> None:
    fakes.configure(nvme={"fail": {"set-feature": {"rc": 22, "stderr": "NVMe status: X\n"}}})
    sink = Sink()
    s = session(NVME, "disabled", sink)
    with pytest.raises(WriteCacheError, match="refused to set its write cache disabled") as e:
        s.begin()
    assert "NVMe status: X" in str(e.value) and isinstance(e.value, DeviceError)
    s.end()
    assert drive_cache(fakes) is True
    # the end read it and found it as it was: no second set
    assert len([c for c in fakes.calls("nvme") if c[1] == "set-feature"]) == 1
    assert describe(sink.record).startswith("NOT disabled: the drive refused")
    assert describe(sink.record).endswith("the drive reads enabled again, as before")


def test_nvme_drive_that_ignores_the_setting_is_caught_by_the_read_back(
    fakes: FakeTools,
) -> None:
    fakes.configure(nvme={"set_feature_ignored": True})
    s = session(NVME, "disabled", Sink())
    with pytest.raises(WriteCacheError, match="reads enabled after it was set disabled"):
        s.begin()
    s.end()


def test_nvme_namespace_of_a_controller_feature(fakes: FakeTools) -> None:
    """The fake refuses, like a strict controller, a set addressed to one namespace:
    tkbench names all namespaces (the feature is the controller's)."""
    done = subprocess.run(
        ["nvme", "set-feature", "/dev/nvme0n1", "--feature-id=6", "--value=0"],
        capture_output=True, text=True, env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode != 0 and "Not Namespace Specific" in done.stderr
    s = session(NVME, "disabled", Sink())
    s.begin()
    s.end()


def test_restore_after_an_error_and_after_an_interrupt(fakes: FakeTools) -> None:
    for exc in (DeviceError("fio failed"), KeyboardInterrupt()):
        sink = Sink()
        s = session(NVME, "disabled", sink)
        with pytest.raises(type(exc)):
            s.begin()
            try:
                assert drive_cache(fakes) is False
                raise exc
            finally:
                s.end()
        assert drive_cache(fakes) is True
        assert sink.record.sessions[0].restore_verified is True


def test_a_failed_restore_is_recorded_and_told_with_the_command(fakes: FakeTools) -> None:
    fakes.configure(nvme={"set_feature_fails_from": 2})  # setting works, restoring fails
    sink = Sink()
    s = session(NVME, "disabled", sink)
    s.begin()
    s.end()  # never raises for the drive
    assert drive_cache(fakes) is False
    run = sink.record.sessions[0]
    assert run.restore_verified is False and run.restored is None
    assert describe(sink.record).endswith("; NOT restored to enabled)")
    warning = restore_warning(sink.record)
    assert warning == (
        "the write cache of /dev/nvme0n1 was not restored to enabled: set it by hand with "
        f"`{' '.join(SET_ON)}`"
    )
    assert any("NOT restored to enabled" in x for x in sink.lines)


def test_resume_after_a_crash_restores_what_the_drive_had_first(fakes: FakeTools) -> None:
    # session 1 set "disabled" and was killed before restoring
    first = Sink()
    session(NVME, "disabled", first).begin()
    assert drive_cache(fakes) is False
    # the resumed run reads "disabled" now, but restores "enabled", what the drive had
    second = Sink(previous=first.saved[-1])
    s = session(NVME, "disabled", second)
    s.begin()
    assert not [c for c in fakes.calls("nvme")[4:] if c[1] == "set-feature"]
    s.end()
    assert drive_cache(fakes) is True
    one, two = second.record.sessions
    assert one.ended is None and one.restored is None
    assert (two.before, two.original, two.restored) == ("disabled", "enabled", "enabled")
    assert describe(second.record) == (
        "disabled (set by tkbench, verified in each of 2 sessions; restored to enabled after"
        " the run)"
    )


def test_unchanged_reads_and_records_but_sets_nothing(fakes: FakeTools) -> None:
    sink = Sink()
    s = session(NVME, "unchanged", sink)
    s.begin()
    s.end()
    assert [c[1] for c in fakes.calls("nvme")] == ["id-ctrl", "get-feature"]
    assert describe(sink.record) == (
        "enabled, left unchanged (read with nvme-cli; not set by tkbench)"
    )


def test_unchanged_without_the_tool_runs_and_says_so(
    fakes: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    check(NVME, "unchanged")
    sink = Sink()
    s = session(NVME, "unchanged", sink)
    s.begin()
    s.end()
    assert describe(sink.record) == (
        "left unchanged, state unknown (not read: 'nvme' (Debian package nvme-cli) is not"
        " installed; not set by tkbench)"
    )


def test_a_partition_sets_the_whole_drive(fakes: FakeTools) -> None:
    part = ident("nvme", "/dev/nvme0n1p1", partition_of="nvme0n1")
    s = session(part, "disabled", Sink())
    s.begin()
    s.end()
    assert {c[2] for c in fakes.calls("nvme")} == {"/dev/nvme0n1"}


# --------------------------------------------------------------------------- SATA


def test_ata_disable_and_restore(fakes: FakeTools) -> None:
    sink = Sink()
    s = session(SATA, "disabled", sink)
    s.begin()
    assert fakes.state()["wcache"] is False
    s.end()
    assert fakes.state()["wcache"] is True
    assert fakes.calls("hdparm") == [
        ["hdparm", "-W", "/dev/sda"], ["hdparm", "-W0", "/dev/sda"], ["hdparm", "-W", "/dev/sda"],
        ["hdparm", "-W", "/dev/sda"], ["hdparm", "-W1", "/dev/sda"], ["hdparm", "-W", "/dev/sda"],
    ]  # fmt: skip
    assert describe(sink.record).startswith("disabled (set by tkbench, verified;")


def test_ata_set_failure_told_on_stderr_only_is_caught(fakes: FakeTools) -> None:
    fakes.configure(hdparm={"write_cache_set_fails": True})
    s = session(SATA, "disabled", Sink())
    with pytest.raises(WriteCacheError, match=r"HDIO_DRIVE_CMD\(setcache\) failed"):
        s.begin()
    s.end()


def test_ata_without_write_cache(fakes: FakeTools) -> None:
    fakes.configure(hdparm={"write_cache": "unsupported"})
    with pytest.raises(WriteCacheError, match="no volatile write cache"):
        session(SATA, "enabled", Sink()).begin()
    assert ["hdparm", "-W1", "/dev/sda"] not in fakes.calls("hdparm")


# --------------------------------------------------------------------------- SAS


def test_scsi_disable_and_restore(fakes: FakeTools) -> None:
    sink = Sink()
    s = session(SAS, "disabled", sink)
    s.begin()
    assert fakes.state()["wce"] == 0
    s.end()
    assert fakes.state()["wce"] == 1
    sets = [c for c in fakes.calls("sdparm") if any(a.startswith("--set") for a in c)]
    assert sets == [
        ["sdparm", "--quiet", "--set=WCE=0", "/dev/sdb"],
        ["sdparm", "--quiet", "--set=WCE=1", "/dev/sdb"],
    ]
    assert not any("--save" in c for c in fakes.calls("sdparm"))


def test_scsi_unchangeable_wce_is_refused_before_any_set(fakes: FakeTools) -> None:
    fakes.configure(sdparm={"changeable": False})
    with pytest.raises(WriteCacheError, match="cannot be changed"):
        session(SAS, "disabled", Sink()).begin()
    assert all("--get=WCE" in c for c in fakes.calls("sdparm"))


def test_scsi_without_caching_page(fakes: FakeTools) -> None:
    fakes.configure(sdparm={"no_caching_page": True})
    with pytest.raises(WriteCacheError, match="cannot read the write cache of /dev/sdb"):
        session(SAS, "disabled", Sink()).begin()


# --------------------------------------------------------------------------- checks, plan


def test_check_refuses_before_anything_is_sent(
    fakes: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check(NVME, "disabled")
    check(LOOP, "disabled")  # no drive of its own: not applied, recorded, not refused
    with pytest.raises(WriteCacheError, match="cannot set the write cache of /dev/vda"):
        check(VIRTIO, "disabled")
    check(VIRTIO, "unchanged")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(ToolMissingError, match=r"needs 'sdparm' \(Debian package sdparm\)"):
        check(SAS, "enabled")
    check(SAS, "unchanged")
    assert fakes.calls() == []
    assert "refuses" in plan_text(SAS, "enabled")


def test_plan_names_the_commands(fakes: FakeTools) -> None:
    text = plan_text(NVME, "disabled")
    assert f"`{' '.join(SET_OFF)}`" in text and f"`{' '.join(GET)}`" in text
    assert "restored when the run ends, fails or is interrupted" in text
    assert plan_text(SATA, "unchanged").startswith("unchanged (read with `hdparm -W /dev/sda`")
    assert "not applicable" in plan_text(LOOP, "disabled")
    assert fakes.calls() == []  # the plan touches nothing


def test_no_drive_of_its_own_records_the_departure(fakes: FakeTools) -> None:
    sink = Sink()
    s = session(LOOP, "disabled", sink)
    s.begin()
    s.end()
    assert fakes.calls() == []
    rec = sink.record
    assert rec.applies is False and rec.sessions[0].before == "not applicable"
    assert describe(rec) == (
        "NOT disabled as the profile asks: a loop device (its data lives in a file) has no"
        " drive write cache"
    )


# --------------------------------------------------------------------------- record


def test_record_round_trip_and_bad_fields(fakes: FakeTools) -> None:
    sink = Sink()
    s = session(NVME, "disabled", sink)
    s.begin()
    s.end()
    data = sink.saved[-1]
    assert WriteCacheRecord.from_dict(json.loads(json.dumps(data))).to_dict() == data
    bad = copy.deepcopy(data)
    bad["sessions"][0]["verified"] = "yes"
    with pytest.raises(RunDirError, match=r"field sessions\[0\]\.verified is a string"):
        WriteCacheRecord.from_dict(bad)
    bad = copy.deepcopy(data)
    bad["requested"] = "off"
    with pytest.raises(RunDirError, match="field requested is 'off', not one of disabled"):
        WriteCacheRecord.from_dict(bad)
    with pytest.raises(RunDirError, match="not a tkbench write-cache record"):
        WriteCacheRecord.from_dict({"kind": "tkbench-run"})
    assert describe(None) == "not set by tkbench (this run has no write-cache record)"


# --------------------------------------------------------------------------- signals


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_an_interrupt_during_the_restore_command_still_restores(fakes: FakeTools, sig: str) -> None:
    """Ctrl-C or SIGTERM lands while the restoring nvme set-feature runs: tkbench stops
    that command, restores all the same, then stops.  In a child process with the
    command line's signal handlers (the signal goes to it, not to pytest)."""
    fakes.configure(nvme={"interrupt_parent_on_set": 2, "interrupt_signal": sig})
    script = textwrap.dedent(
        """
        import json, signal, sys
        from tkbench.cli.commands import _on_signal
        from tkbench.device import DeviceIdentity
        from tkbench.device.writecache import WriteCacheSession
        from tkbench.errors import Interrupted
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, _on_signal)  # as `tkbench run` does
        saved = []
        class Sink:
            def previous(self): return None
            def save(self, rec): saved.append(rec)
            def log(self, msg): pass
        dev = DeviceIdentity(path="/dev/nvme0n1", kernel_name="nvme0n1",
                             is_block_device=True, interface="nvme")
        s = WriteCacheSession(dev, "disabled", Sink())
        s.begin()
        try:
            s.end()
        except (KeyboardInterrupt, Interrupted) as exc:
            print(json.dumps({"raised": type(exc).__name__, "record": saved[-1]}))
            sys.exit(130)
        sys.exit(0)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 130, done.stderr
    out = json.loads(done.stdout)
    assert out["raised"] == ("KeyboardInterrupt" if sig == "SIGINT" else "Interrupted")
    run = out["record"]["sessions"][0]
    assert run["restored"] == "enabled" and run["restore_verified"] is True
    assert drive_cache(fakes) is True
    sets = [c for c in fakes.calls("nvme") if c[1] == "set-feature"]
    assert sets == [SET_OFF, SET_ON, SET_ON]  # the interrupted one, then the restore again
