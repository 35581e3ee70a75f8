"""Facts of the report header the PTS asks for beside model and serial: who made the
drive, how it is attached (PCIe link or host bus adapter), its form factor, its
temperature limits.

Everything here is read at identification time from what the drive or the kernel
reports (Identify Controller, INQUIRY, smartctl's JSON, sysfs) and kept in the
target's identity as plain values; nothing is guessed beyond the conventions
named below, and what is not reported stays ``unknown`` or absent.

* **Manufacturer**: a brand word that leads the model string ("Samsung SSD 980",
  "WDC WDS500G2B0A", "Micron_7450"), or the two prefixes that are part numbers
  by convention (Seagate's ``ST`` + digits, Micron's ``MTFD``); else the SCSI
  INQUIRY vendor identification (T10 vendor ID; "ATA" there only says a SATA
  drive sits behind the SCSI layer); else the PCI vendor ID of an NVMe
  controller (Identify Controller ``VID``), which names the *controller's*
  vendor and is reported as such.
* **Host link**: for NVMe over PCIe the PCI function of the controller
  (``/sys/class/nvme/nvmeX/device``): current and maximum link speed and width;
  for SATA, SAS and other SCSI disks the host bus adapter's PCI function and its
  kernel driver (``ahci``, ``mpt3sas``, ...) and, for SATA, the negotiated link
  speed; for virtio the driver.  Loop devices, files and NBD exports have none.
* **Form factor**: smartctl's ``form_factor`` (ATA IDENTIFY word 168, SCSI VPD
  page B1h); NVMe reports none.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from tkbench.device._common import as_int, clean_str
from tkbench.device.sysfs import Sysfs

# PCI vendor IDs (assigned by the PCI-SIG) of companies that make SSDs or SSD
# controllers.  An ID missing here leaves the manufacturer unknown.
PCI_VENDORS = {
    0x025E: "Solidigm",
    0x1014: "IBM",
    0x10EC: "Realtek",
    0x1179: "Toshiba",
    0x126F: "Silicon Motion",
    0x1344: "Micron",
    0x144D: "Samsung",
    0x15B7: "SanDisk",
    0x1987: "Phison",
    0x1B36: "Red Hat (QEMU emulated controller)",
    0x1B4B: "Marvell",
    0x1B96: "Western Digital",
    0x1BB1: "Seagate",
    0x1C58: "HGST",
    0x1C5C: "SK hynix",
    0x1CC1: "ADATA",
    0x1D0F: "Amazon",
    0x1E0F: "KIOXIA",
    0x1E4B: "MAXIO",
    0x2646: "Kingston",
    0x8086: "Intel",
}

# Brand words that lead model strings (compared case-insensitively with the first
# word of the model, split at spaces, "_" and "-").
BRANDS = {
    "adata": "ADATA",
    "corsair": "Corsair",
    "crucial": "Crucial",
    "hgst": "HGST",
    "hitachi": "Hitachi",
    "intel": "Intel",
    "kingston": "Kingston",
    "kioxia": "KIOXIA",
    "lenovo": "Lenovo",
    "liteon": "Lite-On",
    "micron": "Micron",
    "plextor": "Plextor",
    "qemu": "QEMU (emulated drive)",
    "samsung": "Samsung",
    "sandisk": "SanDisk",
    "seagate": "Seagate",
    "skhynix": "SK hynix",
    "solidigm": "Solidigm",
    "toshiba": "Toshiba",
    "transcend": "Transcend",
    "wd": "Western Digital",
    "wdc": "Western Digital",
}
# part-number prefixes that name their maker by convention
PART_PREFIXES = (
    (re.compile(r"ST\d"), "Seagate"),  # ST4000NM0035
    (re.compile(r"MTFD", re.IGNORECASE), "Micron"),  # MTFDDAK960TDS
)

_PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_NVME_CTRL = re.compile(r"nvme\d+")


# --------------------------------------------------------------------------- manufacturer


def brand_of_model(model: str | None) -> str | None:
    """The maker a model string names by its first word or part-number prefix."""
    text = (model or "").strip()
    if not text or text == "unknown":
        return None
    if re.match(r"sk[ _-]?hynix", text, re.IGNORECASE):
        return "SK hynix"
    first = re.split(r"[\s_-]+", text, maxsplit=1)[0].lower()
    if first in BRANDS:
        return BRANDS[first]
    for pattern, name in PART_PREFIXES:
        if pattern.match(text):
            return name
    return None


def manufacturer(
    model: str | None,
    *,
    scsi_vendor: str | None = None,
    pci_vendor: int | None = None,
) -> tuple[str, str]:
    """(manufacturer, where it comes from); ``("unknown", why)`` when nothing says."""
    brand = brand_of_model(model)
    if brand is not None:
        return brand, "the model name"
    vendor = clean_str(scsi_vendor)
    if vendor and vendor.upper() not in ("ATA", "NVME"):
        return BRANDS.get(vendor.lower(), vendor), "the SCSI INQUIRY vendor identification"
    if pci_vendor is not None:
        name = PCI_VENDORS.get(pci_vendor)
        if name is not None:
            return name, f"the NVMe controller's PCI vendor ID {pci_vendor:#06x}"
        return "unknown", f"PCI vendor ID {pci_vendor:#06x} is not in tkbench's table"
    return "unknown", "neither the model name nor the drive's identify data name a maker"


# --------------------------------------------------------------------------- host link


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip() or None
    except OSError:
        return None


def _driver(path: Path) -> str | None:
    try:
        return os.path.basename(os.readlink(path / "driver"))
    except OSError:
        return None


def _pcie(pci: Path) -> dict[str, Any]:
    """Link speed and width of a PCI function (absent on conventional PCI)."""
    out: dict[str, Any] = {}
    for key in ("current_link_speed", "max_link_speed"):
        value = _read(pci / key)
        if value and not value.lower().startswith("unknown"):
            out[key] = value
    for key in ("current_link_width", "max_link_width"):
        width = as_int(_read(pci / key))
        if width:
            out[key] = width
    return out


def _pci_ancestor(path: Path) -> Path | None:
    """The nearest PCI function above a device directory."""
    for parent in (path, *path.parents):
        if _PCI_ADDRESS.fullmatch(parent.name):
            return parent
    return None


def nvme_controller(sysfs: Sysfs, disk: str) -> str | None:
    """The controller (``nvme0``) of namespace ``disk``: its ``device`` link, or for a
    native-multipath head node the first controller of its subsystem."""
    try:
        ctrl = (sysfs.block_dir(disk) / "device").resolve(strict=True)
        if _NVME_CTRL.fullmatch(ctrl.name):
            return ctrl.name
    except OSError:
        pass
    subsys = sysfs.real(disk).parent
    try:
        names = sorted(p.name for p in subsys.iterdir() if _NVME_CTRL.fullmatch(p.name))
    except OSError:
        return None
    return names[0] if names else None


def host_link(sysfs: Sysfs, disk: str, interface: str) -> dict[str, Any] | None:
    """How the drive is attached (see the module doc); None where nothing applies."""
    if interface == "loop":
        return None
    if interface == "nvme":
        return _nvme_link(sysfs, disk)
    real = sysfs.real(disk)
    pci = _pci_ancestor(real)
    if interface == "virtio":
        return {
            "kind": "virtio",
            "driver": _driver(sysfs.block_dir(disk) / "device") or "unknown",
            **({"pci_address": pci.name} if pci else {}),
        }
    out: dict[str, Any] = {"kind": "hba"}
    if pci is not None:
        out["pci_address"] = pci.name
        out["driver"] = _driver(pci) or "unknown"
        out.update({f"hba_{k}": v for k, v in _pcie(pci).items()})
    else:
        out["driver"] = "unknown"
    if "/usb" in str(real):
        out["bus"] = "usb"
    if interface == "sata":
        speed = _sata_speed(real)
        if speed:
            out["sata_speed"] = speed
    return out


def _nvme_link(sysfs: Sysfs, disk: str) -> dict[str, Any] | None:
    ctrl = nvme_controller(sysfs, disk)
    if ctrl is None:
        return {"kind": "nvme", "transport": "unknown"}
    cdir = sysfs.root / "class" / "nvme" / ctrl
    if not cdir.exists():
        cdir = (sysfs.block_dir(disk) / "device").resolve()
    transport = (_read(cdir / "transport") or "pcie").lower()
    out: dict[str, Any] = {"kind": "nvme", "controller": ctrl, "transport": transport}
    if transport != "pcie":
        return out  # NVMe over TCP, RDMA, FC or the loop target: no PCIe link
    try:
        pci = (cdir / "device").resolve(strict=True)
    except OSError:
        return out
    out["pci_address"] = pci.name
    driver = _driver(pci)
    if driver:
        out["driver"] = driver
    out.update(_pcie(pci))
    return out


def _sata_speed(real: Path) -> str | None:
    """The negotiated SATA link speed (``ataN/linkN/ata_link/linkN/sata_spd``)."""
    for parent in real.parents:
        if re.fullmatch(r"ata\d+", parent.name):
            for spd in sorted(parent.glob("link*/ata_link/link*/sata_spd")):
                value = _read(spd)
                if value and value.lower() != "<unknown>":
                    return value
            return None
    return None


def link_text(link: Any) -> str:
    """A host link (as :func:`host_link` made it) in words."""
    if not isinstance(link, dict):
        return "not applicable"
    kind = link.get("kind")
    where = f" at PCI {link['pci_address']}" if link.get("pci_address") else ""
    if kind == "nvme":
        transport = str(link.get("transport", "unknown"))
        if transport == "unknown":
            return "NVMe; its controller was not found in sysfs"
        if transport != "pcie":
            return f"NVMe over {transport.upper()} (no PCIe link)"
        cur, width = link.get("current_link_speed"), link.get("current_link_width")
        if not cur or not width:
            return f"PCIe{where}: link speed and width not reported"
        text = f"PCIe {cur} x{width}"
        top, top_w = link.get("max_link_speed"), link.get("max_link_width")
        if top and top_w and (top != cur or top_w != width):
            text += f" (the device supports up to {top} x{top_w})"
        return text + where
    if kind == "virtio":
        return f"virtio, driver {link.get('driver', 'unknown')}{where}"
    parts = [f"host bus adapter driver {link.get('driver', 'unknown')}{where}"]
    if link.get("bus") == "usb":
        parts.append("over USB")
    if link.get("sata_speed"):
        parts.append(f"SATA link {link['sata_speed']}")
    if link.get("hba_current_link_speed") and link.get("hba_current_link_width"):
        parts.append(
            f"adapter on PCIe {link['hba_current_link_speed']} x{link['hba_current_link_width']}"
        )
    return ", ".join(parts)


# --------------------------------------------------------------------------- form factor, limits


def form_factor(smartctl: dict[str, Any] | None) -> str | None:
    """smartctl's ``form_factor.name`` ("2.5 inches", "M.2"), when the drive says."""
    ff = (smartctl or {}).get("form_factor")
    return clean_str(ff.get("name")) if isinstance(ff, dict) else None


def kelvin(value: object) -> float | None:
    """An NVMe temperature threshold (kelvin; 0: not reported) in °C."""
    k = as_int(value)
    return float(k - 273) if k else None
