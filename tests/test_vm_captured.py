"""tkbench's parsers and checks against the tools' REAL output, captured in the QEMU
guest of the vm tests (tests/data/vm/README says how): fast, on the host, no guest."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tkbench import proc
from tkbench.device.cacherecord import DISABLED, ENABLED, CacheSession
from tkbench.device.identify import NvmeCaps, detect_interface
from tkbench.device.sysfs import Sysfs
from tkbench.device.writecache import _Ata, _Nvme, _Runner, _Scsi

DATA = Path(__file__).parent / "data" / "vm"


def captured(name: str) -> proc.Completed:
    return proc.Completed(
        [name],
        int((DATA / f"{name}.rc").read_text()),
        (DATA / f"{name}.out").read_text(),
        (DATA / f"{name}.err").read_text(),
        0.0,
    )


class Replay(_Runner):
    """The session's runner, answering each command with a captured output."""

    def __init__(self, answers: dict[str, str]) -> None:
        super().__init__(CacheSession(started=0.0), 1.0)
        self.answers = answers

    def run(self, argv: list[str], step: str) -> proc.Completed:
        key = next(k for k in self.answers if k in " ".join(argv))
        return captured(self.answers[key])


@pytest.mark.parametrize("hba", ["megasas", "virtio-scsi"])
def test_real_sdparm_wce_output_is_read_although_sdparm_exits_5(hba: str) -> None:
    """sdparm 1.12 prints ``WCE  1  [cha: y, def:  1]`` and exits 5 on QEMU's SCSI
    disks; tkbench refused the drive ("cannot read the write cache") before."""
    assert captured(f"sdparm-get-wce-{hba}").returncode == 5
    on = _Scsi("/dev/sda").read(Replay({"--get=WCE": f"sdparm-get-wce-{hba}"}))
    assert (on.state, on.changeable) == (ENABLED, True)
    off = _Scsi("/dev/sda").read(Replay({"--get=WCE": f"sdparm-get-wce-{hba}-after0"}))
    assert off.state == DISABLED


def test_real_sdparm_without_a_wce_line_is_still_an_error() -> None:
    from tkbench.device.writecache import WriteCacheError

    with pytest.raises(WriteCacheError, match="cannot read the write cache"):
        _Scsi("/dev/sda").read(Replay({"--get=WCE": "sdparm-set-wce0-megasas"}))


def test_real_hdparm_and_nvme_cache_readings() -> None:
    assert _Ata("/dev/sdc").read(Replay({"-W": "hdparm-W"})).state == ENABLED
    nvme = {"id-ctrl": "nvme-id-ctrl", "get-feature": "nvme-get-feature-vwc"}
    assert _Nvme("/dev/nvme0n1").read(Replay(nvme)).state == ENABLED
    nvme["get-feature"] = "nvme-get-feature-vwc-after0"  # "Current value:00000000"
    assert _Nvme("/dev/nvme0n1").read(Replay(nvme)).state == DISABLED


def test_real_nvme_identify_offers_format_but_no_sanitize() -> None:
    caps = NvmeCaps.from_json(
        json.loads(captured("nvme-id-ctrl").stdout), json.loads(captured("nvme-id-ns").stdout)
    )
    assert caps.format_supported and not caps.sanitize_any
    assert caps.lba_data_size == 512


def _scsi_disk(root: Path, parents: str, name: str, vendor: str) -> None:
    """A disk at the sysfs path the guest's kernel gave it."""
    disk = root / "devices" / parents / "block" / name
    disk.mkdir(parents=True)
    (disk / "dev").write_text("8:0\n")
    scsi = disk.parent.parent
    (scsi / "vendor").write_text(vendor.ljust(8) + "\n")
    (disk / "device").symlink_to("../..")
    for link in (root / "class" / "block" / name, root / "dev" / "block" / "8:0"):
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(disk, link.parent))


@pytest.mark.parametrize(
    ("parents", "interface"),
    [
        # the guest's /sys/block/sdX links (tests/_vm.py), as readlink -f gave them
        ("pci0000:00/0000:00:0c.0/virtio8/host0/target0:0:0/0:0:0:0", "sas"),
        ("pci0000:00/0000:00:0d.0/host1/target1:2:0/1:2:0:0", "sas"),
    ],
)
def test_a_scsi_disk_on_virtio_scsi_is_scsi(tmp_path: Path, parents: str, interface: str) -> None:
    """virtio-scsi's disks were taken for virtio block devices (no write cache to set)."""
    _scsi_disk(tmp_path, parents, "sda", "QEMU")
    assert detect_interface(Sysfs(tmp_path), "sda") == interface


def test_a_virtio_blk_disk_stays_virtio(tmp_path: Path) -> None:
    disk = tmp_path / "devices/pci0000:00/0000:00:0e.0/virtio9/block/vda"
    disk.mkdir(parents=True)
    (tmp_path / "class" / "block").mkdir(parents=True)
    (tmp_path / "class" / "block" / "vda").symlink_to(
        os.path.relpath(disk, tmp_path / "class/block")
    )
    assert detect_interface(Sysfs(tmp_path), "vda") == "virtio"
