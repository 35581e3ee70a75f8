"""Helpers shared by the tests."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

# Profile overrides that shrink the quick profile to sub-second points.
FAST = [
    "tests.iops.point_runtime=0.2s",
    "tests.throughput.point_runtime=0.2s",
    "tests.latency.point_runtime=0.2s",
    "tests.wsat.point_runtime=0.2s",
    "precondition.capacity_multiple=1.0",
    # the tests beyond the basic four: fractions of a second, two wait states, a 2 x 2 grid
    "tests.hir.point_runtime=0.2s",
    'tests.hir.wait_states=["0.3s", "0.6s"]',
    "tests.hir.bursts=2",
    "tests.hir.burst=0.3s",
    "tests.hir.baseline=0.4s",
    "tests.hir.sample=0.1s",
    "tests.hir.rounds.max=4",
    "tests.hir.rounds.window=2",
    'tests.xsr.groups=["128k sequential 1s", "4k random 1s", "128k sequential 1s"]',
    "tests.xsr.sample=0.2s",
    *(
        f"tests.{t}.{k}"
        for t in ("cbw", "dirth")
        for k in (
            "point_runtime=0.2s",
            "threads=[2, 1]",
            "iodepths=[2, 1]",
            "prewrite=0.2s",
            "operating_prewrite=0.2s",
            "operating_runtime=0.3s",
            "rounds.max=3",
            "rounds.window=2",
        )
    ),
]

# The tests beyond the basic four switched off (they have their own tests)
STAGED_OFF = [f"tests.{t}.enabled=false" for t in ("hir", "xsr", "cbw", "dirth")]

# Their stages, as a run directory holds them (tkbench/kinds/staged/)
STAGE_TESTS = [
    *(f"hir-{s}" for s in ("precondition", "recovery")),
    "xsr",
    *(f"{t}-{s}" for t in ("cbw", "dirth") for s in ("precondition", "intensity", "operating")),
]

# The smallest run with a steady-state window: two IOPS rounds, no other test.
TWO_IOPS_ROUNDS = [
    "tests.iops.rounds.max=2",
    "tests.iops.rounds.window=2",
    "tests.throughput.enabled=false",
    "tests.latency.enabled=false",
    "tests.wsat.enabled=false",
    *STAGED_OFF,
]


def merged(*overrides: str) -> list[str]:
    """FAST with ``overrides`` (a key in both takes the override's value: tkbench
    itself refuses one key given twice)."""
    keys = {o.split("=", 1)[0] for o in overrides}
    return [o for o in FAST if o.split("=", 1)[0] not in keys] + list(overrides)


def sets(*overrides: str) -> list[str]:
    """``--set`` options for :func:`merged` FAST and ``overrides``."""
    out: list[str] = []
    for o in merged(*overrides):
        out += ["--set", o]
    return out


def layout_text(pdf: Path) -> str:
    """A PDF's text as ``pdftotext -layout`` gives it (a table row stays one line;
    pages end in form feeds)."""
    return subprocess.run(
        ["pdftotext", "-layout", "-enc", "UTF-8", str(pdf), "-"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout


def old_history_steps(version: int, real: str, int64: str) -> list[str]:
    """The SQL by which tkbench made a history of ``version`` (its first upgrade
    steps), in a backend's words for a float and a 64-bit integer."""
    from tkbench.history import schema

    return [sql.format(real=real, int64=int64) for step in schema.STEPS[:version] for sql in step]


def old_sqlite_history(path: Path, version: int) -> None:
    """An SQLite history as tkbench wrote it at ``version``."""
    with sqlite3.connect(path) as con:
        for sql in old_history_steps(version, "REAL", "INTEGER"):
            con.execute(sql)
        con.execute(f"PRAGMA user_version = {version}")


@contextlib.contextmanager
def mounted_volume(
    tmp: Path, size: int, fs: str = "ext4", own_files: bool = True
) -> Iterator[tuple[Path, str]]:
    """A filesystem (``ext4``, or ``xfs`` with reflinks) of ``size`` bytes on a loop
    device, mounted below ``tmp``; with ``own_files``, a folder and two files of its
    own that a volume benchmark must leave alone.  Yields (mount point, device);
    unmounted and detached however the body ends.  Skips without root."""
    import pytest

    if os.geteuid() != 0:
        pytest.skip("mounting a loop device needs root")
    img = tmp / f"{fs}.img"
    with open(img, "wb") as fh:
        fh.truncate(size)
    dev = subprocess.run(
        ["losetup", "-f", "--show", str(img)], check=True, capture_output=True, text=True
    ).stdout.strip()
    mnt = tmp / f"mnt-{fs}"
    mnt.mkdir()
    try:
        mkfs = ["mkfs.ext4", "-q", dev] if fs == "ext4" else ["mkfs.xfs", "-q", "-f"]
        if fs == "xfs":
            mkfs += ["-m", "reflink=1", dev]
        subprocess.run(mkfs, check=True)
        subprocess.run(["mount", dev, str(mnt)], check=True)
        if own_files:
            (mnt / "photos").mkdir()
            (mnt / "photos" / "a.jpg").write_bytes(os.urandom(100_000))
            (mnt / "notes.txt").write_text("keep me\n")
        yield mnt, dev
    finally:
        subprocess.run(["umount", str(mnt)], check=False, capture_output=True)
        subprocess.run(["losetup", "-d", dev], check=False)


def start_tkbench(*args: str) -> subprocess.Popen[str]:
    """``python -m tkbench ARGS`` in a process group of its own (fio is killed with it),
    its output captured as text."""
    return subprocess.Popen(
        [sys.executable, "-m", "tkbench", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
