"""Shared code of the FAKE drive tools in this directory (tests only).

This machine has no NVMe, SATA or SAS drive, so tkbench's purge, identify and
write-cache code is exercised against fake ``nvme``, ``hdparm``, ``sdparm``,
``sg_format``, ``sg_sanitize``, ``smartctl`` and ``blkdiscard`` programs.  They
touch no device: each appends its argv to ``$TKBENCH_FAKE_DIR/calls.jsonl``,
reads the scenario from ``config.json`` there, keeps drive state (password set,
sanitize progress, write cache on or off) in ``state.json``, and prints canned
output shaped like the real tools' (nvme-cli 2.x ``-o json`` and get-feature,
smartctl 7.x ``--json``, hdparm 9.6x ``-I`` and ``-W``, sdparm 1.12 ``--get``).
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# --------------------------------------------------------------------------- canned data

# nvme id-ctrl -o json (nvme-cli 2.3 key names; sn/mn/fr are space padded)
NVME_ID_CTRL: dict[str, Any] = {
    "vid": 5197,
    "ssvid": 5197,
    "sn": "S5GXNF0R912345F     ",
    "mn": "Samsung SSD 980 PRO 1TB                 ",
    "fr": "5B2QGXA7",
    "rab": 2,
    "ieee": 9528,
    "cmic": 0,
    "mdts": 9,
    "cntlid": 6,
    "ver": 66560,
    "rtd3r": 200000,
    "rtd3e": 2000000,
    "oaes": 768,
    "ctratt": 16,
    "rrls": 0,
    "cntrltype": 1,
    "fguid": "00000000-0000-0000-0000-000000000000",
    "crdt1": 0,
    "crdt2": 0,
    "crdt3": 0,
    "nvmsr": 0,
    "vwci": 0,
    "mec": 0,
    "oacs": 23,  # 0x17: security send/recv, Format NVM, FW download, NS mgmt
    "acl": 7,
    "aerl": 3,
    "frmw": 22,
    "lpa": 15,
    "elpe": 63,
    "npss": 4,
    "avscc": 1,
    "apsta": 1,
    "wctemp": 358,
    "cctemp": 358,
    "mtfa": 0,
    "hmpre": 0,
    "hmmin": 0,
    "tnvmcap": "1000204886016",
    "unvmcap": "0",
    "rpmbs": 0,
    "edstt": 35,
    "dsto": 1,
    "fwug": 0,
    "kas": 0,
    "hctma": 1,
    "mntmt": 356,
    "mxtmt": 358,
    "sanicap": 3,  # crypto erase + block erase
    "hmminds": 0,
    "hmmaxd": 0,
    "nsetidmax": 0,
    "endgidmax": 0,
    "anatt": 0,
    "anacap": 0,
    "anagrpmax": 0,
    "nanagrpid": 0,
    "pels": 0,
    "domainid": 0,
    "megcap": "0",
    "sqes": 102,
    "cqes": 68,
    "maxcmd": 0,
    "nn": 1,
    "oncs": 95,
    "fuses": 0,
    "fna": 5,  # bit 0 format all ns, bit 2 crypto erase supported
    "vwc": 7,
    "awun": 1023,
    "awupf": 0,
    "icsvscc": 1,
    "nwpc": 0,
    "acwu": 0,
    "ocfs": 0,
    "sgls": 0,
    "mnan": 0,
    "maxdna": "0",
    "maxcna": 0,
    "subnqn": "nqn.1994-11.com.samsung:nvme:980PRO:M.2:S5GXNF0R912345F",
    "ioccsz": 0,
    "iorcsz": 0,
    "icdoff": 0,
    "fcatt": 0,
    "msdbd": 0,
    "ofcs": 0,
    "psds": [
        {"max_power": 850, "flags": 0, "entry_lat": 0, "exit_lat": 0, "read_tput": 0,
         "read_lat": 0, "write_tput": 0, "write_lat": 0, "idle_power": 0, "idle_scale": 0,
         "active_power": 0, "active_power_work": 0, "active_scale": 0},
    ],
}  # fmt: skip

# nvme id-ns -o json (two LBA formats: 512 and 4096 bytes)
NVME_ID_NS: dict[str, Any] = {
    "nsze": 1953525168,
    "ncap": 1953525168,
    "nuse": 123456789,
    "nsfeat": 0,
    "nlbaf": 1,
    "flbas": 0,
    "mc": 0,
    "dpc": 0,
    "dps": 0,
    "nmic": 0,
    "rescap": 0,
    "fpi": 128,
    "dlfeat": 0,
    "nawun": 0,
    "nawupf": 0,
    "nacwu": 0,
    "nabsn": 0,
    "nabo": 0,
    "nabspf": 0,
    "noiob": 0,
    "nvmcap": "1000204886016",
    "nsattr": 0,
    "nvmsetid": 0,
    "mssrl": 0,
    "mcl": 0,
    "msrc": 0,
    "nulbaf": 0,
    "anagrpid": 0,
    "endgid": 0,
    "eui64": "002538b911b12345",
    "nguid": "00000000000000000000000000000000",
    "lbafs": [{"ms": 0, "ds": 9, "rp": 0}, {"ms": 0, "ds": 12, "rp": 0}],
}

# nvme smart-log -o json (nvme-cli 2.3: temperature in kelvin, 128-bit counters as strings)
NVME_SMART_LOG: dict[str, Any] = {
    "critical_warning": 0,
    "temperature": 309,
    "avail_spare": 100,
    "spare_thresh": 10,
    "percent_used": 3,
    "endurance_grp_critical_warning_summary": 0,
    "data_units_read": "48125533",
    "data_units_written": "61240718",
    "host_read_commands": "612345678",
    "host_write_commands": "987654321",
    "controller_busy_time": "1234",
    "power_cycles": "321",
    "power_on_hours": "4321",
    "unsafe_shutdowns": "25",
    "media_errors": "0",
    "num_err_log_entries": "12",
    "warning_temp_time": 0,
    "critical_comp_time": 0,
    "temperature_sensor_1": 309,
    "temperature_sensor_2": 314,
    "thm_temp1_trans_count": 0,
    "thm_temp2_trans_count": 0,
    "thm_temp1_total_time": 0,
    "thm_temp2_total_time": 0,
}

SANITIZE_STATUS_TEXT = {
    0: "NVM Subsystem has never been sanitized.",
    1: "Most Recent Sanitize Command Completed Successfully.",
    2: "Sanitize in Progress.",
    3: "Most Recent Sanitize Command Failed.",
    4: "Most Recent Sanitize Command (No-Deallocate After Sanitize) Completed Successfully.",
}

SMARTCTL_COMMON: dict[str, Any] = {
    "json_format_version": [1, 0],
    "smartctl": {
        "version": [7, 3],
        "svn_revision": "5338",
        "platform_info": "x86_64-linux-6.1.0-fake",
        "build_info": "(local build)",
        "argv": [],
        "exit_status": 0,
    },
    "local_time": {"time_t": 1700000000, "asctime": "Tue Nov 14 22:13:20 2023 UTC"},
}

SMARTCTL_ATA: dict[str, Any] = {
    "device": {"name": "", "info_name": " [SAT]", "type": "sat", "protocol": "ATA"},
    "model_family": "Samsung based SSDs",
    "model_name": "Samsung SSD 860 EVO 500GB",
    "serial_number": "S3Z2NB0K812345X",
    "wwn": {"naa": 5, "oui": 9528, "id": 61933912345},
    "firmware_version": "RVT04B6Q",
    "user_capacity": {"blocks": 976773168, "bytes": 500107862016},
    "logical_block_size": 512,
    "physical_block_size": 512,
    "rotation_rate": 0,
    "form_factor": {"ata_value": 3, "name": "2.5 inches"},
    "trim": {"supported": True, "deterministic": True, "zeroed": True},
    "in_smartctl_database": True,
    "sata_version": {"string": "SATA 3.1", "value": 127},
    "smart_status": {"passed": True},
    "ata_smart_attributes": {
        "revision": 1,
        "table": [
            {"id": 5, "name": "Reallocated_Sector_Ct", "value": 100, "worst": 100,
             "thresh": 10, "raw": {"value": 0, "string": "0"}},
            {"id": 9, "name": "Power_On_Hours", "value": 95, "worst": 95, "thresh": 0,
             "raw": {"value": 20123, "string": "20123"}},
            {"id": 187, "name": "Reported_Uncorrect", "value": 100, "worst": 100,
             "thresh": 0, "raw": {"value": 2, "string": "2"}},
            {"id": 241, "name": "Total_LBAs_Written", "value": 99, "worst": 99, "thresh": 0,
             "raw": {"value": 81234567890, "string": "81234567890"}},
        ],
    },
    "power_on_time": {"hours": 20123},
    "power_cycle_count": 1432,
    "temperature": {"current": 31},
}  # fmt: skip

SMARTCTL_NVME: dict[str, Any] = {
    "device": {"name": "", "info_name": "", "type": "nvme", "protocol": "NVMe"},
    "model_name": "Samsung SSD 980 PRO 1TB",
    "serial_number": "S5GXNF0R912345F",
    "firmware_version": "5B2QGXA7",
    "nvme_total_capacity": 1000204886016,
    "user_capacity": {"blocks": 1953525168, "bytes": 1000204886016},
    "logical_block_size": 512,
    "smart_status": {"passed": True, "nvme": {"value": 0}},
    "nvme_smart_health_information_log": {
        "critical_warning": 0,
        "temperature": 36,
        "available_spare": 100,
        "available_spare_threshold": 10,
        "percentage_used": 3,
        "data_units_read": 48125533,
        "data_units_written": 61240718,
        "host_reads": 612345678,
        "host_writes": 987654321,
        "controller_busy_time": 1234,
        "power_cycles": 321,
        "power_on_hours": 4321,
        "unsafe_shutdowns": 25,
        "media_errors": 0,
        "num_err_log_entries": 12,
    },
    "temperature": {"current": 36},
    "power_cycle_count": 321,
    "power_on_time": {"hours": 4321},
}

SMARTCTL_SCSI: dict[str, Any] = {
    "device": {"name": "", "info_name": "", "type": "scsi", "protocol": "SCSI"},
    "scsi_vendor": "SEAGATE",
    "scsi_product": "XS800ME70004",
    "scsi_model_name": "SEAGATE XS800ME70004",
    "scsi_revision": "0004",
    "scsi_version": "SPC-5",
    "user_capacity": {"blocks": 1562824368, "bytes": 800166076416},
    "logical_block_size": 512,
    "physical_block_size": 4096,
    "rotation_rate": 0,
    "serial_number": "HLJ0A1B2",
    "smart_status": {"passed": True},
    "scsi_percentage_used_endurance_indicator": 1,
    "temperature": {"current": 29, "drive_trip": 70},
    "power_on_time": {"hours": 9876, "minutes": 5},
    "scsi_error_counter_log": {
        "read": {"errors_corrected_by_eccfast": 0, "total_uncorrected_errors": 1},
        "write": {"errors_corrected_by_eccfast": 0, "total_uncorrected_errors": 0},
        "verify": {"errors_corrected_by_eccfast": 0, "total_uncorrected_errors": 0},
    },
}

# --------------------------------------------------------------------------- plumbing


def fake_dir() -> Path:
    value = os.environ.get("TKBENCH_FAKE_DIR")
    if not value:
        sys.stderr.write("fake tool: TKBENCH_FAKE_DIR is not set\n")
        sys.exit(99)
    return Path(value)


def log_call(tool: str, argv: list[str]) -> None:
    with open(fake_dir() / "calls.jsonl", "a") as fh:
        fh.write(json.dumps({"tool": tool, "argv": [tool, *argv]}) + "\n")


def config(tool: str) -> dict[str, Any]:
    try:
        data = json.loads((fake_dir() / "config.json").read_text())
    except (OSError, ValueError):
        data = {}
    section = data.get(tool, {})
    return section if isinstance(section, dict) else {}


def load_state() -> dict[str, Any]:
    try:
        data = json.loads((fake_dir() / "state.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_state(state: dict[str, Any]) -> None:
    (fake_dir() / "state.json").write_text(json.dumps(state))


def merged(base: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out.update(overrides or {})
    return out


def emit_json(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


def maybe_fail(cfg: dict[str, Any], key: str) -> None:
    """Exit as configured in ``cfg["fail"][key]``: {"rc", "stderr", "stdout"}; first
    sleep ``cfg["delay"][key]`` seconds if configured (a drive that answers slowly)."""
    delay = (cfg.get("delay") or {}).get(key)
    if delay:
        time.sleep(float(delay))
    spec = (cfg.get("fail") or {}).get(key)
    if not spec:
        return
    sys.stdout.write(spec.get("stdout", ""))
    sys.stderr.write(spec.get("stderr", f"{key}: fake failure\n"))
    sys.exit(int(spec.get("rc", 1)))


def option(argv: list[str], name: str) -> str | None:
    """Value of ``--name=V`` or ``--name V``."""
    for i, arg in enumerate(argv):
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
    return None
