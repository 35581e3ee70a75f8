"""Drive health snapshot taken before and after each test.

NVMe: ``nvme smart-log -o json`` (smartctl when nvme-cli is missing); SATA,
SAS and others: ``smartctl --json -a``.  Every field is optional: a device
without SMART data (loop, virtio, a regular file) gives a snapshot with notes
only.  Taking a snapshot never raises because of a tool.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from tkbench.device._common import as_int, last_line, load_json_object, try_run
from tkbench.device.identify import TOOL_TIMEOUT, detect_interface, smartctl_failure
from tkbench.device.sysfs import Sysfs
from tkbench.typed import Typed
from tkbench.units import timestamp

NVME_DATA_UNIT = 512 * 1000  # NVMe "data units" are thousands of 512-byte units


@dataclass(frozen=True)
class HealthSnapshot(Typed):
    """A drive's health as read once (its fields, in order, are its JSON)."""

    device: str
    taken_at: str  # ISO 8601, UTC
    source: str  # "nvme smart-log", "smartctl" or "none"
    temperature_c: float | None = None
    media_errors: int | None = None
    percentage_used: int | None = None
    data_units_written: int | None = None  # NVMe units (512,000 bytes)
    bytes_written: int | None = None
    power_on_hours: int | None = None
    critical_warning: int | None = None
    available_spare: int | None = None
    raw: dict[str, Any] | None = None  # the tool's JSON as printed
    notes: list[str] = field(default_factory=list)


def _now() -> str:
    return timestamp()


def _kelvin_or_celsius(value: object) -> float | None:
    """nvme-cli 2.x prints the composite temperature in kelvin; later versions
    may print Celsius.  No drive runs above 200 °C, so larger values are K."""
    t = as_int(value)
    if t is None:
        return None
    return float(t - 273) if t > 200 else float(t)


def parse_nvme_smart_log(data: dict[str, Any]) -> dict[str, Any]:
    """Fields of ``nvme smart-log -o json`` (keys as nvme-cli 2.x prints them)."""
    duw = as_int(data.get("data_units_written"))
    return {
        "temperature_c": _kelvin_or_celsius(data.get("temperature")),
        "media_errors": as_int(data.get("media_errors")),
        "percentage_used": as_int(data.get("percent_used", data.get("percentage_used"))),
        "data_units_written": duw,
        "bytes_written": duw * NVME_DATA_UNIT if duw is not None else None,
        "power_on_hours": as_int(data.get("power_on_hours")),
        "critical_warning": as_int(data.get("critical_warning")),
        "available_spare": as_int(data.get("avail_spare", data.get("available_spare"))),
    }


def parse_smartctl_health(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Health fields of ``smartctl --json -a`` for NVMe, ATA and SCSI devices."""
    out: dict[str, Any] = {}
    notes: list[str] = []
    temp = data.get("temperature")
    if isinstance(temp, dict) and as_int(temp.get("current")) is not None:
        out["temperature_c"] = float(as_int(temp.get("current")) or 0)
    pot = data.get("power_on_time")
    if isinstance(pot, dict):
        out["power_on_hours"] = as_int(pot.get("hours"))
    nvme = data.get("nvme_smart_health_information_log")
    if isinstance(nvme, dict):
        duw = as_int(nvme.get("data_units_written"))
        out.update(
            media_errors=as_int(nvme.get("media_errors")),
            percentage_used=as_int(nvme.get("percentage_used")),
            data_units_written=duw,
            bytes_written=duw * NVME_DATA_UNIT if duw is not None else None,
            critical_warning=as_int(nvme.get("critical_warning")),
            available_spare=as_int(nvme.get("available_spare")),
        )
        if "temperature_c" not in out and as_int(nvme.get("temperature")) is not None:
            out["temperature_c"] = float(as_int(nvme.get("temperature")) or 0)
        return out, notes
    attrs = data.get("ata_smart_attributes")
    if isinstance(attrs, dict) and isinstance(attrs.get("table"), list):
        by_id = {
            as_int(a.get("id")): a for a in attrs["table"] if isinstance(a, dict) and "id" in a
        }

        def raw(attr_id: int) -> int | None:
            entry = by_id.get(attr_id)
            value = entry.get("raw") if entry else None
            return as_int(value.get("value")) if isinstance(value, dict) else None

        out["media_errors"] = raw(187)  # Reported_Uncorrect
        lbas = raw(241)  # Total_LBAs_Written (vendor units; 512-byte LBAs on most)
        if lbas is not None:
            size = as_int(data.get("logical_block_size")) or 512
            out["bytes_written"] = lbas * size
            notes.append("bytes_written from ATA attribute 241, assuming LBA units")
        notes.append("ATA: media_errors is attribute 187 (Reported_Uncorrect) when present")
    pct = as_int(data.get("scsi_percentage_used_endurance_indicator"))
    if pct is not None:
        out["percentage_used"] = pct
    ecl = data.get("scsi_error_counter_log")
    if isinstance(ecl, dict):
        total = 0
        seen = False
        for direction in ("read", "write", "verify"):
            d = ecl.get(direction)
            n = as_int(d.get("total_uncorrected_errors")) if isinstance(d, dict) else None
            if n is not None:
                total += n
                seen = True
        if seen:
            out["media_errors"] = total
    return out, notes


def health(
    path: str | os.PathLike[str],
    *,
    interface: str | None = None,
    sysfs_root: str | os.PathLike[str] = "/sys",
    timeout: float = TOOL_TIMEOUT,
) -> HealthSnapshot:
    """Take a health snapshot of ``path`` (see module doc)."""
    spath = os.fspath(path)
    taken = _now()
    if interface is None:
        interface = _guess_interface(spath, Sysfs(sysfs_root))
    if interface in ("loop", "virtio", "file"):
        what = "a regular file" if interface == "file" else f"{interface} devices"
        return HealthSnapshot(spath, taken, "none", notes=[f"no SMART data for {what}"])
    notes: list[str] = []
    if interface == "nvme":
        done, why = try_run(["nvme", "smart-log", spath, "-o", "json"], timeout)
        if done is not None and done.returncode == 0:
            data = load_json_object(done.stdout)
            if data is not None:
                return HealthSnapshot(
                    spath, taken, "nvme smart-log", raw=data, **parse_nvme_smart_log(data)
                )
            notes.append("nvme smart-log printed no JSON")
        elif done is not None:
            notes.append(f"nvme smart-log failed: {last_line(done.stderr) or done.returncode}")
        else:
            notes.append(str(why))
    done, why = try_run(["smartctl", "--json", "-a", spath], timeout)
    if done is None:
        notes.append(str(why))
        return HealthSnapshot(spath, taken, "none", notes=notes)
    data = load_json_object(done.stdout)
    problem = smartctl_failure(data, done.stdout, done.stderr)
    if problem or data is None:
        notes.append(problem or "smartctl gave no data")
        return HealthSnapshot(spath, taken, "none", raw=data, notes=notes)
    values, more = parse_smartctl_health(data)
    return HealthSnapshot(spath, taken, "smartctl", raw=data, notes=notes + more, **values)


def _guess_interface(spath: str, sysfs: Sysfs) -> str:
    if os.path.isfile(spath):
        return "file"
    name = sysfs.name_for_path(spath)
    if name is None:
        base = os.path.basename(spath)
        name = base if sysfs.exists(base) else None
    return detect_interface(sysfs, name) if name else "other"
