"""Capture and replay in the QEMU guest (tests/_vm.py), whose kernel can trace.

One guest boot serves the module (the vm tests' one guest: tests/conftest.py):
``tkbench capture`` traces the NVMe disk while a known fio job runs on it, and its
reduction must give the job's block sizes, read percentage and random share within 2
points; the captured trace is then replayed natively (the iolog and job options of
tkbench.workload.fiojobs, made on the host) on the virtio-blk disk, and fio's own
counts must be the trace's; and ``tkbench run --profile rwsw --workload`` (shrunk to
sub-second rounds) runs the whole replay test on that disk, its report (rendered on
the host) holding the chapter "Your workload on this drive".
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import layout_text
from tests._vm import Disk, Guest, Result
from tkbench.workload import fiojobs, tkw

pytestmark = [pytest.mark.vm, pytest.mark.fio, pytest.mark.root, pytest.mark.slow]

DISKS = (Disk("nvme", "TKNVME0001"), Disk("vblk", "TKVBLK0001"))
CAPTURE_S = 45  # the job's 10 s and, on a loaded host, a slow start of fio in the guest
# the known job: 4 KiB random reads and writes 70/30 at queue depth 4 on the first
# half of the disk, 64 KiB sequential reads at depth 1 on the second half, at fixed
# rates so that the guest (software emulation) keeps up and blktrace drops nothing
JOB = """[global]
filename={dev}
direct=1
ioengine=libaio
time_based=1
runtime=10
[mix]
rw=randrw
rwmixread=70
bs=4k
iodepth=4
offset=0
size=32m
rate_iops=280,120
[stream]
rw=read
bs=64k
iodepth=1
offset=32m
size=32m
rate_iops=150
"""
# blktrace's per-CPU files appear once the kernel's trace is set up
WAIT_FOR_TRACE = """for i in $(seq 300); do
  for f in /dev/shm/tkbench-capture-*/trace.blktrace.* /tmp/tkbench-capture-*/trace.blktrace.*; do
    [ -e "$f" ] && exit 0
  done
  sleep 0.2
done
exit 1"""


def ok(res: Result, code: int = 0) -> Result:
    if res.returncode != code:
        pytest.fail(f"expected exit {code}:\n{res}", pytrace=False)
    return res


@pytest.fixture(scope="module")
def guest(vm_guest: Callable[[], Guest]) -> Guest:
    # the vm tests' one guest (tests/conftest.py), with DISKS among its disks
    g = vm_guest()
    assert {(d.kind, d.serial) for d in DISKS} <= {(d.kind, d.serial) for d in g.disks}
    return g


def by_serial(guest: Guest, link: str) -> str:
    return ok(guest.sh(f"readlink -f {shlex.quote(link)}")).stdout.strip()


def fio_counts(doc: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {
        job["jobname"]: {d: int(job[d]["total_ios"]) for d in ("read", "write")}
        for job in doc["jobs"]
    }


@pytest.fixture(scope="module")
def captured(guest: Guest) -> tuple[Path, dict[str, dict[str, int]]]:
    """The workload file of a capture of the known job on the NVMe disk, and fio's
    counts of what the job did."""
    share = guest.share
    (share / "job.fio").write_text(JOB.format(dev="/dev/nvme0n1"))
    out = share / "nvme.tkw"
    pid = guest.spawn_tkbench(
        "capture", "--device", "/dev/nvme0n1", "--duration", f"{CAPTURE_S}s", "--out", str(out)
    )
    started = time.monotonic()
    ok(guest.sh(WAIT_FOR_TRACE, timeout=60))
    job = ok(guest.sh(f"fio --output-format=json {share / 'job.fio'}", timeout=90))
    took = time.monotonic() - started
    if took > CAPTURE_S - 2:  # the job must lie inside the capture
        pytest.fail(f"the guest is too slow: its fio job ended {took:.0f} s after the "
                    f"{CAPTURE_S}-s capture began", pytrace=False)  # fmt: skip
    done = ok(guest.wait(pid, timeout=CAPTURE_S + 120))
    assert "workload:" in done.stderr
    doc = json.loads(job.stdout[job.stdout.index("{") :])
    return out, fio_counts(doc)


def test_capture_of_a_known_job_reduces_to_its_mix_within_2_points(
    guest: Guest, captured: tuple[Path, dict[str, dict[str, int]]]
) -> None:
    path, counts = captured
    shown = ok(guest.tkbench("capture", "show", str(path), "--json"))
    red = json.loads(shown.stdout)
    r4, w4, r64 = counts["mix"]["read"], counts["mix"]["write"], counts["stream"]["read"]
    total = r4 + w4 + r64
    assert red["dropped_events"] == 0
    assert abs(red["ios"] - total) <= 0.02 * total, (red["ios"], counts)
    share = {4096: 0.0, 65536: 0.0}
    for s in red["streams"]:
        share[s["bs"]] = share.get(s["bs"], 0.0) + s["share_ios"]
    assert share[4096] == pytest.approx(100 * (r4 + w4) / total, abs=2)
    assert share[65536] == pytest.approx(100 * r64 / total, abs=2)
    assert red["read_pct"] == pytest.approx(100 * (r4 + r64) / total, abs=2)
    assert red["random_pct"] == pytest.approx(100 * (r4 + w4) / total, abs=2)
    main = {(s["rw"], s["bs"], s["pattern"]) for s in red["streams"] if s["share_ios"] > 2}
    assert main == {("read", 4096, "rand"), ("write", 4096, "rand"), ("read", 65536, "seq")}
    assert red["capacity_bytes"] == 64 << 20 and red["queue_depth"]["max"] >= 2
    assert sum(red["heat"][:50]) > 0 and sum(red["heat"][50:]) > 0


def test_the_capture_replays_natively_on_another_disk_io_for_io(
    guest: Guest, captured: tuple[Path, dict[str, dict[str, int]]]
) -> None:
    path, _ = captured
    workload = tkw.load(path)
    target = by_serial(guest, "/dev/disk/by-id/virtio-TKVBLK0001")
    iolog = guest.share / "replay.iolog"
    iolog.write_text(fiojobs.iolog_text(workload, target, 64 << 20, mapping="wrap", align=512))
    opts = fiojobs.replay_options(workload, target, iolog, timing="fast")
    argv = ["fio", "--name=replay", "--ioengine=libaio", "--direct=1", "--output-format=json"]
    argv += [f"--{k}={int(v) if isinstance(v, bool) else v}" for k, v in opts.items()]
    res = ok(guest.sh(shlex.join(argv), timeout=120))
    job = json.loads(res.stdout[res.stdout.index("{") :])["jobs"][0]
    trace = workload.trace
    reads, writes = trace.op == 0, trace.op == 1
    pad = fiojobs.replay_depth(workload) - 1  # fio drops what is in flight at the end
    assert job["error"] == 0
    assert (job["read"]["total_ios"], job["write"]["total_ios"]) == (
        int(reads.sum()) + pad,
        int(writes.sum()),
    )
    most = pad * int(trace.size.max())
    for name, mine in (("read", reads), ("write", writes)):
        planned = int(trace.size[mine].sum())
        assert planned - most <= job[name]["io_bytes"] <= planned + pad * 512


# the rwsw profile shrunk: sub-second rounds, a 2 x 2 grid, little preconditioning
RWSW_SMALL = [
    "precondition.capacity_multiple=0.1",
    "workload.numjobs=1",
    "workload.iodepth=4",
    "tests.rwsw.point_runtime=0.5s",
    "tests.rwsw.threads=[2, 1]",
    "tests.rwsw.iodepths=[2, 1]",
    "tests.rwsw.prewrite=0.2s",
    "tests.rwsw.operating_prewrite=0.2s",
    "tests.rwsw.operating_runtime=0.5s",
    "tests.rwsw.rounds.max=3",
    "tests.rwsw.rounds.window=2",
]


def test_run_profile_rwsw_replays_the_capture_on_another_disk(
    guest: Guest, captured: tuple[Path, dict[str, dict[str, int]]]
) -> None:
    """The whole replay test on the virtio-blk disk: the replay stage does the captured
    reads and writes (fio's counts, the reads with the padding fio drops), the run
    completes, and the report has the chapter with the captured streams."""
    path, _ = captured
    workload = tkw.load(path)
    dev = by_serial(guest, "/dev/disk/by-id/virtio-TKVBLK0001")
    out = guest.share / "rwsw-run"
    sets = [x for o in RWSW_SMALL for x in ("--set", o)]
    ok(guest.tkbench(
        "run", "--profile", "rwsw", "--workload", str(path), *sets, "--target", dev,
        "--confirm", "TKVBLK0001", "--out", str(out), "--no-report", "--no-history",
        timeout=900,
    ))  # fmt: skip
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    rnd = json.loads((out / "tests" / "rwsw-replay" / "rounds" / "0001.json").read_text())
    trace = workload.trace
    pad = fiojobs.replay_depth(workload) - 1
    reads, writes = int((trace.op == 0).sum()), int((trace.op == 1).sum())
    assert [p["replay"] for p in rnd["points"]] == ["captured", "fast"]
    for p in rnd["points"]:
        assert (p["read"]["total_ios"], p["write"]["total_ios"]) == (reads + pad, writes)
        share = 100 * p["read"]["total_ios"] / (p["read"]["total_ios"] + p["write"]["total_ios"])
        assert share == pytest.approx(workload.reduction.read_pct, abs=2)
    host = subprocess.run(
        [sys.executable, "-m", "tkbench", "report", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert host.returncode == 0, host.stderr
    chapter = " ".join(layout_text(out / "report.pdf").split())
    for words in (
        "Your workload on this drive",
        "read 4k random",
        "read 64k sequential",
        "replayed at the captured timing",
        "Operating points of the applied workload",
    ):
        assert words in chapter, words  # fmt: skip
