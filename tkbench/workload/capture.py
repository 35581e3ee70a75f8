"""Capture a block device's I/O with blktrace (Debian's ``blktrace``) for a given time.

Only the issue and completion records are traced (``-a issue -a complete``): the
fewest records that give offsets, sizes, directions, times and service times.  The
per-CPU trace files go to a private directory in memory (``/dev/shm`` when there is
one), so the capture writes nothing to the disks it may be tracing, and are removed
once read.  debugfs is mounted on ``/sys/kernel/debug`` when it is not (and unmounted
after).  A kernel that cannot trace (no ``CONFIG_BLK_DEV_IO_TRACE``, or a container
whose debugfs files refuse to open) is one line, :class:`TraceUnavailable`.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tkbench import __version__, proc
from tkbench.device.sysfs import Sysfs
from tkbench.errors import DeviceError, InputError
from tkbench.typed import Typed
from tkbench.units import parse_duration, timestamp
from tkbench.workload.tkw import Workload, of_trace
from tkbench.workload.trace import events, from_events

DEBUGFS = "/sys/kernel/debug"
MAX_DURATION = 7 * 86400.0
POLL = 0.25
# blktrace lines that mean no trace is being taken, whatever its exit code
_FAILED = ("failed", "FAILED", "Invalid argument", "No such file", "not supported")

Progress = Callable[[float, float, int], None]


class TraceUnavailable(DeviceError):
    """This kernel (or this container) cannot trace the device's block I/O."""


@dataclass(frozen=True)
class Device(Typed):
    """The block device a capture traces (its fields but ``base`` are what the
    capture's record says of it)."""

    path: str
    name: str  # kernel name (nvme0n1, sda2)
    capacity_bytes: int
    logical_block_bytes: int
    # first byte in the disk's numbering (a partition's start), else 0
    base: int = field(metadata={"internal": True})


def device(path: str, sysfs: Sysfs | None = None) -> Device:
    """The block device at ``path``; :class:`InputError` when there is none."""
    sysfs = sysfs or Sysfs()
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"no device {path}") from None
    except OSError as exc:
        raise InputError(f"cannot look at {path}: {exc.strerror or exc}") from None
    if not stat.S_ISBLK(st.st_mode):
        raise InputError(f"{path} is not a block device: capture traces block devices")
    name = sysfs.name_for_path(path)
    sectors = sysfs.read(name, "size") if name else None
    if not name or not sectors or not sectors.isdigit():
        raise InputError(f"{path}: no size in /sys/class/block (is it a block device?)")
    disk = sysfs.parent_disk(name)
    lbs = sysfs.read(disk, "queue/logical_block_size") or "512"
    start = sysfs.read(name, "start") if sysfs.is_partition(name) else "0"
    return Device(
        path=path,
        name=name,
        capacity_bytes=int(sectors) * 512,
        logical_block_bytes=int(lbs) if lbs.isdigit() else 512,
        base=int(start) * 512 if start and start.isdigit() else 0,
    )


def duration(text: str | float) -> float:
    """Whole seconds of a capture from ``30s``, ``10m``, ``1h``; InputError when bad."""
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise InputError(f"--duration: {exc}") from None
    if not 1 <= seconds <= MAX_DURATION:
        raise InputError(f"--duration {text}: give 1 s to 7 days")
    return float(math.ceil(seconds))


def _ensure_debugfs(root: str) -> bool:
    """Mount debugfs on ``root`` unless it is mounted; True when this mounted it."""
    if os.path.isdir(os.path.join(root, "block")):
        return False
    done = proc.run(["mount", "-t", "debugfs", "debugfs", root], check=False, timeout=30)
    if done.returncode != 0 or not os.path.isdir(os.path.join(root, "block")):
        reason = (done.stderr.strip() or f"exit code {done.returncode}").splitlines()[-1]
        raise TraceUnavailable(f"cannot mount debugfs on {root} for blktrace: {reason}")
    return True


def _scratch() -> str:
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None  # in memory: not on a traced disk
    return tempfile.mkdtemp(prefix="tkbench-capture-", dir=base)


def _refusal(dev: Device, out: str, err: str, code: int) -> TraceUnavailable | None:
    lines = [ln.strip() for ln in (err + "\n" + out).splitlines() if ln.strip()]
    bad = [ln for ln in lines if any(word in ln for word in _FAILED)]
    if "Device or resource busy" in err:
        return TraceUnavailable(
            f"{dev.path} is being traced already (another blktrace?): {bad[0] if bad else ''}"
        )
    if bad or code != 0:
        why = bad[0] if bad else (lines[-1] if lines else f"exit code {code}")
        return TraceUnavailable(f"this kernel cannot trace the block I/O of {dev.path}: {why}")
    return None


def _dropped(out: str) -> int:
    """Events blktrace says it lost (``Total: N events (dropped D), ...``)."""
    for line in out.splitlines():
        if line.strip().startswith("Total:") and "dropped" in line:
            with contextlib.suppress(ValueError, IndexError):
                return int(line.split("dropped")[1].split(")")[0])
    return 0


def capture(
    path: str,
    seconds: float,
    progress: Progress | None = None,
    *,
    debugfs: str = DEBUGFS,
    sysfs: Sysfs | None = None,
) -> Workload:
    """Trace ``path`` for ``seconds`` (whole seconds) and return the workload: the trace
    and its reduction.  ``progress(elapsed, seconds, trace_bytes)`` is called about four
    times a second while the trace runs."""
    dev = device(path, sysfs)
    seconds = duration(seconds)
    blktrace = proc.require("blktrace", "blktrace")
    if os.geteuid() != 0:
        raise TraceUnavailable("capture needs root: blktrace sets up the kernel's trace")
    mounted = _ensure_debugfs(debugfs)
    scratch = _scratch()
    try:
        started = timestamp()
        child = proc.spawn(
            [blktrace, "-d", dev.path, "-w", f"{seconds:.0f}", "-D", scratch, "-o", "trace",
             "-a", "issue", "-a", "complete"],
            timeout=seconds + 120,
        )  # fmt: skip
        t0 = time.monotonic()
        try:
            while not child.finished():
                if progress is not None:
                    progress(min(time.monotonic() - t0, seconds), seconds, _size(scratch))
                time.sleep(POLL)
            done = child.wait()
        except BaseException:
            child.stop()  # SIGTERM: blktrace tears the kernel's trace down
            raise
        traced = time.monotonic() - t0
        refused = _refusal(dev, done.stdout, done.stderr, done.returncode)
        if refused is not None:
            raise refused
        if progress is not None:
            progress(seconds, seconds, _size(scratch))
        data = b"".join(p.read_bytes() for p in sorted(Path(scratch).glob("trace.blktrace.*")))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if mounted:
            proc.run(["umount", debugfs], check=False, timeout=30)
    trace = from_events(events(data), base=dev.base, length=dev.capacity_bytes)
    span = min(traced, seconds)
    return of_trace(
        trace,
        dev.to_dict(),
        span,
        captured_at=started,
        tool="blktrace -a issue -a complete",
        tkbench=__version__,
        dropped_events=_dropped(done.stdout),
    )


def _size(directory: str) -> int:
    total = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            with contextlib.suppress(OSError):
                total += entry.stat().st_size
    return total
