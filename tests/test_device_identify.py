"""identify() and health(): real loop devices, fake NVMe/SATA/SAS through a fake
sysfs tree and FAKE tools (tests/fakes: this machine has no such drives)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fakes import helpers
from fakes.helpers import FakeTools, LoopDevices

from tkbench.device import DeviceIdentity, HealthSnapshot, health, identify
from tkbench.device.identify import AtaSecurity, NvmeCaps, parse_hdparm_identify
from tkbench.errors import InputError


@pytest.fixture
def nvme_sysfs(tmp_path: Path) -> Path:
    return helpers.fake_nvme_sysfs(tmp_path / "sys")


# --------------------------------------------------------------------------- real loop devices


@pytest.mark.root
@pytest.mark.parametrize("sector", [512, 4096])
def test_identify_real_loop_device(loops: LoopDevices, sector: int) -> None:
    dev = loops.create(32, sector_size=sector)
    ident = identify(dev)
    name = os.path.basename(dev)
    assert ident.kernel_name == name
    assert ident.interface == "loop"
    assert ident.is_block_device
    assert ident.capacity_bytes == 32 * 1024 * 1024
    assert ident.logical_sector == sector
    assert ident.physical_sector == sector
    assert ident.backing_file is not None and ident.backing_file.endswith("loop0.img")
    assert ident.serial == "unknown"
    assert ident.confirm_id == name  # no serial: confirm with the kernel name
    assert ident.confirm_kind == "kernel name"
    assert ident.devno == f"{os.major(os.stat(dev).st_rdev)}:{os.minor(os.stat(dev).st_rdev)}"
    assert ident.write_cache in ("write back", "write through", "unknown")
    assert any("no serial" in n for n in ident.notes)


@pytest.mark.root
def test_identify_via_symlink_resolves_kernel_name(loops: LoopDevices, tmp_path: Path) -> None:
    dev = loops.create(16)
    link = tmp_path / "by-id-link"
    link.symlink_to(dev)
    ident = identify(link)
    assert ident.kernel_name == os.path.basename(dev)
    assert ident.path == str(link)


@pytest.mark.root
def test_identify_partition_of_loop_device(loops: LoopDevices) -> None:
    dev = loops.create(32, partscan=True)
    part = loops.partition(dev)
    ident = identify(part)
    assert ident.kernel_name == os.path.basename(part)
    assert ident.partition_of == os.path.basename(dev)
    assert ident.interface == "loop"
    assert ident.capacity_bytes is not None and ident.capacity_bytes < 32 * 1024 * 1024


def test_identify_regular_file(tmp_path: Path) -> None:
    f = tmp_path / "target.img"
    f.write_bytes(b"\0" * 8192)
    ident = identify(f)
    assert not ident.is_block_device
    assert ident.capacity_bytes == 8192
    assert ident.kernel_name == ""
    assert ident.confirm_id == str(f.resolve())


def test_identify_missing_path_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or block device"):
        identify("/dev/tkbench-no-such-device", sysfs_root=tmp_path)


def test_identify_rejects_char_device() -> None:
    with pytest.raises(InputError, match="neither a block device nor a regular file"):
        identify("/dev/null")


# --------------------------------------------------------------------------- fake NVMe


def test_identify_fake_nvme(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nvme_sysfs: Path
) -> None:
    fakes = FakeTools(tmp_path, monkeypatch)
    fakes.configure(nvme={"id_ns": {"flbas": 1}})
    ident = identify("/dev/nvme0n1", sysfs_root=nvme_sysfs)
    assert ident.interface == "nvme"
    assert ident.kernel_name == "nvme0n1"
    assert ident.model == "Samsung SSD 980 PRO 1TB"  # padding stripped
    assert ident.serial == "S5GXNF0R912345F"
    assert ident.firmware == "5B2QGXA7"
    assert ident.confirm_id == "S5GXNF0R912345F"
    assert ident.capacity_bytes == 1953525168 * 512
    assert ident.rotational is False
    assert ident.write_cache == "write back"
    assert ident.nvme is not None
    assert ident.nvme.lbaf_index == 1 and ident.nvme.lba_data_size == 4096
    assert ident.nvme.format_supported and ident.nvme.crypto_format_supported
    assert ident.nvme.sanitize_block and ident.nvme.sanitize_crypto
    assert not ident.nvme.sanitize_overwrite
    # sysfs says 512 while the (fake) namespace is formatted 4096: flagged
    assert any("differs" in n for n in ident.notes)
    assert ["nvme", "id-ctrl", "/dev/nvme0n1", "-o", "json"] in fakes.calls("nvme")


def test_identify_nvme_without_nvme_cli_uses_sysfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nvme_sysfs: Path
) -> None:
    FakeTools(tmp_path, monkeypatch, tools=())  # nothing installed
    ident = identify("/dev/nvme0n1", sysfs_root=nvme_sysfs)
    assert ident.interface == "nvme"
    assert ident.serial == "S5GXNF0R912345F"  # from sysfs
    assert ident.model == "Samsung SSD 980 PRO 1TB"
    assert ident.nvme is None
    assert any("'nvme' (Debian package nvme-cli) is not installed" in n for n in ident.notes)


def test_identify_nvme_multipath_head_from_sysfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = helpers.fake_nvme_multipath_sysfs(tmp_path / "sys")
    FakeTools(tmp_path, monkeypatch, tools=())
    ident = identify("/dev/nvme0n1", sysfs_root=root)
    assert ident.interface == "nvme"
    assert (ident.model, ident.serial, ident.firmware) == ("KIOXIA CM6-R", "X0A0A1B2C3D4", "0106")
    assert ident.logical_sector == 4096 and ident.write_cache == "write through"


def test_identify_nvme_tool_failing_is_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nvme_sysfs: Path
) -> None:
    fakes = FakeTools(tmp_path, monkeypatch)
    fakes.configure(
        nvme={"fail": {"id-ctrl": {"rc": 1, "stderr": "identify controller: Invalid argument\n"}}}
    )
    ident = identify("/dev/nvme0n1", sysfs_root=nvme_sysfs)
    assert ident.serial == "S5GXNF0R912345F"  # sysfs: the kernel's copy of id-ctrl
    assert any("Invalid argument" in n for n in ident.notes)
    assert fakes.calls("smartctl") == []


def test_identify_use_tools_false_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nvme_sysfs: Path
) -> None:
    fakes = FakeTools(tmp_path, monkeypatch)
    ident = identify("/dev/nvme0n1", sysfs_root=nvme_sysfs, use_tools=False)
    assert fakes.calls() == []
    assert ident.serial == "S5GXNF0R912345F"


# --------------------------------------------------------------------------- fake SATA / SAS


def test_identify_fake_sata_with_security(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = helpers.fake_scsi_sysfs(
        tmp_path / "sys", "sda", "8:0", vendor="ATA", model="Samsung SSD 860", rev="4B6Q",
        transport="ata",
    )  # fmt: skip
    fakes = FakeTools(tmp_path, monkeypatch)
    fakes.configure(smartctl={"kind": "ata"}, hdparm={"frozen": True})
    ident = identify("/dev/sda", sysfs_root=root)
    assert ident.interface == "sata"
    assert ident.model == "Samsung SSD 860 EVO 500GB"  # smartctl, not the truncated sysfs one
    assert ident.serial == "S3Z2NB0K812345X"
    assert ident.firmware == "RVT04B6Q"
    assert ident.physical_sector == 4096  # sysfs wins for geometry
    assert ident.ata_security == AtaSecurity(
        supported=True, enabled=False, locked=False, frozen=True, expired=False,
        enhanced_erase=True, erase_minutes=2, enhanced_erase_minutes=8,
    )  # fmt: skip


def test_identify_sata_tools_missing_falls_back_to_sysfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = helpers.fake_scsi_sysfs(
        tmp_path / "sys", "sda", "8:0", vendor="ATA", model="Samsung SSD 860", rev="4B6Q",
        transport="ata",
    )  # fmt: skip
    FakeTools(tmp_path, monkeypatch, tools=())
    ident = identify("/dev/sda", sysfs_root=root)
    assert ident.interface == "sata"
    assert ident.model == "Samsung SSD 860"
    assert ident.firmware == "4B6Q"
    assert ident.serial == "unknown"
    assert ident.confirm_id == "sda"
    assert any("smartctl" in n and "not installed" in n for n in ident.notes)
    assert any("hdparm" in n and "not installed" in n for n in ident.notes)
    assert any(n.startswith("serial unknown") for n in ident.notes)


def test_identify_fake_sas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = helpers.fake_scsi_sysfs(
        tmp_path / "sys", "sdb", "8:16", vendor="SEAGATE", model="XS800ME70004", rev="0004",
        transport="sas",
    )  # fmt: skip
    fakes = FakeTools(tmp_path, monkeypatch)
    fakes.configure(smartctl={"kind": "scsi"})
    ident = identify("/dev/sdb", sysfs_root=root)
    assert ident.interface == "sas"
    assert ident.model == "SEAGATE XS800ME70004"
    assert ident.serial == "HLJ0A1B2"
    assert ident.firmware == "0004"
    assert fakes.calls("hdparm") == []  # hdparm is for ATA only


def test_identify_usb_disk_is_other_and_smartctl_error_is_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = helpers.fake_scsi_sysfs(
        tmp_path / "sys", "sdc", "8:32", vendor="Generic", model="Flash Disk", rev="8.07",
        transport="usb",
    )  # fmt: skip
    fakes = FakeTools(tmp_path, monkeypatch)
    fakes.configure(smartctl={"kind": "error"})
    ident = identify("/dev/sdc", sysfs_root=root)
    assert ident.interface == "other"
    assert ident.model == "Generic Flash Disk"
    assert any("Unable to detect device type" in n for n in ident.notes)


# --------------------------------------------------------------------------- parsing, round trips


HDPARM_SECURITY = """
ATA device, with non-removable media
\tModel Number:       INTEL SSDSC2KB480G8
\tSerial Number:      PHYF1234567890ABC
\tFirmware Revision:  XCV10110
Security: 
\tMaster password revision code = 65534
\t\tsupported
\t\tenabled
\t\tlocked
\tnot\tfrozen
\tnot\texpired: security count
\tnot\tsupported: enhanced erase
\tSecurity level high
\t34min for SECURITY ERASE UNIT. 
Logical Unit WWN Device Identifier: 55cd2e4150a1b2c3
"""  # noqa: W291


def test_parse_hdparm_identify() -> None:
    ident, sec = parse_hdparm_identify(HDPARM_SECURITY)
    assert ident == {
        "model": "INTEL SSDSC2KB480G8",
        "serial": "PHYF1234567890ABC",
        "firmware": "XCV10110",
    }
    assert sec == AtaSecurity(
        supported=True, enabled=True, locked=True, frozen=False, expired=False,
        enhanced_erase=False, erase_minutes=34, enhanced_erase_minutes=None,
    )  # fmt: skip


def test_parse_hdparm_without_security_section() -> None:
    ident, sec = parse_hdparm_identify("\tModel Number:  X\n")
    assert sec is None and ident == {"model": "X"}


def test_nvme_caps_lbaf_index_uses_upper_bits_beyond_16_formats() -> None:
    lbafs = [{"ms": 0, "ds": 9, "rp": 0}] * 20
    lbafs = [*lbafs[:18], {"ms": 8, "ds": 12, "rp": 0}, *lbafs[19:]]
    caps = NvmeCaps.from_json({"oacs": 2}, {"flbas": 0x32, "lbafs": lbafs, "dps": 0x9})
    assert caps.lbaf_index == 0x12  # bits 3:0 = 2, bit 4 = ms, bits 6:5 = 1 -> 18
    assert caps.lba_data_size == 4096
    assert caps.extended_metadata == 1
    assert caps.pi_type == 1 and caps.pi_first == 1
    # With 16 formats or fewer, bits 6:5 are reserved and ignored.
    few = NvmeCaps.from_json({}, {"flbas": 0x41, "lbafs": lbafs[:2]})
    assert few.lbaf_index == 1


def test_identity_round_trip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nvme_sysfs: Path
) -> None:
    FakeTools(tmp_path, monkeypatch)
    ident = identify("/dev/nvme0n1", sysfs_root=nvme_sysfs)
    data = json.loads(json.dumps(ident.to_dict()))
    assert data["confirm_id"] == "S5GXNF0R912345F"
    back = DeviceIdentity.from_dict(data)
    assert back == ident
    sata = DeviceIdentity(
        path="/dev/sda", kernel_name="sda", is_block_device=True, interface="sata",
        ata_security=AtaSecurity(supported=True, frozen=True), notes=["x"],
    )  # fmt: skip
    assert DeviceIdentity.from_dict(json.loads(json.dumps(sata.to_dict()))) == sata


# --------------------------------------------------------------------------- health


def test_health_nvme_smart_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = FakeTools(tmp_path, monkeypatch)
    snap = health("/dev/nvme0n1", interface="nvme")
    assert snap.source == "nvme smart-log"
    assert snap.temperature_c == 36.0  # 309 K
    assert snap.media_errors == 0
    assert snap.percentage_used == 3
    assert snap.data_units_written == 61240718
    assert snap.bytes_written == 61240718 * 512000
    assert snap.power_on_hours == 4321
    assert snap.available_spare == 100
    assert snap.raw is not None and snap.raw["num_err_log_entries"] == "12"
    assert fakes.calls("smartctl") == []
    assert HealthSnapshot.from_dict(json.loads(json.dumps(snap.to_dict()))) == snap


def test_health_nvme_falls_back_to_smartctl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fakes = FakeTools(tmp_path, monkeypatch, tools=("smartctl",))
    fakes.configure(smartctl={"kind": "nvme"})
    snap = health("/dev/nvme0n1", interface="nvme")
    assert snap.source == "smartctl"
    assert snap.temperature_c == 36.0
    assert snap.percentage_used == 3
    assert snap.power_on_hours == 4321
    assert any("nvme-cli" in n for n in snap.notes)


def test_health_sata_and_scsi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = FakeTools(tmp_path, monkeypatch)
    fakes.configure(smartctl={"kind": "ata"})
    ata = health("/dev/sda", interface="sata")
    assert ata.source == "smartctl"
    assert (ata.temperature_c, ata.power_on_hours, ata.media_errors) == (31.0, 20123, 2)
    assert ata.bytes_written == 81234567890 * 512
    fakes.configure(smartctl={"kind": "scsi"})
    scsi = health("/dev/sdb", interface="sas")
    assert (scsi.temperature_c, scsi.power_on_hours) == (29.0, 9876)
    assert scsi.percentage_used == 1
    assert scsi.media_errors == 1


def test_health_never_raises_for_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = FakeTools(tmp_path, monkeypatch)
    fakes.configure(smartctl={"kind": "error"})
    snap = health("/dev/sdz", interface="sata")
    assert snap.source == "none"
    assert any("Unable to detect device type" in n for n in snap.notes)
    (tmp_path / "bare").mkdir()
    FakeTools(tmp_path / "bare", monkeypatch, tools=())  # nothing installed
    nothing = health("/dev/sdz", interface="sata")
    assert nothing.source == "none" and nothing.temperature_c is None
    assert any("smartmontools" in n for n in nothing.notes)


def test_health_of_loop_and_file_has_no_smart(tmp_path: Path) -> None:
    f = tmp_path / "f.img"
    f.write_bytes(b"x")
    snap = health(f)
    assert snap.source == "none" and "regular file" in snap.notes[0]
    assert health("/dev/loop0", interface="loop").notes == ["no SMART data for loop devices"]
