"""Who is this drive?  Model, serial, firmware, geometry and interface.

Sources, best first: ``nvme id-ctrl/id-ns -o json`` (NVMe), ``smartctl --json
-a`` (SATA, SAS, NVMe without nvme-cli), ``hdparm -I`` (ATA security state),
sysfs, and the udev database.  Every query only reads.  A missing tool or field
leaves the value ``"unknown"`` (numbers: None) and adds a line to ``notes``
explaining why; identification never fails because a tool is missing.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tkbench.device import facts
from tkbench.device._common import UNKNOWN, as_int, clean_str, last_line, load_json_object, try_run
from tkbench.device.sysfs import Sysfs
from tkbench.errors import InputError
from tkbench.typed import Typed

INTERFACES = ("nvme", "sata", "sas", "loop", "virtio", "other")
TOOL_TIMEOUT = 30.0


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class AtaSecurity(Typed):
    """The ``Security:`` block of ``hdparm -I``."""

    supported: bool = False
    enabled: bool = False
    locked: bool = False
    frozen: bool = False
    expired: bool = False
    enhanced_erase: bool = False
    erase_minutes: int | None = None
    enhanced_erase_minutes: int | None = None


@dataclass(frozen=True)
class NvmeCaps(Typed):
    """The few Identify Controller / Namespace fields a purge depends on (written
    with the bits they decode, for a reader of the identity)."""

    DERIVED = (
        "lbaf_index",
        "format_supported",
        "crypto_format_supported",
        "sanitize_block",
        "sanitize_crypto",
        "sanitize_overwrite",
    )

    oacs: int = 0  # bit 1: Format NVM supported
    fna: int = 0  # bit 2: crypto erase as part of Format; bit 1: SES applies to all ns
    sanicap: int = 0  # bit 0 crypto, bit 1 block erase, bit 2 overwrite
    flbas: int | None = None  # formatted LBA size field of the namespace
    dps: int = 0  # end-to-end protection settings in use
    lbaf_count: int = 0
    lba_data_size: int | None = None  # bytes per LBA of the format in use

    @property
    def format_supported(self) -> bool:
        return bool(self.oacs & 0x2)

    @property
    def crypto_format_supported(self) -> bool:
        return bool(self.fna & 0x4)

    @property
    def sanitize_crypto(self) -> bool:
        return bool(self.sanicap & 0x1)

    @property
    def sanitize_block(self) -> bool:
        return bool(self.sanicap & 0x2)

    @property
    def sanitize_overwrite(self) -> bool:
        return bool(self.sanicap & 0x4)

    @property
    def sanitize_any(self) -> bool:
        return bool(self.sanicap & 0x7)

    @property
    def lbaf_index(self) -> int | None:
        """Index of the LBA format in use: FLBAS bits 3:0, plus bits 6:5 as the
        upper two bits when the namespace has more than 16 formats."""
        if self.flbas is None:
            return None
        low = self.flbas & 0xF
        high = (self.flbas >> 5) & 0x3 if self.lbaf_count > 16 else 0
        return (high << 4) | low

    @property
    def extended_metadata(self) -> int:
        """FLBAS bit 4: metadata transferred at the end of each LBA."""
        return ((self.flbas or 0) >> 4) & 1

    @property
    def pi_type(self) -> int:
        return self.dps & 0x7

    @property
    def pi_first(self) -> int:
        return (self.dps >> 3) & 1

    @classmethod
    def from_json(cls, id_ctrl: dict[str, Any], id_ns: dict[str, Any] | None) -> NvmeCaps:
        ns = id_ns or {}
        lbafs = ns.get("lbafs")
        lbafs_list = lbafs if isinstance(lbafs, list) else []
        flbas = as_int(ns.get("flbas"))
        caps = cls(
            oacs=as_int(id_ctrl.get("oacs")) or 0,
            fna=as_int(id_ctrl.get("fna")) or 0,
            sanicap=as_int(id_ctrl.get("sanicap")) or 0,
            flbas=flbas,
            dps=as_int(ns.get("dps")) or 0,
            lbaf_count=len(lbafs_list),
        )
        idx = caps.lbaf_index
        size = None
        if idx is not None and idx < len(lbafs_list) and isinstance(lbafs_list[idx], dict):
            ds = as_int(lbafs_list[idx].get("ds"))
            if ds is not None and 9 <= ds <= 20:
                size = 1 << ds
        return replace(caps, lba_data_size=size)


@dataclass(frozen=True)
class DeviceIdentity(Typed):
    """What tkbench knows about a target; recorded in every run directory (its
    fields, then ``confirm_id``)."""

    DERIVED = ("confirm_id",)

    path: str
    kernel_name: str  # "loop3", "nvme0n1"; "" for a regular file
    is_block_device: bool
    interface: str  # one of INTERFACES
    model: str = UNKNOWN
    serial: str = UNKNOWN
    firmware: str = UNKNOWN
    capacity_bytes: int | None = None
    logical_sector: int | None = None
    physical_sector: int | None = None
    rotational: bool | None = None
    write_cache: str = UNKNOWN  # "write back" | "write through" | "unknown"
    devno: str | None = None  # "MAJ:MIN"
    partition_of: str | None = None
    backing_file: str | None = None  # loop devices
    ata_security: AtaSecurity | None = None
    nvme: NvmeCaps | None = None
    # the report header's facts (tkbench.device.facts), read at identification time
    manufacturer: str = UNKNOWN
    manufacturer_source: str | None = None  # what named it, in words
    host_link: dict[str, Any] | None = None  # PCIe link or host bus adapter; None: none
    form_factor: str | None = None  # as the drive reports it; None: not reported
    warning_temp_c: float | None = None  # NVMe WCTEMP; SCSI drive trip temperature
    critical_temp_c: float | None = None  # NVMe CCTEMP
    notes: list[str] = field(default_factory=list)

    @property
    def has_serial(self) -> bool:
        return self.serial not in ("", UNKNOWN)

    @property
    def confirm_id(self) -> str:
        """The ID ``--confirm`` must name: the serial, else the kernel name
        (loop devices have no serial), or the resolved path of a regular file."""
        if not self.is_block_device:
            return os.path.realpath(self.path)
        return self.serial if self.has_serial else self.kernel_name

    @property
    def confirm_kind(self) -> str:
        if not self.is_block_device:
            return "path"
        return "serial" if self.has_serial else "kernel name"


# --------------------------------------------------------------------------- parsers


_HDPARM_FIELDS = {
    "Model Number": "model",
    "Serial Number": "serial",
    "Firmware Revision": "firmware",
}


def parse_hdparm_identify(text: str) -> tuple[dict[str, str], AtaSecurity | None]:
    """``hdparm -I`` output -> ({model, serial, firmware}, security or None)."""
    ident: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        if sep and key in _HDPARM_FIELDS:
            cleaned = clean_str(value)
            if cleaned:
                ident[_HDPARM_FIELDS[key]] = cleaned
    return ident, _parse_security(text)


def _parse_security(text: str) -> AtaSecurity | None:
    lines = text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip().startswith("Security:"))
    except StopIteration:
        return None
    flags: dict[str, bool] = {}
    erase = enhanced = None
    for raw in lines[start + 1 :]:
        if raw and not raw[0].isspace():
            break  # next top-level section
        line = " ".join(raw.split())
        negated = line.startswith("not ")
        word = line[4:] if negated else line
        if word in ("supported", "enabled", "locked", "frozen"):
            flags[word] = not negated
        elif word.startswith("expired"):
            flags["expired"] = not negated
        elif word == "supported: enhanced erase":
            flags["enhanced_erase"] = not negated
        m = re.search(r"(\d+)\s*min for SECURITY ERASE UNIT", line)
        if m:
            erase = int(m.group(1))
        m = re.search(r"(\d+)\s*min for ENHANCED SECURITY ERASE UNIT", line)
        if m:
            enhanced = int(m.group(1))
    return AtaSecurity(
        supported=flags.get("supported", False),
        enabled=flags.get("enabled", False),
        locked=flags.get("locked", False),
        frozen=flags.get("frozen", False),
        expired=flags.get("expired", False),
        enhanced_erase=flags.get("enhanced_erase", False),
        erase_minutes=erase,
        enhanced_erase_minutes=enhanced,
    )


def smartctl_failure(data: dict[str, Any] | None, stdout: str, stderr: str) -> str | None:
    """Why a ``smartctl --json`` call gave no device data, or None if it did.

    smartctl's exit status is a bit mask: bits 0 and 1 mean the command line
    or the device open failed; higher bits report SMART findings and still
    come with valid data.
    """
    if data is None:
        return f"smartctl printed no JSON: {last_line(stderr) or last_line(stdout) or 'no output'}"
    info = data.get("smartctl")
    status = as_int(info.get("exit_status")) if isinstance(info, dict) else None
    if status is not None and status & 0x3:
        msgs = info.get("messages") if isinstance(info, dict) else None
        texts = [
            str(m.get("string"))
            for m in (msgs if isinstance(msgs, list) else [])
            if isinstance(m, dict) and m.get("string")
        ]
        return "smartctl: " + ("; ".join(texts) or f"exit status {status}")
    return None


# --------------------------------------------------------------------------- identify


class _Builder:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.notes: list[str] = []

    def set(self, key: str, value: object) -> None:
        """Set ``key`` unless a better source already did."""
        if value is None or value == "" or value == UNKNOWN:
            return
        self.values.setdefault(key, value)

    def override(self, key: str, value: object) -> None:
        if value is not None and value != "" and value != UNKNOWN:
            self.values[key] = value

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def detect_interface(sysfs: Sysfs, name: str) -> str:
    """Interface of kernel device ``name`` from its sysfs location."""
    disk = sysfs.parent_disk(name)
    if disk.startswith("loop"):
        return "loop"
    real = str(sysfs.real(disk))
    if re.fullmatch(r"nvme\d+(c\d+)?n\d+", disk) or "/nvme/" in real or "/nvme-subsys" in real:
        return "nvme"
    if re.fullmatch(r"sd[a-z]+", disk):
        # a SCSI disk, whatever carries it: a SAS HBA, AHCI (through libata), or
        # virtio-scsi, whose path passes through a virtio device but whose disk speaks
        # SCSI (mode pages, sdparm) like any other
        if "/usb" in real:
            return "other"  # USB bridges: no reliable secure erase pass-through
        vendor = clean_str(sysfs.read(disk, "device/vendor"))
        if "/ata" in real or (vendor or "").upper() == "ATA":
            return "sata"
        return "sas"
    if "/virtio" in real or re.fullmatch(r"vd[a-z]+", disk):
        return "virtio"
    return "other"


def identify(
    path: str | os.PathLike[str],
    *,
    sysfs_root: str | os.PathLike[str] = "/sys",
    udev_root: str | os.PathLike[str] = "/run/udev/data",
    use_tools: bool = True,
    timeout: float = TOOL_TIMEOUT,
) -> DeviceIdentity:
    """Identify the block device (or regular file) at ``path``.

    ``sysfs_root`` lets tests present a fake sysfs tree: when ``path`` does not
    exist, its basename is looked up there as a kernel name.  ``use_tools=False``
    reads sysfs only (fast, no external programs).
    """
    spath = os.fspath(path)
    sysfs = Sysfs(sysfs_root)
    try:
        st: os.stat_result | None = os.stat(spath)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputError(f"cannot examine {spath}: {exc.strerror}") from exc

    b = _Builder()
    if st is not None and stat.S_ISREG(st.st_mode):
        return _identify_file(spath, st)
    if st is not None and stat.S_ISBLK(st.st_mode):
        name = sysfs.name_for_devno(os.major(st.st_rdev), os.minor(st.st_rdev))
        if name is None:
            name = os.path.basename(os.path.realpath(spath))
            b.note(
                f"{spath}: no sysfs entry for device {os.major(st.st_rdev)}:"
                f"{os.minor(st.st_rdev)}; geometry unknown"
            )
    elif st is not None:
        raise InputError(f"{spath} is neither a block device nor a regular file")
    else:
        name = os.path.basename(spath)
        if not sysfs.exists(name):
            raise InputError(f"{spath}: no such file or block device")
        b.note(f"{spath} does not exist here; identified by kernel name {name} in {sysfs.root}")

    disk = sysfs.parent_disk(name)
    interface = detect_interface(sysfs, name)
    _from_sysfs(b, sysfs, name, disk, interface)
    if interface == "nvme":
        # The kernel's copy of Identify Controller: as good as nvme-cli's, so
        # smartctl is needed only when sysfs lacks it too.
        _from_sysfs_fallbacks(b, sysfs, disk)
    if use_tools:
        if interface == "nvme":
            _from_nvme_cli(b, spath, timeout)
        if interface in ("sata", "sas", "other") or (
            interface == "nvme" and "serial" not in b.values
        ):
            _from_smartctl(b, spath, timeout)
        if interface == "sata":
            _from_hdparm(b, spath, timeout)
    else:
        b.note("external tools not consulted (sysfs only)")
    _from_sysfs_fallbacks(b, sysfs, disk)
    b.set("serial", _udev_serial(Path(udev_root), sysfs.devno(disk)))

    if interface == "loop":
        b.note("loop devices have no serial number: confirm with the kernel name")
    elif interface == "virtio" and "serial" not in b.values:
        b.note("virtio disk reports no serial (set one with the hypervisor's serial= option)")
    for key in ("model", "serial", "firmware"):
        if key not in b.values and interface not in ("loop",):
            b.note(f"{key} unknown: no tool or sysfs attribute reported it")
    if b.values.get("capacity_bytes") is None:
        b.note("capacity unknown: no sysfs size attribute")
    _header_facts(b, sysfs, disk, interface)

    return DeviceIdentity(
        path=spath,
        kernel_name=name,
        is_block_device=True,
        interface=interface,
        model=b.values.get("model", UNKNOWN),
        serial=b.values.get("serial", UNKNOWN),
        firmware=b.values.get("firmware", UNKNOWN),
        capacity_bytes=b.values.get("capacity_bytes"),
        logical_sector=b.values.get("logical_sector"),
        physical_sector=b.values.get("physical_sector"),
        rotational=b.values.get("rotational"),
        write_cache=b.values.get("write_cache", UNKNOWN),
        devno=sysfs.devno(name),
        partition_of=disk if disk != name else None,
        backing_file=b.values.get("backing_file"),
        ata_security=b.values.get("ata_security"),
        nvme=b.values.get("nvme"),
        manufacturer=b.values.get("manufacturer", UNKNOWN),
        manufacturer_source=b.values.get("manufacturer_source"),
        host_link=b.values.get("host_link"),
        form_factor=b.values.get("form_factor"),
        warning_temp_c=b.values.get("warning_temp_c"),
        critical_temp_c=b.values.get("critical_temp_c"),
        notes=b.notes,
    )


def _header_facts(b: _Builder, sysfs: Sysfs, disk: str, interface: str) -> None:
    """Manufacturer and host link (tkbench.device.facts), from what was read."""
    if interface == "loop":
        return  # a loop device has no maker, link or form factor of its own
    pci_vendor = b.values.get("pci_vendor")
    if interface == "nvme" and pci_vendor is None:
        ctrl = facts.nvme_controller(sysfs, disk)
        if ctrl is not None:  # the kernel's copy: the controller's PCI function
            path = sysfs.root / "class" / "nvme" / ctrl / "device" / "vendor"
            with contextlib.suppress(OSError):
                pci_vendor = as_int(path.read_text().strip())
    scsi_vendor = b.values.get("scsi_vendor") or clean_str(sysfs.read(disk, "device/vendor"))
    name, source = facts.manufacturer(
        b.values.get("model"),
        scsi_vendor=scsi_vendor if interface in ("sata", "sas", "other") else None,
        pci_vendor=pci_vendor if interface == "nvme" else None,
    )
    b.set("manufacturer", name)
    b.set("manufacturer_source", source)
    b.set("host_link", facts.host_link(sysfs, disk, interface))


def _identify_file(spath: str, st: os.stat_result) -> DeviceIdentity:
    return DeviceIdentity(
        path=spath,
        kernel_name="",
        is_block_device=False,
        interface="other",
        model="regular file",
        capacity_bytes=st.st_size,
        notes=["regular file: no drive identity; results describe the file system beneath it"],
    )


def _from_sysfs(b: _Builder, sysfs: Sysfs, name: str, disk: str, interface: str) -> None:
    size = as_int(sysfs.read(name, "size"))
    if size is not None:
        b.set("capacity_bytes", size * 512)  # sysfs counts 512-byte units always
    b.set("logical_sector", as_int(sysfs.read(disk, "queue/logical_block_size")))
    b.set("physical_sector", as_int(sysfs.read(disk, "queue/physical_block_size")))
    rot = sysfs.read(disk, "queue/rotational")
    if rot in ("0", "1"):
        b.set("rotational", rot == "1")
    wc = sysfs.read(disk, "queue/write_cache")
    if wc in ("write back", "write through"):
        b.set("write_cache", wc)
    elif wc is None:
        b.note("write cache mode unknown: no queue/write_cache in sysfs")
    if interface == "loop":
        backing = sysfs.read(disk, "loop/backing_file")
        b.set("backing_file", backing)
        b.set("model", "Linux loop device")
        if rot == "1":
            b.note("loop devices report rotational=1 regardless of the backing storage")
    elif interface == "virtio":
        b.set("model", "virtio block device")


def _from_sysfs_fallbacks(b: _Builder, sysfs: Sysfs, disk: str) -> None:
    """Weakest sources, used only for what the tools did not say."""
    vendor = clean_str(sysfs.read(disk, "device/vendor"))
    model = clean_str(sysfs.read(disk, "device/model"))
    if model:
        if vendor and vendor.upper() not in ("ATA", "NVME") and not vendor.startswith("0x"):
            model = f"{vendor} {model}"
        b.set("model", model)
    b.set("serial", clean_str(sysfs.read(disk, "device/serial")))
    b.set("serial", clean_str(sysfs.read(disk, "serial")))  # virtio-blk
    b.set("serial", _vpd_serial(sysfs.read_bytes(disk, "device/vpd_pg80")))
    b.set("firmware", clean_str(sysfs.read(disk, "device/firmware_rev")))
    b.set("firmware", clean_str(sysfs.read(disk, "device/rev")))
    if disk.startswith("nvme"):
        # Native NVMe multipath: the head node hangs under nvme-subsysN, which
        # carries the controller's model/serial/firmware_rev itself.
        for key, attr in (("model", "model"), ("serial", "serial"), ("firmware", "firmware_rev")):
            b.set(key, clean_str(sysfs.read(disk, f"../{attr}")))


def _vpd_serial(data: bytes | None) -> str | None:
    """Unit Serial Number VPD page (0x80): 4-byte header, then ASCII."""
    if not data or len(data) < 5 or data[1] != 0x80:
        return None
    length = int.from_bytes(data[2:4], "big")
    return clean_str(data[4 : 4 + length].decode("ascii", errors="replace"))


def _udev_serial(udev_root: Path, devno: str | None) -> str | None:
    """``ID_SERIAL_SHORT`` from the udev database (spaces become underscores
    there, so it is only the last resort)."""
    if devno is None:
        return None
    try:
        text = (udev_root / f"b{devno}").read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("E:ID_SERIAL_SHORT="):
            return clean_str(line.partition("=")[2])
    return None


def _from_nvme_cli(b: _Builder, spath: str, timeout: float) -> None:
    done, why = try_run(["nvme", "id-ctrl", spath, "-o", "json"], timeout)
    if done is None:
        b.note(f"{why}: NVMe identity from sysfs/smartctl; format/sanitize support unknown")
        return
    ctrl = load_json_object(done.stdout) if done.returncode == 0 else None
    if ctrl is None:
        b.note(f"nvme id-ctrl failed: {last_line(done.stderr) or last_line(done.stdout)}")
        return
    b.override("model", clean_str(ctrl.get("mn")))
    b.override("serial", clean_str(ctrl.get("sn")))
    b.override("firmware", clean_str(ctrl.get("fr")))
    b.set("pci_vendor", as_int(ctrl.get("vid")))
    b.set("warning_temp_c", facts.kelvin(ctrl.get("wctemp")))
    b.set("critical_temp_c", facts.kelvin(ctrl.get("cctemp")))
    ns: dict[str, Any] | None = None
    done, why = try_run(["nvme", "id-ns", spath, "-o", "json"], timeout)
    if done is not None and done.returncode == 0:
        ns = load_json_object(done.stdout)
    if ns is None:
        b.note("nvme id-ns failed: LBA format in use unknown")
    caps = NvmeCaps.from_json(ctrl, ns)
    b.override("nvme", caps)
    if caps.lba_data_size and b.values.get("logical_sector") not in (None, caps.lba_data_size):
        b.note(
            f"sysfs logical block size {b.values.get('logical_sector')} differs from the"
            f" namespace's LBA format ({caps.lba_data_size} bytes)"
        )
    b.set("logical_sector", caps.lba_data_size)


def _from_smartctl(b: _Builder, spath: str, timeout: float) -> None:
    done, why = try_run(["smartctl", "--json", "-a", spath], timeout)
    if done is None:
        b.note(f"{why}: identity from sysfs only")
        return
    data = load_json_object(done.stdout)
    problem = smartctl_failure(data, done.stdout, done.stderr)
    if problem or data is None:
        b.note(problem or "smartctl gave no data")
        return
    b.set("model", clean_str(data.get("model_name")) or clean_str(data.get("scsi_model_name")))
    b.set("serial", clean_str(data.get("serial_number")))
    firmware = clean_str(data.get("firmware_version")) or clean_str(data.get("scsi_revision"))
    b.set("firmware", firmware)
    cap = data.get("user_capacity")
    if isinstance(cap, dict):
        b.set("capacity_bytes", as_int(cap.get("bytes")))
    b.set("logical_sector", as_int(data.get("logical_block_size")))
    b.set("physical_sector", as_int(data.get("physical_block_size")))
    rate = as_int(data.get("rotation_rate"))
    if rate is not None:
        b.set("rotational", rate != 0)
    b.set("form_factor", facts.form_factor(data))
    b.set("scsi_vendor", clean_str(data.get("scsi_vendor")))
    pci = data.get("nvme_pci_vendor")
    if isinstance(pci, dict):
        b.set("pci_vendor", as_int(pci.get("id")))
    temp = data.get("temperature")
    if isinstance(temp, dict):  # SCSI: the drive's trip temperature
        trip = as_int(temp.get("drive_trip"))
        b.set("warning_temp_c", float(trip) if trip else None)


def _from_hdparm(b: _Builder, spath: str, timeout: float) -> None:
    done, why = try_run(["hdparm", "-I", spath], timeout)
    if done is None:
        b.note(f"{why}: ATA security state unknown")
        return
    if done.returncode != 0:
        b.note(f"hdparm -I failed: {last_line(done.stderr) or last_line(done.stdout)}")
        return
    ident, security = parse_hdparm_identify(done.stdout)
    for key, value in ident.items():
        b.set(key, value)
    if security is None:
        b.note("hdparm -I shows no Security section: ATA Security Erase unavailable")
    else:
        b.set("ata_security", security)
