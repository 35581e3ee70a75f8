"""purge(): command construction and failure paths through FAKE nvme, hdparm,
sg_format, sg_sanitize and blkdiscard (tests/fakes: this machine has no NVMe,
SATA or SAS drive), and the real blkdiscard fallback on a real loop device."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fakes.helpers import FakeTools, LoopDevices, sha256_of

from tkbench.device import (
    ATA_TEMP_PASSWORD,
    DeviceIdentity,
    PurgeFailed,
    PurgeRecord,
    PurgeUnsupported,
    identify,
    purge,
)
from tkbench.device.purge import parse_sanitize_log
from tkbench.errors import DeviceError, InputError

PW = ATA_TEMP_PASSWORD


def ident(interface: str, path: str) -> DeviceIdentity:
    return DeviceIdentity(
        path=path, kernel_name=os.path.basename(path), is_block_device=True,
        interface=interface, serial="FAKE123",
    )  # fmt: skip


NVME = ident("nvme", "/dev/nvme0n1")
SATA = ident("sata", "/dev/sda")
SAS = ident("sas", "/dev/sdb")


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    return FakeTools(tmp_path, monkeypatch)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def argvs(record: PurgeRecord) -> list[list[str]]:
    return [c["argv"] for c in record.commands]


# --------------------------------------------------------------------------- NVMe format


def test_nvme_auto_formats_with_user_data_erase(fakes: FakeTools) -> None:
    rec = purge(NVME, timeout=600)
    assert rec.method == "nvme-format" and rec.pts_compliant
    fmt = [a for a in fakes.calls("nvme") if a[1] == "format"]
    assert fmt == [
        ["nvme", "format", "/dev/nvme0n1", "--lbaf=0", "--ses=1", "--ms=0", "--pi=0",
         "--pil=0", "--force", "--timeout=600000"],
    ]  # fmt: skip
    # every command is recorded with its output and duration
    assert argvs(rec) == fakes.calls()
    for cmd in rec.commands:
        assert set(cmd) >= {"argv", "returncode", "stdout", "stderr", "seconds"}
    assert "Success formatting" in rec.commands[-2]["stdout"]
    data = json.loads(json.dumps(rec.to_dict()))
    assert PurgeRecord.from_dict(data) == rec


def test_nvme_format_keeps_lba_format_metadata_and_pi(fakes: FakeTools) -> None:
    lbafs = [
        {"ms": 0, "ds": 9, "rp": 0},
        {"ms": 0, "ds": 12, "rp": 0},
        {"ms": 8, "ds": 12, "rp": 0},
    ]
    fakes.configure(nvme={"id_ns": {"flbas": 0x12, "nlbaf": 2, "lbafs": lbafs, "dps": 0x9}})
    purge(NVME)
    fmt = next(a for a in fakes.calls("nvme") if a[1] == "format")
    assert fmt[3:8] == ["--lbaf=2", "--ses=1", "--ms=1", "--pi=1", "--pil=1"]


def test_nvme_format_crypto_when_supported_and_asked(fakes: FakeTools) -> None:
    rec = purge(NVME, "nvme-format-crypto")
    assert rec.method == "nvme-format-crypto" and rec.pts_compliant
    assert "--ses=2" in next(a for a in fakes.calls("nvme") if a[1] == "format")


def test_nvme_crypto_not_supported_refused(fakes: FakeTools) -> None:
    fakes.configure(nvme={"id_ctrl": {"fna": 0}})
    with pytest.raises(PurgeUnsupported, match="fna bit 2 is 0") as err:
        purge(NVME, "nvme-format-crypto")
    assert not any(a[1] == "format" for a in fakes.calls("nvme"))
    assert err.value.record is not None
    assert [c["argv"][1] for c in err.value.record.commands] == ["id-ctrl", "id-ns"]


def test_nvme_unsupported_falls_back_to_blkdiscard_when_allowed(fakes: FakeTools) -> None:
    fakes.configure(nvme={"id_ctrl": {"fna": 0}})
    rec = purge(NVME, "nvme-format-crypto", allow_fallback=True)
    assert rec.method == "blkdiscard" and not rec.pts_compliant
    assert fakes.calls("blkdiscard") == [["blkdiscard", "/dev/nvme0n1"]]
    assert any("not a PTS-compliant secure erase" in n for n in rec.notes)
    assert any("fna bit 2" in n for n in rec.notes)


def test_nvme_without_format_or_sanitize(fakes: FakeTools) -> None:
    fakes.configure(nvme={"id_ctrl": {"oacs": 0, "sanicap": 0}})
    with pytest.raises(PurgeUnsupported, match="neither Format NVM"):
        purge(NVME)
    assert fakes.calls("blkdiscard") == []


def test_nvme_format_failure_is_not_masked_by_fallback(fakes: FakeTools) -> None:
    stderr = "NVMe status: INVALID_FIELD: A reserved coded value or an unsupported value(0x4002)\n"
    fakes.configure(nvme={"fail": {"format": {"rc": 2, "stderr": stderr}}})
    with pytest.raises(PurgeFailed, match="INVALID_FIELD") as err:
        purge(NVME, allow_fallback=True)
    assert fakes.calls("blkdiscard") == []  # a started erase never falls back
    rec = err.value.record
    assert rec is not None and not rec.pts_compliant and rec.method == ""
    failed = rec.commands[-1]
    assert failed["argv"][1] == "format" and failed["returncode"] == 2
    assert "INVALID_FIELD" in failed["stderr"]


def test_nvme_unreadable_after_format_fails_without_fallback(fakes: FakeTools) -> None:
    fakes.configure(nvme={"fail_after_format": {"id-ns": {"rc": 1, "stderr": "timed out\n"}}})
    with pytest.raises(PurgeFailed, match="after format"):
        purge(NVME, allow_fallback=True)
    assert fakes.calls("blkdiscard") == []  # the format ran: never fall back now


def test_nvme_format_changing_lba_format_is_an_error(fakes: FakeTools) -> None:
    fakes.configure(nvme={"id_ns_after_format": {"flbas": 1}})
    with pytest.raises(PurgeFailed, match="LBA format changed from 0 to 1"):
        purge(NVME)


def test_nvme_tool_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = FakeTools(tmp_path, monkeypatch, tools=("blkdiscard",))
    with pytest.raises(PurgeUnsupported, match=r"'nvme' \(Debian package nvme-cli\) is not"):
        purge(NVME)
    rec = purge(NVME, allow_fallback=True)
    assert rec.method == "blkdiscard" and not rec.pts_compliant
    assert fakes.calls() == [["blkdiscard", "/dev/nvme0n1"]]


def test_nvme_tool_failing_before_erase(fakes: FakeTools) -> None:
    fakes.configure(nvme={"fail": {"id-ctrl": {"rc": 1, "stderr": "No such device\n"}}})
    with pytest.raises(PurgeUnsupported, match="No such device"):
        purge(NVME)


# --------------------------------------------------------------------------- NVMe sanitize


def test_nvme_sanitize_block_polls_until_done(fakes: FakeTools) -> None:
    clock = FakeClock()
    fakes.configure(nvme={"sanitize_initial_status": 1, "sanitize_polls": 3})
    rec = purge(NVME, "nvme-sanitize-block", poll_interval=5, sleep=clock.sleep, clock=clock)
    assert rec.method == "nvme-sanitize-block" and rec.pts_compliant
    calls = fakes.calls("nvme")
    assert ["nvme", "sanitize", "/dev/nvme0n1", "--sanact=2"] in calls
    polls = [a for a in calls if a[1] == "sanitize-log"]
    assert len(polls) == 1 + 4  # pre-check + 3 in progress + done
    assert clock.sleeps == [5, 5, 5]
    assert any("polled the sanitize log 4 time(s)" in n for n in rec.notes)
    assert any("every namespace" in n for n in rec.notes)
    # pre-check, first and last poll are recorded, not every poll
    assert [a[1] for a in argvs(rec)].count("sanitize-log") == 3


def test_nvme_auto_uses_sanitize_without_format(fakes: FakeTools) -> None:
    fakes.configure(nvme={"id_ctrl": {"oacs": 0, "sanicap": 1}, "sanitize_polls": 0})
    rec = purge(NVME, poll_interval=0)
    assert rec.method == "nvme-sanitize-crypto"
    assert ["nvme", "sanitize", "/dev/nvme0n1", "--sanact=4"] in fakes.calls("nvme")


def test_nvme_sanitize_overwrite_arguments(fakes: FakeTools) -> None:
    fakes.configure(nvme={"id_ctrl": {"sanicap": 7}, "sanitize_polls": 0})
    purge(NVME, "nvme-sanitize-overwrite", poll_interval=0)
    assert ["nvme", "sanitize", "/dev/nvme0n1", "--sanact=3", "--owpass=1", "--ovrpat=0"] in (
        fakes.calls("nvme")
    )


def test_nvme_sanitize_unsupported_action(fakes: FakeTools) -> None:
    with pytest.raises(PurgeUnsupported, match="sanitize overwrite"):
        purge(NVME, "nvme-sanitize-overwrite")


@pytest.mark.parametrize("method", ["auto", "nvme-sanitize-block"])
def test_sanitize_already_in_progress(fakes: FakeTools, method: str) -> None:
    fakes.configure(
        # the fake advances 20000/65536 per read: 32768 -> 52768 = 81%
        nvme={"sanitize_initial_status": 2, "sanitize_initial_sprog": 32768,
              "sanitize_initial_polls": 5},
    )  # fmt: skip
    with pytest.raises(PurgeFailed, match=r"already in progress on /dev/nvme0n1, 81% done"):
        purge(NVME, method, allow_fallback=True)
    subs = [a[1] for a in fakes.calls("nvme")]
    assert "format" not in subs and "sanitize" not in subs
    assert fakes.calls("blkdiscard") == []


def test_sanitize_timeout(fakes: FakeTools) -> None:
    clock = FakeClock()
    fakes.configure(nvme={"sanitize_polls": 1000})
    with pytest.raises(PurgeFailed, match="sanitize not complete after 60 s"):
        purge(NVME, "nvme-sanitize-block", timeout=60, poll_interval=10, sleep=clock.sleep,
              clock=clock)  # fmt: skip
    assert clock.now >= 60


def test_sanitize_reported_failed(fakes: FakeTools) -> None:
    fakes.configure(nvme={"sanitize_polls": 1, "sanitize_final_status": 3})
    with pytest.raises(PurgeFailed, match="sanitize failure mode"):
        purge(NVME, "nvme-sanitize-block", poll_interval=0)


def test_format_refused_in_sanitize_failure_mode(fakes: FakeTools) -> None:
    fakes.configure(nvme={"sanitize_initial_status": 3})
    with pytest.raises(PurgeFailed, match="purge with a sanitize method"):
        purge(NVME, "nvme-format")


def test_parse_sanitize_log_shapes() -> None:
    nested = {"nvme0": {"sprog": 100, "sstat": {"status": "(2) Sanitize in Progress."}}}
    assert parse_sanitize_log(nested) == (2, 100)
    assert parse_sanitize_log({"sprog": 65535, "sstat": 0x101}) == (1, 65535)
    assert parse_sanitize_log({"sprog": 1, "sstat": {"status": 4}}) == (4, 1)
    assert parse_sanitize_log({"other": 1}) == (None, None)


# --------------------------------------------------------------------------- SATA


def test_ata_enhanced_secure_erase(fakes: FakeTools) -> None:
    rec = purge(SATA)
    assert rec.method == "ata-secure-erase-enhanced" and rec.pts_compliant
    calls = fakes.calls("hdparm")
    assert ["hdparm", "--user-master", "u", "--security-set-pass", PW, "/dev/sda"] in calls
    assert ["hdparm", "--user-master", "u", "--security-erase-enhanced", PW, "/dev/sda"] in calls
    state = fakes.state()
    assert state["erased"] and state["erased_enhanced"]
    assert state["enabled"] is False and state["password"] is None  # never left locked


def test_ata_normal_erase_without_enhanced_support(fakes: FakeTools) -> None:
    fakes.configure(hdparm={"enhanced": False})
    rec = purge(SATA)
    assert rec.method == "ata-secure-erase"
    assert ["hdparm", "--user-master", "u", "--security-erase", PW, "/dev/sda"] in (
        fakes.calls("hdparm")
    )


def test_ata_frozen_explains_how_to_unfreeze(fakes: FakeTools) -> None:
    fakes.configure(hdparm={"frozen": True})
    with pytest.raises(PurgeUnsupported) as err:
        purge(SATA)
    msg = str(err.value)
    assert "frozen" in msg and "rtcwake -m mem -s 5" in msg and "hot-plug" in msg
    assert fakes.calls("hdparm") == [["hdparm", "-I", "/dev/sda"]]  # nothing else tried


def test_ata_frozen_with_fallback(fakes: FakeTools) -> None:
    fakes.configure(hdparm={"frozen": True})
    rec = purge(SATA, allow_fallback=True)
    assert rec.method == "blkdiscard" and not rec.pts_compliant
    assert any("frozen" in n for n in rec.notes)


def test_ata_erase_failure_clears_password(fakes: FakeTools) -> None:
    fakes.configure(hdparm={"fail": {"erase": {"rc": 5, "stderr": "SECURITY_ERASE: I/O error\n"}}})
    with pytest.raises(PurgeFailed, match="temporary password was cleared") as err:
        purge(SATA, allow_fallback=True)
    calls = fakes.calls("hdparm")
    erase_at = calls.index(["hdparm", "--user-master", "u", "--security-erase-enhanced", PW,
                            "/dev/sda"])  # fmt: skip
    assert ["hdparm", "--user-master", "u", "--security-disable", PW, "/dev/sda"] in (
        calls[erase_at:]
    )
    assert fakes.state()["enabled"] is False
    assert fakes.calls("blkdiscard") == []
    rec = err.value.record
    assert rec is not None and any("--security-disable" in c["argv"] for c in rec.commands)


def test_ata_erase_failure_with_locked_drive_unlocks_then_disables(fakes: FakeTools) -> None:
    fakes.configure(
        hdparm={"lock_on_erase_failure": True, "fail": {"erase": {"rc": 5}}},
    )
    with pytest.raises(PurgeFailed, match="cleared"):
        purge(SATA)
    ops = [a[3] for a in fakes.calls("hdparm") if len(a) > 3]
    assert ops[-2:] == ["--security-unlock", "--security-disable"]
    assert fakes.state()["enabled"] is False and fakes.state()["locked"] is False


def test_ata_interrupted_erase_still_clears_password(
    fakes: FakeTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tkbench import proc

    real_run = proc.run

    def run(argv: list[str], **kw: object) -> proc.Completed:
        if "--security-erase-enhanced" in argv:
            raise KeyboardInterrupt  # Ctrl-C while the drive erases
        return real_run(argv, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(proc, "run", run)
    with pytest.raises(KeyboardInterrupt):
        purge(SATA)
    assert ["hdparm", "--user-master", "u", "--security-disable", PW, "/dev/sda"] in (
        fakes.calls("hdparm")
    )
    assert fakes.state()["enabled"] is False


def test_ata_password_left_set_is_reported_with_recovery_command(fakes: FakeTools) -> None:
    fakes.configure(hdparm={"fail": {"erase": {"rc": 5}, "disable": {"rc": 5}}})
    with pytest.raises(PurgeFailed) as err:
        purge(SATA)
    msg = str(err.value)
    assert "WARNING" in msg
    assert f"hdparm --user-master u --security-disable {PW} /dev/sda" in msg


def test_ata_set_pass_failure_erases_nothing(fakes: FakeTools) -> None:
    fakes.configure(hdparm={"fail": {"set-pass": {"rc": 5}}})
    with pytest.raises(PurgeFailed):
        purge(SATA)
    assert not any("--security-erase" in " ".join(a) for a in fakes.calls("hdparm"))


def test_ata_password_already_set_refused(fakes: FakeTools) -> None:
    fakes.configure(hdparm={"enabled": True})
    with pytest.raises(PurgeFailed, match="already enabled"):
        purge(SATA, allow_fallback=True)
    assert fakes.calls("hdparm") == [["hdparm", "-I", "/dev/sda"]]


def test_ata_security_not_supported(fakes: FakeTools) -> None:
    fakes.configure(hdparm={"supported": False})
    with pytest.raises(PurgeUnsupported, match="ATA Security feature set"):
        purge(SATA)


def test_hdparm_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FakeTools(tmp_path, monkeypatch, tools=())
    with pytest.raises(PurgeUnsupported, match="'hdparm'"):
        purge(SATA)


# --------------------------------------------------------------------------- SAS


def test_scsi_format(fakes: FakeTools) -> None:
    rec = purge(SAS)
    assert rec.method == "scsi-format" and rec.pts_compliant
    assert fakes.calls() == [["sg_format", "--format", "--quick", "/dev/sdb"]]
    assert "FORMAT UNIT Complete" in rec.commands[0]["stdout"]


@pytest.mark.parametrize(
    ("method", "flags"),
    [
        ("scsi-sanitize-block", ["--block"]),
        ("scsi-sanitize-crypto", ["--crypto"]),
        ("scsi-sanitize-overwrite", ["--overwrite", "--zero"]),
    ],
)
def test_scsi_sanitize(fakes: FakeTools, method: str, flags: list[str]) -> None:
    rec = purge(SAS, method)
    assert rec.method == method
    assert fakes.calls() == [["sg_sanitize", *flags, "--quick", "/dev/sdb"]]


def test_scsi_rejected_command_is_unsupported(fakes: FakeTools) -> None:
    stderr = "Sanitize command: Illegal request, Invalid opcode\n"
    fakes.configure(sg_sanitize={"fail": {"sanitize": {"rc": 5, "stderr": stderr}}})
    with pytest.raises(PurgeUnsupported, match="illegal request"):
        purge(SAS, "scsi-sanitize-crypto")
    rec = purge(SAS, "scsi-sanitize-crypto", allow_fallback=True)
    assert rec.method == "blkdiscard"


def test_scsi_format_failure(fakes: FakeTools) -> None:
    fakes.configure(sg_format={"fail": {"format": {"rc": 3, "stderr": "Medium error\n"}}})
    with pytest.raises(PurgeFailed, match="Medium error"):
        purge(SAS, allow_fallback=True)
    assert fakes.calls("blkdiscard") == []


def test_sg3_utils_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FakeTools(tmp_path, monkeypatch, tools=())
    with pytest.raises(PurgeUnsupported, match="sg3-utils"):
        purge(SAS)


# --------------------------------------------------------------------------- arguments


def test_bad_method_arguments(fakes: FakeTools) -> None:
    with pytest.raises(InputError, match="unknown purge method"):
        purge(NVME, "shred")
    with pytest.raises(InputError, match="is for sata devices"):
        purge(NVME, "ata-secure-erase")
    assert fakes.calls() == []
    assert issubclass(PurgeFailed, DeviceError) and issubclass(PurgeUnsupported, DeviceError)


def test_partition_is_never_secure_erased(fakes: FakeTools) -> None:
    part = DeviceIdentity(
        path="/dev/nvme0n1p1", kernel_name="nvme0n1p1", is_block_device=True,
        interface="nvme", partition_of="nvme0n1",
    )  # fmt: skip
    with pytest.raises(PurgeUnsupported, match="would wipe the whole drive"):
        purge(part)
    assert fakes.calls() == []
    rec = purge(part, allow_fallback=True)
    assert fakes.calls() == [["blkdiscard", "/dev/nvme0n1p1"]]  # only the partition
    assert not rec.pts_compliant


def test_explicit_blkdiscard_is_recorded_as_not_compliant(fakes: FakeTools) -> None:
    rec = purge(NVME, "blkdiscard")
    assert rec.method == "blkdiscard" and not rec.pts_compliant
    assert fakes.calls() == [["blkdiscard", "/dev/nvme0n1"]]


def test_fallback_tool_failure(fakes: FakeTools) -> None:
    stderr = "blkdiscard: BLKDISCARD ioctl failed: Operation not supported\n"
    fakes.configure(
        nvme={"id_ctrl": {"oacs": 0, "sanicap": 0}},
        blkdiscard={"fail": {"discard": {"rc": 1, "stderr": stderr}}},
    )
    with pytest.raises(PurgeFailed, match="Operation not supported"):
        purge(NVME, allow_fallback=True)


# --------------------------------------------------------------------------- real loop / file


@pytest.mark.root
def test_loop_device_without_fallback_is_refused_untouched(loops: LoopDevices) -> None:
    dev = loops.create(16)
    with open(dev, "r+b") as fh:
        fh.write(b"\xab" * 65536)
    before = sha256_of(dev)
    with pytest.raises(PurgeUnsupported, match="loop device, which has no PTS-compliant"):
        purge(identify(dev))
    assert sha256_of(dev) == before


@pytest.mark.root
def test_loop_device_fallback_runs_real_blkdiscard(loops: LoopDevices) -> None:
    dev = loops.create(16)
    with open(dev, "r+b") as fh:
        fh.write(b"\xab" * (1 << 20))
        os.fsync(fh.fileno())
    rec = purge(identify(dev), allow_fallback=True)
    assert rec.method == "blkdiscard" and not rec.pts_compliant
    assert rec.commands[0]["argv"] == ["blkdiscard", dev]
    assert rec.commands[0]["returncode"] == 0
    assert any("not a PTS-compliant secure erase" in n for n in rec.notes)
    with open(dev, "rb") as fh:
        assert fh.read(1 << 20) == b"\0" * (1 << 20)  # discarded blocks read back as zeros


def test_regular_file_fallback_punches_a_hole(tmp_path: Path) -> None:
    f = tmp_path / "t.img"
    f.write_bytes(b"\xcd" * (1 << 20))
    with pytest.raises(PurgeUnsupported):
        purge(identify(f))
    assert f.read_bytes() == b"\xcd" * (1 << 20)
    rec = purge(identify(f), allow_fallback=True)
    assert rec.method == "punch-hole" and not rec.pts_compliant
    assert f.stat().st_size == 1 << 20
    assert f.read_bytes() == b"\0" * (1 << 20)
