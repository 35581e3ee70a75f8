"""The records written to JSON through the one typed mechanism (:mod:`tkbench.typed`).

``tests/data/typed/`` holds what the hand-written ``to_dict`` methods these classes
had wrote for the samples below (made with that code, before the records were
converted); the mechanism must write exactly those bytes (field order, left-out
fields, number formats) and read them back to the same JSON.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tkbench.analysis.confidence import HistogramPhase, Level
from tkbench.analysis.repeat import UntilStanding, repeatability
from tkbench.analysis.steady import evaluate
from tkbench.cli.doctor import Finding
from tkbench.conformance.pts import Departure, Stated
from tkbench.device.cacherecord import CacheSession, WriteCacheRecord
from tkbench.device.health import HealthSnapshot
from tkbench.device.identify import AtaSecurity, DeviceIdentity, NvmeCaps
from tkbench.device.purge import PurgeRecord
from tkbench.device.safety import Refusal
from tkbench.errors import InputError, RunDirError
from tkbench.proc import Completed
from tkbench.rundir.jsonfile import dumps
from tkbench.typed import build, dump
from tkbench.workload.capture import Device

DATA = Path(__file__).parent / "data" / "typed"
RUN = Path(__file__).parent / "data" / "rundirs" / "file-a"

COMPLETED = Completed(["nvme", "format", "/dev/nvme0n1", "--ses=1"], 0, "Success\n", "", 12.3456789)
NVME = NvmeCaps(oacs=0x17, fna=0x4, sanicap=0x3, flbas=0x10, dps=0x9, lbaf_count=2,
                lba_data_size=4096)  # fmt: skip
IDENTITY = DeviceIdentity(
    path="/dev/nvme0n1", kernel_name="nvme0n1", is_block_device=True, interface="nvme",
    model="Samsung SSD 980 PRO 1TB", serial="S5GXNF0R912345F", firmware="5B2QGXA7",
    capacity_bytes=1000204886016, logical_sector=4096, physical_sector=4096,
    rotational=False, write_cache="write back", devno="259:0",
    ata_security=AtaSecurity(supported=True, frozen=True, erase_minutes=2),
    nvme=NVME, manufacturer="Samsung", manufacturer_source="model name",
    host_link={"current_link_speed": "16.0 GT/s PCIe", "current_link_width": 4},
    form_factor="M.2", warning_temp_c=82.0, critical_temp_c=85.0,
    notes=["smartctl not found: identity from sysfs only"],
)  # fmt: skip
SESSION = CacheSession(
    started=1700000000.25, before="enabled", original="enabled", changed=True,
    after="disabled", verified=True, restored="enabled", restore_verified=True,
    ended=1700000360.5, commands=[{"step": "set", **COMPLETED.to_dict()}], notes=["n"],
)  # fmt: skip

# (the class a reader builds, the sample, the stored file's name)
SAMPLES: list[tuple[type, Any, str]] = [
    (Completed, COMPLETED, "completed"),
    (AtaSecurity, AtaSecurity(supported=True, enabled=True, enhanced_erase_minutes=8), "ata"),
    (NvmeCaps, NVME, "nvmecaps"),
    (DeviceIdentity, IDENTITY, "identity"),
    (
        DeviceIdentity,
        DeviceIdentity(
            "/srv/f.img",
            "",
            False,
            "other",
            model="regular file",
            capacity_bytes=1 << 30,
            notes=["regular file"],
        ),
        "file",
    ),
    (
        HealthSnapshot,
        HealthSnapshot(
            "/dev/nvme0n1",
            "2026-01-02T03:04:05Z",
            "nvme smart-log",
            temperature_c=36.0,
            media_errors=0,
            percentage_used=3,
            data_units_written=10,
            bytes_written=5120000,
            raw={"temperature": 309},
            notes=[],
        ),
        "health",
    ),
    (
        PurgeRecord,
        PurgeRecord(
            "/dev/nvme0n1",
            "nvme",
            "auto",
            "nvme-format",
            True,
            commands=[COMPLETED.to_dict()],
            seconds=12.5,
            started_at="2026-01-02T03:04:05Z",
            notes=["kept LBA format 1"],
        ),
        "purge",
    ),
    (Refusal, Refusal("signature", "holds an ext4 filesystem", force_overrides=True), "refusal"),
    (CacheSession, SESSION, "session"),
    (CacheSession, CacheSession(started=1.0), "session-new"),
    (Finding, Finding("fio", True, "fio-3.36", fix="apt-get install fio", needed=True), "finding"),
    (Device, Device("/dev/sda2", "sda2", 1 << 30, 512, 2048 * 512), "capture-device"),
    (type(repeatability([1.0])), repeatability([100.0, 110.5, 95.25]), "repeatability"),
    (type(repeatability([1.0])), repeatability([42.0]), "repeatability-one"),
    (UntilStanding, UntilStanding(5.0, 2, 10, 4, 3.25, "4k 0/100"), "until"),
    (UntilStanding, UntilStanding(5.0, 2, 10, 1, None), "until-one"),
    (Departure, Departure("iops", "block sizes", "1024k, 512", "4k", "IOPS"), "departure"),
    (Departure, Departure(None, "purge", "a secure erase", "none"), "departure-run"),
    (Stated, Stated("iops", "active range", "100 %", "IOPS"), "stated"),
    (
        HistogramPhase,
        HistogramPhase(
            4096,
            0,
            1,
            32,
            600.0,
            "steady state reached",
            9,
            5.0,
            123456,
            205.76,
            4.86,
            120.5,
            (Level(99.0, 10.5, 100), Level(99.999, None, 1000010)),
            ((1000, 5), (2000, 7)),
            "clat",
        ),
        "histphase",
    ),
    (type(evaluate([1.0])), evaluate([10.0, 11.0, 10.0, 11.0, 10.0]), "verdict"),
]
IDS = [name for _, _, name in SAMPLES]
# written for people and programs but never read back by tkbench: their internal
# fields (a partition's start, the histogram's bins) are not in the JSON
WRITE_ONLY = {"capture-device", "histphase"}
READ = [s for s in SAMPLES if s[2] not in WRITE_ONLY]


def stored(name: str) -> str:
    return (DATA / f"{name}.json").read_text()


def writes_as_stored(record: Any, text: str) -> bool:
    return dumps(dump(record)) == text


@pytest.mark.parametrize(("cls", "record", "name"), SAMPLES, ids=IDS)
def test_the_mechanism_writes_what_the_hand_written_code_wrote(
    cls: type, record: Any, name: str
) -> None:
    assert dumps(dump(record)) == stored(name)
    assert dumps(record.to_dict()) == stored(name)  # what the callers of to_dict get


@pytest.mark.parametrize(("cls", "record", "name"), READ, ids=[s[2] for s in READ])
def test_a_stored_record_reads_back_to_the_same_json(cls: type, record: Any, name: str) -> None:
    text = stored(name)
    back = build(cls, json.loads(text), DATA / f"{name}.json")
    assert dumps(dump(back)) == text


def test_the_comparison_fails_on_a_broken_field_order() -> None:
    """The check above can fail: the same fields in another order, or a field
    renamed, are other bytes."""
    order = [(f.name, f.type, f) for f in dataclasses.fields(Refusal)]
    swapped = dataclasses.make_dataclass("Refusal", [order[1], order[0], *order[2:]], frozen=True)
    record = swapped(code="signature", message="holds an ext4 filesystem", force_overrides=True)
    assert not writes_as_stored(record, stored("refusal"))
    assert writes_as_stored(Refusal(**dataclasses.asdict(record)), stored("refusal"))
    broken = dataclasses.replace(IDENTITY, nvme=dataclasses.replace(NVME, lbaf_count=3))
    assert not writes_as_stored(broken, stored("identity"))


def test_write_cache_record_keeps_its_kind_and_schema_first() -> None:
    record = WriteCacheRecord("disabled", True, "/dev/nvme0n1", "nvme", "nvme-cli", "drive",
                              sessions=[SESSION])  # fmt: skip
    text = stored("write-cache")
    assert dumps(record.to_dict()) == text
    back = WriteCacheRecord.from_dict(json.loads(text), "write-cache.json")
    assert dumps(back.to_dict()) == text


def test_a_wrong_field_is_one_line_naming_the_file_and_the_field() -> None:
    data = json.loads(stored("purge"))
    data["seconds"] = "twelve"
    with pytest.raises(RunDirError) as err:
        PurgeRecord.from_dict(data, "purge.json")
    assert str(err.value) == "purge.json: field seconds is a string, expected number"
    data = json.loads(stored("identity"))
    data["nvme"]["oacs"] = 1.5
    with pytest.raises(InputError, match=r"^identity: field nvme\.oacs is a number, expected"):
        build(DeviceIdentity, data, "identity", error=InputError)
    data = json.loads(stored("session"))
    data["before"] = "off"
    with pytest.raises(RunDirError, match=r"field before is 'off', not one of enabled, disabled"):
        CacheSession.from_dict(data, "write-cache.json")


def test_a_wrong_field_in_write_cache_json_exits_2_through_show(tmp_path: Path) -> None:
    """``tkbench show`` of a run whose write-cache.json has a wrong field: one line
    naming the file and the field, exit 2, no traceback."""
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    record = json.loads(stored("write-cache"))
    record["sessions"][0]["verified"] = "yes"
    (run / "write-cache.json").write_text(json.dumps(record))
    done = subprocess.run(
        [sys.executable, "-m", "tkbench", "show", str(run)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert f"{run / 'write-cache.json'}: field sessions[0].verified is a string" in lines[0]
