"""tkbench against real drivers and real tools: NVMe, SATA (AHCI), SAS (MegaRAID),
SCSI on virtio-scsi and virtio-blk disks in one QEMU guest (tests/_vm.py).

One guest serves the module; each disk is a 64 MiB sparse image behind its own
controller, with its own serial.  These are the paths no fake can show: the
tools' real output, udev, the kernel's in-use checks, a 9p run directory.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from typing import Any

import pytest

from tests._vm import DISKS, Guest, Result

pytestmark = [pytest.mark.vm, pytest.mark.root, pytest.mark.slow]

SERIAL = {d.kind: d.serial for d in DISKS}
# a run as small as a run can be: one IOPS point of 0.2 s, two rounds
TINY = [
    "--profile", "quick", "--tests", "iops", "--no-history", "--no-report",
    "--set", "tests.iops.point_runtime=0.2s",
    "--set", 'tests.iops.mixes=["0/100"]',
    "--set", 'tests.iops.block_sizes=["4k"]',
    "--set", 'tests.iops.tracking=["iops 4k 0/100"]',
    "--set", "tests.iops.rounds.max=2",
    "--set", "tests.iops.rounds.window=2",
    "--set", "precondition.capacity_multiple=1.0",
]  # fmt: skip


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guest]:
    g = Guest(tmp_path_factory.mktemp("vm"))
    try:
        g.start()
        yield g
    finally:
        g.stop()


@pytest.fixture(scope="module")
def listed(guest: Guest) -> dict[str, dict[str, Any]]:
    """``tkbench devices --json`` in the guest, by device kind (found by serial)."""
    res = ok(guest.tkbench("devices", "--json"))
    by_serial = {d["serial"]: d for d in json.loads(res.stdout)}
    return {kind: by_serial[serial] for kind, serial in SERIAL.items()}


def path(listed: dict[str, dict[str, Any]], kind: str) -> str:
    return str(listed[kind]["path"])


def ok(res: Result, code: int = 0) -> Result:
    """``res`` when it exited ``code``; else the test fails with all it printed."""
    if res.returncode != code:
        pytest.fail(f"expected exit {code}:\n{res}", pytrace=False)
    return res


def sha(guest: Guest, dev: str, mib: int = 64) -> str:
    return ok(guest.sh(f"head -c {mib}M {dev} | sha256sum")).stdout.split()[0]


# --------------------------------------------------------------------------- identity


def test_devices_names_every_controller_with_model_serial_firmware(
    listed: dict[str, dict[str, Any]],
) -> None:
    interfaces = {kind: d["interface"] for kind, d in listed.items()}
    # vscsi: a SCSI disk on virtio-scsi is SCSI, not a virtio block device (defect c)
    assert interfaces == {
        "nvme": "nvme",
        "sata": "sata",
        "vscsi": "sas",
        "megasas": "sas",
        "vblk": "virtio",
    }
    assert listed["nvme"]["model"] == "QEMU NVMe Ctrl"
    assert listed["sata"]["model"] == "QEMU HARDDISK"
    for kind in ("vscsi", "megasas"):
        assert "QEMU HARDDISK" in listed[kind]["model"]
    for kind, d in listed.items():
        assert d["serial"] == SERIAL[kind]
        assert d["confirm_id"] == SERIAL[kind]
        if kind != "vblk":  # virtio-blk reports no firmware revision
            assert d["firmware"] not in ("", "unknown"), d
        assert d["status"] == "ok", d


def test_wrong_confirm_is_refused_and_nothing_is_written(
    guest: Guest, listed: dict[str, dict[str, Any]]
) -> None:
    dev = path(listed, "sata")
    ok(guest.sh(f"head -c 4M /dev/urandom | dd of={dev} bs=1M oflag=direct status=none"))
    before = sha(guest, dev)
    res = guest.tkbench(
        "run", *TINY, "--target", dev, "--confirm", "WRONG", "--out", "/tmp/r-no", timeout=40
    )
    ok(res, 3)
    assert "does not match" in res.stderr
    assert sha(guest, dev) == before


# --------------------------------------------------------------------------- runs


def run_record(guest: Guest, out: str) -> dict[str, Any]:
    """The files of a run directory the tests read, as JSON (from the guest)."""
    script = (
        "import json, pathlib, sys\n"
        "r = pathlib.Path(sys.argv[1])\n"
        "out = {}\n"
        "for p in sorted(r.rglob('*.json')):\n"
        "    try: out[str(p.relative_to(r))] = json.loads(p.read_text())\n"
        "    except ValueError: pass\n"
        "out['events.log'] = (r / 'events.log').read_text()\n"
        "print(json.dumps(out))\n"
    )
    res = ok(guest.sh(f"python3 -c {shlex.quote(script)} {out}"))
    data: dict[str, Any] = json.loads(res.stdout)
    return data


def cache_state(guest: Guest, kind: str, dev: str) -> str:
    """The write cache as the drive's own tool reads it now."""
    argv = {
        "nvme": f"nvme get-feature {dev} --feature-id=6 --namespace-id=4294967295",
        "sata": f"hdparm -W {dev}",
        "vscsi": f"sdparm --quiet --get=WCE {dev}",
        "megasas": f"sdparm --quiet --get=WCE {dev}",
    }[kind]
    return guest.sh(argv).stdout.strip()


@pytest.mark.parametrize("kind", ["nvme", "sata", "megasas", "vscsi"])
def test_run_disables_the_write_cache_purges_and_restores(
    guest: Guest, listed: dict[str, dict[str, Any]], kind: str
) -> None:
    dev = path(listed, kind)
    before = cache_state(guest, kind, dev)
    out = f"/tmp/r-wc-{kind}"
    res = guest.tkbench(
        "run", *TINY, "--set", "workload.write_cache=disabled",
        "--target", dev, "--confirm", SERIAL[kind], "--out", out, timeout=240,
    )  # fmt: skip
    ok(res)
    rec = run_record(guest, out)
    wc = rec["write-cache.json"]
    assert wc["applies"] is True and wc["requested"] == "disabled"
    session = wc["sessions"][-1]
    assert session["before"] == "enabled"
    assert session["after"] == "disabled" and session["verified"] is True
    assert session["restored"] == "enabled" and session["restore_verified"] is True
    assert cache_state(guest, kind, dev) == before
    purge = rec["tests/iops/purge.json"]
    # chosen from what the drive offers: QEMU's NVMe controller has Format NVM and no
    # Sanitize (SANICAP 0); its SCSI disks take FORMAT UNIT; its ATA disk has no
    # Security feature set, so only the labelled, non-compliant fallback is left
    method, compliant = {
        "nvme": ("nvme-format", True),
        "sata": ("blkdiscard", False),
        "megasas": ("scsi-format", True),
        "vscsi": ("scsi-format", True),
    }[kind]
    assert (purge["method"], purge["pts_compliant"]) == (method, compliant), purge
    assert rec["tests/iops/health-before.json"] and rec["tests/iops/health-after.json"]
    if not compliant:  # listed among the run's departures from the PTS
        show = ok(guest.tkbench("show", out))
        assert "not PTS-compliant" in show.stdout or "departure" in show.stdout.lower(), show
