"""``tkbench capture`` and ``tkbench capture show`` on this host: bad input refused with
one line before anything is traced, this container's kernel refused cleanly (it cannot
trace), and a workload file printed for people and as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.helpers import LoopDevices

from tests.test_workload import workload
from tkbench.workload import tkw

CHECKOUT = Path(__file__).resolve().parents[1]
DEBUGFS = "/sys/kernel/debug"


def tkbench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    return subprocess.run(
        [sys.executable, "-m", "tkbench", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def one_error(done: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("tkbench: error: ") and text in lines[-1], done.stderr
    assert "Traceback" not in done.stderr


def debugfs_mounted() -> bool:
    with open("/proc/self/mountinfo") as fh:
        return any(line.split()[4] == DEBUGFS for line in fh)


@pytest.mark.parametrize(
    ("args", "code", "text"),
    [
        ((), 2, "capture needs --device, --duration, --out"),
        (("--device", "/dev/tkbench-none", "--duration", "5s"), 2, "needs --out"),
        (("--device", "/dev/tkbench-none", "--duration", "5s", "--out", "w.tkw"), 2,
         "no device /dev/tkbench-none"),
        (("--device", "/dev/null", "--duration", "5s", "--out", "w.tkw"), 2,
         "/dev/null is not a block device"),
    ],
)  # fmt: skip
def test_capture_refuses_bad_arguments_with_one_line(
    args: tuple[str, ...], code: int, text: str
) -> None:
    one_error(tkbench("capture", *args), code, text)


@pytest.mark.root
@pytest.mark.parametrize(
    ("duration", "text"), [("0s", "give 1 s to 7 days"), ("soon", "not a duration"), ("8d", "7")]
)
def test_capture_refuses_a_bad_duration(loops: LoopDevices, duration: str, text: str) -> None:
    dev = loops.create(8)
    one_error(tkbench("capture", "--device", dev, "--duration", duration, "--out", "w"), 2, text)


@pytest.mark.root
def test_capture_never_writes_over_a_file_that_is_not_the_users(
    loops: LoopDevices, tmp_path: Path
) -> None:
    dev = loops.create(8)
    theirs = tmp_path / "theirs.tkw"
    theirs.write_text("their work")
    os.chown(theirs, 65534, 65534)
    done = tkbench("capture", "--device", dev, "--duration", "2s", "--out", str(theirs))
    one_error(done, 2, "another user's file")
    assert theirs.read_text() == "their work"
    assert "capturing" not in done.stderr  # refused before any trace


@pytest.mark.root
def test_capture_is_refused_cleanly_where_the_kernel_cannot_trace(
    loops: LoopDevices, tmp_path: Path
) -> None:
    """This host's container kernel refuses blktrace's per-CPU files (EPERM): one line,
    exit 4, no file, and debugfs left as it was (mounted for the attempt, then not)."""
    dev = loops.create(8)
    before = debugfs_mounted()
    out = tmp_path / "w.tkw"
    done = tkbench("capture", "--device", dev, "--duration", "3s", "--out", str(out))
    one_error(done, 4, f"this kernel cannot trace the block I/O of {dev}")
    assert not out.exists() and list(tmp_path.glob(".w.tkw*")) == []
    assert debugfs_mounted() == before
    assert list(Path("/dev/shm").glob("tkbench-capture-*")) == []


def test_capture_show_prints_the_streams_and_the_json_has_the_promised_fields(
    tmp_path: Path,
) -> None:
    w = workload()
    path = tmp_path / "w.tkw"
    tkw.write(path, w)
    done = tkbench("capture", "show", str(path), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["schema"] == 1 and doc["format"] == tkw.FORMAT
    assert doc["capacity_bytes"] == 64 << 20
    red = w.reduction
    assert (doc["read_pct"], doc["iops"]) == (red.read_pct, red.iops)
    first = doc["streams"][0]
    assert set(first) >= {"rw", "bs", "pattern", "share_ios", "share_bytes"}
    assert (first["rw"], first["bs"], first["pattern"]) == ("read", 4096, "rand")
    assert len(doc["heat"]) == 100
    text = tkbench("capture", "show", str(path))
    assert text.returncode == 0, text.stderr
    assert "read 4k rand" in text.stdout and "% reads" in text.stdout


@pytest.mark.parametrize(
    ("content", "text"),
    [(None, "no workload file"), (b"plain text", "not a tkbench workload file")],
)
def test_capture_show_refuses_what_is_no_workload_file(
    tmp_path: Path, content: bytes | None, text: str
) -> None:
    path = tmp_path / "w.tkw"
    if content is not None:
        path.write_bytes(content)
    one_error(tkbench("capture", "show", str(path)), 2, text)
