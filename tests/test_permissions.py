"""Files tkbench writes follow the umask: after ``sudo tkbench run`` the operator can
read the report, the manifest and the JUnit file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests._helpers import TWO_IOPS_ROUNDS, sets
from tkbench.rundir.jsonfile import current_umask, write_atomic

CHECKOUT = Path(__file__).resolve().parents[1]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.fio
def test_a_quick_run_under_umask_022_is_readable_by_others(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [
        sys.executable, "-m", "tkbench", "run", "--profile", "quick",
        "--target", str(tmp_path / "t.img"), "--size", "16M", "--yes",
        "--out", str(out), "--junit", str(tmp_path / "junit.xml"), "--no-history",
        *sets(*TWO_IOPS_ROUNDS),
    ]  # fmt: skip
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(CHECKOUT)},
        preexec_fn=lambda: os.umask(0o022),
    )
    assert done.returncode == 0, done.stderr
    for name in ("report.pdf", "report.html", "manifest.json", "checks.json", "events.log"):
        assert mode(out / name) == 0o644, name
    assert mode(tmp_path / "junit.xml") == 0o644
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) > 10
    assert {p.name: mode(p) for p in files if mode(p) != 0o644} == {}
    dirs = [out, *(p for p in out.rglob("*") if p.is_dir())]
    assert {str(p): mode(p) for p in dirs if mode(p) != 0o755} == {}


def test_atomic_writes_follow_any_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        assert current_umask() == 0o027
        write_atomic(tmp_path / "a.json", "{}")
        os.umask(0o077)
        write_atomic(tmp_path / "b.json", "{}")
        write_atomic(tmp_path / "a.json", "[]")  # a rewrite takes the umask of its time
    finally:
        os.umask(old)
    assert mode(tmp_path / "b.json") == 0o600
    assert mode(tmp_path / "a.json") == 0o600
    os.umask(0o022)
    try:
        write_atomic(tmp_path / "c.json", "{}")
    finally:
        os.umask(old)
    assert mode(tmp_path / "c.json") == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "c.json"]
