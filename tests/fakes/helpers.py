"""Test helpers for tkbench.device: fake tools on PATH, fake sysfs trees and
real loop devices that are always detached again."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FAKES_DIR = Path(__file__).resolve().parent
FAKE_TOOLS = (
    "nvme", "hdparm", "sdparm", "sg_format", "sg_sanitize", "smartctl", "blkdiscard",
)  # fmt: skip


# --------------------------------------------------------------------------- fake tools


class FakeTools:
    """Put the FAKE drive tools (and nothing else) on PATH for one test.

    PATH holds only a private bin directory with links to the chosen fakes and
    to a python3, so a real nvme/hdparm/sg_format can never be reached and a
    tool left out is "not installed".
    """

    def __init__(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tools: tuple[str, ...] = FAKE_TOOLS
    ) -> None:
        self.bin = tmp_path / "fakebin"
        self.state_dir = tmp_path / "fakestate"
        self.bin.mkdir()
        self.state_dir.mkdir()
        for tool in tools:
            (self.bin / tool).symlink_to(FAKES_DIR / tool)
        (self.bin / "python3").symlink_to(os.path.realpath(sys.executable))
        self._config: dict[str, Any] = {}
        self.configure()
        monkeypatch.setenv("PATH", str(self.bin))
        monkeypatch.setenv("TKBENCH_FAKE_DIR", str(self.state_dir))

    def configure(self, **sections: dict[str, Any]) -> None:
        for tool, values in sections.items():
            self._config.setdefault(tool, {}).update(values)
        (self.state_dir / "config.json").write_text(json.dumps(self._config))

    def calls(self, tool: str | None = None) -> list[list[str]]:
        path = self.state_dir / "calls.jsonl"
        if not path.exists():
            return []
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [r["argv"] for r in rows if tool is None or r["tool"] == tool]

    def state(self) -> dict[str, Any]:
        path = self.state_dir / "state.json"
        return json.loads(path.read_text()) if path.exists() else {}


# --------------------------------------------------------------------------- fake sysfs


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _link_block(root: Path, devdir: Path, name: str, devno: str) -> None:
    for link in (root / "class" / "block" / name, root / "dev" / "block" / devno):
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(devdir, link.parent))


def _queue(devdir: Path, logical: int, physical: int, rotational: int, wc: str) -> None:
    _write(devdir / "queue" / "logical_block_size", str(logical))
    _write(devdir / "queue" / "physical_block_size", str(physical))
    _write(devdir / "queue" / "rotational", str(rotational))
    _write(devdir / "queue" / "write_cache", wc)


def fake_nvme_multipath_sysfs(root: Path) -> Path:
    """A native-multipath head node: nvme0n1 under nvme-subsys0, no device link."""
    subsys = root / "devices" / "virtual" / "nvme-subsystem" / "nvme-subsys0"
    _write(subsys / "model", "KIOXIA CM6-R")
    _write(subsys / "serial", "X0A0A1B2C3D4")
    _write(subsys / "firmware_rev", "0106")
    ns = subsys / "nvme0n1"
    _write(ns / "dev", "259:1")
    _write(ns / "size", str(7501476528))
    (ns / "holders").mkdir(parents=True)
    _queue(ns, 4096, 4096, 0, "write through")
    _link_block(root, ns, "nvme0n1", "259:1")
    return root


def _pci_function(
    root: Path, pci: Path, driver: str, link: tuple[str, int, str, int] | None, vendor: str = ""
) -> None:
    """A PCI function's driver link, vendor ID and (PCIe) link attributes."""
    drivers = root / "bus" / "pci" / "drivers" / driver
    drivers.mkdir(parents=True, exist_ok=True)
    pci.mkdir(parents=True, exist_ok=True)
    (pci / "driver").symlink_to(os.path.relpath(drivers, pci))
    if vendor:
        _write(pci / "vendor", vendor)
    if link is not None:
        cur, width, top, top_width = link
        _write(pci / "current_link_speed", cur)
        _write(pci / "current_link_width", str(width))
        _write(pci / "max_link_speed", top)
        _write(pci / "max_link_width", str(top_width))


def fake_nvme_sysfs(
    root: Path,
    name: str = "nvme0n1",
    devno: str = "259:0",
    *,
    link: tuple[str, int, str, int] | None = ("8.0 GT/s PCIe", 4, "16.0 GT/s PCIe", 4),
    transport: str = "pcie",
) -> Path:
    """A sysfs tree with one NVMe namespace, laid out like the kernel's: the
    controller nvme0 (class/nvme/nvme0, its transport) on PCI function 0000:00:04.0
    (driver nvme, vendor 0x144d, the PCIe ``link``: current speed and width, maximum
    speed and width)."""
    pci = root / "devices" / "pci0000:00" / "0000:00:04.0"
    ctrl = pci / "nvme" / "nvme0"
    _write(ctrl / "model", "Samsung SSD 980 PRO 1TB                 ")
    _write(ctrl / "serial", "S5GXNF0R912345F     ")
    _write(ctrl / "firmware_rev", "5B2QGXA7")
    _write(ctrl / "transport", transport)
    (ctrl / "device").symlink_to("../..")
    _pci_function(root, pci, "nvme", link, vendor="0x144d")
    cls = root / "class" / "nvme" / "nvme0"
    cls.parent.mkdir(parents=True, exist_ok=True)
    cls.symlink_to(os.path.relpath(ctrl, cls.parent))
    ns = ctrl / name
    _write(ns / "dev", devno)
    _write(ns / "size", str(1953525168))
    _write(ns / "ro", "0")
    (ns / "holders").mkdir(parents=True)
    _queue(ns, 512, 512, 0, "write back")
    (ns / "device").symlink_to("..")
    _link_block(root, ns, name, devno)
    return root


def fake_scsi_sysfs(
    root: Path,
    name: str,
    devno: str,
    *,
    vendor: str,
    model: str,
    rev: str,
    transport: str,
    rotational: int = 0,
) -> Path:
    """A SCSI disk: ``transport`` is "ata", "sas" or "usb" (where it hangs), below a
    host bus adapter with its driver (ahci at a 6.0 Gbps SATA link, mpt3sas on PCIe
    8.0 GT/s x8, xhci_hcd)."""
    parents = {
        "ata": ["pci0000:00", "0000:00:1f.2", "ata1", "host0", "target0:0:0"],
        "sas": ["pci0000:00", "0000:03:00.0", "host1", "port-1:0", "end_device-1:0", "target1:0:0"],
        "usb": ["pci0000:00", "0000:00:14.0", "usb2", "2-1", "2-1:1.0", "host2", "target2:0:0"],
    }[transport]
    pci = root.joinpath("devices", *parents[:2])
    if transport == "ata":
        _pci_function(root, pci, "ahci", None)
        _write(pci / "ata1" / "link1" / "ata_link" / "link1" / "sata_spd", "6.0 Gbps")
    elif transport == "sas":
        _pci_function(root, pci, "mpt3sas", ("8.0 GT/s PCIe", 8, "8.0 GT/s PCIe", 8))
    else:
        _pci_function(root, pci, "xhci_hcd", None)
    scsi = root.joinpath("devices", *parents, "0:0:0:0")
    _write(scsi / "vendor", vendor.ljust(8))
    _write(scsi / "model", model.ljust(16))
    _write(scsi / "rev", rev)
    disk = scsi / "block" / name
    _write(disk / "dev", devno)
    _write(disk / "size", str(976773168))
    _write(disk / "ro", "0")
    (disk / "holders").mkdir(parents=True)
    _queue(disk, 512, 4096, rotational, "write through")
    (disk / "device").symlink_to("../..")
    _link_block(root, disk, name, devno)
    return root


def fake_sysfs_for_real_device(root: Path, device: str, *, holders: list[str]) -> Path:
    """A copy of a real block device's sysfs entry (same name and devno) with
    made-up holders, for exercising the holders check without device-mapper."""
    name = os.path.basename(os.path.realpath(device))
    real = Path("/sys/class/block") / name
    devdir = root / "devices" / "virtual" / "block" / name
    devno = (real / "dev").read_text().strip()
    for attr in ("dev", "size", "ro"):
        _write(devdir / attr, (real / attr).read_text().strip())
    _queue(devdir, 512, 512, 1, "write back")
    (devdir / "holders").mkdir(parents=True)
    for holder in holders:
        (devdir / "holders" / holder).mkdir()
    _link_block(root, devdir, name, devno)
    return root


# --------------------------------------------------------------------------- loop devices


def can_use_loop_devices() -> str | None:
    """None when real loop devices can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root for loop devices"
    if shutil.which("losetup") is None:
        return "losetup not installed"
    if not (os.path.exists("/dev/loop-control") or os.path.exists("/dev/loop0")):
        return "no loop device support"
    return None


def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)


class LoopDevices:
    """Creates loop devices over sparse files; ``cleanup`` undoes everything
    (swapoff, umount, losetup -d) even after a failed test."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.devices: list[str] = []
        self.mounts: list[Path] = []
        self.swaps: list[str] = []

    def create(
        self, size_mb: int = 64, *, sector_size: int | None = None, partscan: bool = False
    ) -> str:
        img = self.tmp / f"loop{len(self.devices)}.img"
        with open(img, "wb") as fh:
            fh.truncate(size_mb * 1024 * 1024)
        argv = ["losetup", "--find", "--show"]
        if sector_size:
            argv += ["--sector-size", str(sector_size)]
        if partscan:
            argv.append("--partscan")
        dev = run([*argv, str(img)]).stdout.strip()
        self.devices.append(dev)
        return dev

    def mkfs(self, dev: str) -> None:
        if shutil.which("mkfs.ext4") is None:
            pytest.skip("mkfs.ext4 not installed (Debian package e2fsprogs)")
        run(["mkfs.ext4", "-q", "-F", dev])

    def mount(self, dev: str) -> Path:
        mnt = self.tmp / f"mnt{len(self.mounts)}"
        mnt.mkdir()
        run(["mount", dev, str(mnt)])
        self.mounts.append(mnt)
        return mnt

    def swapon(self, dev: str) -> None:
        run(["mkswap", "-q", dev])
        run(["swapon", dev])
        self.swaps.append(dev)

    def partition(self, dev: str) -> str:
        """One Linux partition over the whole device; returns its node."""
        if shutil.which("sfdisk") is None:
            pytest.skip("sfdisk not installed (Debian package fdisk)")
        run(["sfdisk", "-q", dev], input="label: dos\n,,L\n")
        part = f"{dev}p1"
        name = os.path.basename(part)
        if not os.path.exists(f"/sys/class/block/{name}"):
            # Kernels without the msdos parser: add the partition explicitly.
            run(["partx", "--add", dev])
        for _ in range(50):
            if os.path.exists(part):
                return part
            time.sleep(0.1)
        raise AssertionError(f"partition node {part} did not appear")

    def cleanup(self) -> None:
        for dev in reversed(self.swaps):
            subprocess.run(["swapoff", dev], check=False, capture_output=True)
        for mnt in reversed(self.mounts):
            if subprocess.run(["umount", str(mnt)], check=False, capture_output=True).returncode:
                subprocess.run(["umount", "-l", str(mnt)], check=False, capture_output=True)
        for dev in reversed(self.devices):
            subprocess.run(["losetup", "-d", dev], check=False, capture_output=True)
        self.swaps.clear()
        self.mounts.clear()
        self.devices.clear()


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextlib.contextmanager
def loop_devices(tmp_path: Path) -> Iterator[LoopDevices]:
    why = can_use_loop_devices()
    if why:
        pytest.skip(why)
    mgr = LoopDevices(tmp_path)
    try:
        yield mgr
    finally:
        mgr.cleanup()
