"""The drive's temperature and its thermal counters, read between rounds.

NVMe: ``nvme smart-log -o json`` (smartctl when nvme-cli is missing or fails): the
composite temperature, the critical warning byte (bit 1: a temperature at or above
an over-temperature threshold or below an under-temperature one), and the
cumulative counters the drive keeps — minutes above its warning composite
temperature (WCTEMP) and above its critical one (CCTEMP), and the transitions into
and seconds spent in host-controlled thermal management levels 1 and 2 (the
drive's throttling).  SATA and SAS: ``smartctl --json -A`` (attributes only, the
quickest query): the current temperature.

A reading is one short query with its own timeout; it never raises.  What the drive
does not report stays None.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from tkbench.device._common import as_int, last_line, load_json_object, try_run
from tkbench.device.health import _kelvin_or_celsius
from tkbench.device.identify import smartctl_failure
from tkbench.units import timestamp

TIMEOUT = 2.0  # seconds a reading may take (nvme smart-log takes milliseconds)

# NVMe SMART / Health Information (log 02h) counters, as nvme-cli's JSON names them
NVME_COUNTERS = {
    "warning_temp_time": "warning_minutes",  # minutes above WCTEMP
    "critical_comp_time": "critical_minutes",  # minutes above CCTEMP
    "thm_temp1_trans_count": "tmt1_transitions",  # into thermal management level 1
    "thm_temp2_trans_count": "tmt2_transitions",
    "thm_temp1_total_time": "tmt1_seconds",  # seconds in thermal management level 1
    "thm_temp2_total_time": "tmt2_seconds",
}


@dataclass(frozen=True)
class ThermalReading:
    """One reading: the temperature, the critical warning byte, the cumulative counters."""

    source: str  # "nvme smart-log" | "smartctl"
    temperature_c: float | None = None
    critical_warning: int | None = None
    counters: dict[str, int] = field(default_factory=dict)  # NVME_COUNTERS' names
    taken_at: str = ""  # ISO 8601, UTC


def _critical_warning(value: Any) -> int | None:
    """nvme-cli 2.x prints the byte; later versions an object with its ``value``."""
    if isinstance(value, dict):
        value = value.get("value")
    return as_int(value)


def parse_nvme(data: dict[str, Any], source: str = "nvme smart-log") -> ThermalReading:
    """A reading from ``nvme smart-log -o json`` (or smartctl's NVMe health log)."""
    counters = {}
    for key, name in NVME_COUNTERS.items():
        n = as_int(data.get(key))
        if n is not None:
            counters[name] = n
    return ThermalReading(
        source=source,
        temperature_c=_kelvin_or_celsius(data.get("temperature")),
        critical_warning=_critical_warning(data.get("critical_warning")),
        counters=counters,
        taken_at=timestamp(),
    )


def parse_smartctl(data: dict[str, Any]) -> ThermalReading:
    """A reading from ``smartctl --json`` output (NVMe, ATA or SCSI)."""
    log = data.get("nvme_smart_health_information_log")
    if isinstance(log, dict):
        reading = parse_nvme(log, "smartctl")  # smartctl prints Celsius there
    else:
        reading = ThermalReading(source="smartctl", taken_at=timestamp())
    temp = data.get("temperature")
    current = as_int(temp.get("current")) if isinstance(temp, dict) else None
    if current is not None:
        return ThermalReading(
            source="smartctl",
            temperature_c=float(current),
            critical_warning=reading.critical_warning,
            counters=reading.counters,
            taken_at=reading.taken_at,
        )
    return reading


def read(
    path: str | os.PathLike[str], interface: str, timeout: float = TIMEOUT
) -> tuple[ThermalReading | None, str]:
    """(a reading or None, why there is none); never raises."""
    spath = os.fspath(path)
    why = ""
    if interface == "nvme":
        done, missing = try_run(["nvme", "smart-log", spath, "-o", "json"], timeout)
        if done is not None and done.returncode == 0:
            data = load_json_object(done.stdout)
            if data is not None:
                return parse_nvme(data), ""
            why = "nvme smart-log printed no JSON"
        elif done is not None:
            why = f"nvme smart-log failed: {last_line(done.stderr) or done.returncode}"
        else:
            why = str(missing)
    done, missing = try_run(["smartctl", "--json", "-A", spath], timeout)
    if done is None:
        return None, "; ".join(w for w in (why, str(missing)) if w)
    data = load_json_object(done.stdout)
    problem = smartctl_failure(data, done.stdout, done.stderr)
    if problem or data is None:
        return None, "; ".join(w for w in (why, problem or "smartctl gave no data") if w)
    reading = parse_smartctl(data)
    if reading.temperature_c is None:
        return None, "; ".join(w for w in (why, "smartctl reports no temperature") if w)
    return reading, ""
