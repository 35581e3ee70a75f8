"""`tkbench run` on real loop devices: guards as the user meets them, and a real run."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._helpers import TWO_IOPS_ROUNDS, sets
from tkbench import cli
from tkbench.rundir.store import load_run

MiB = 1024 * 1024

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="loop devices need root")


@pytest.fixture
def loopdev(tmp_path: Path) -> Iterator[str]:
    backing = tmp_path / "backing.img"
    with open(backing, "wb") as fh:
        fh.truncate(32 * MiB)
    dev = subprocess.run(
        ["losetup", "--find", "--show", str(backing)], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["umount", dev], capture_output=True, check=False)
        subprocess.run(["losetup", "-d", dev], check=False)


def _digest(dev: str) -> str:
    with open(dev, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _run_args(dev: str, out: Path, *extra: str) -> list[str]:
    args = ["run", "--profile", "quick", "--target", dev, "--out", str(out), "--no-report", *extra]
    args += sets(*TWO_IOPS_ROUNDS)
    return args


def _one_line_error(err: str) -> str:
    """The single error line (progress log lines may precede it on stderr)."""
    lines = [ln for ln in err.splitlines() if ln.startswith("tkbench:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.fio
def test_block_device_needs_confirm_with_its_kernel_name(
    loopdev: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open(loopdev, "r+b") as fh:
        fh.write(b"precious" * 512)
        fh.flush()
        os.fsync(fh.fileno())
    before = _digest(loopdev)
    # --yes is not enough for a block device
    assert cli.main(_run_args(loopdev, tmp_path / "a", "--yes")) == 3
    assert "confirm" in _one_line_error(capsys.readouterr().err).lower()
    # a wrong ID is refused
    assert cli.main(_run_args(loopdev, tmp_path / "b", "--confirm", "loop999")) == 3
    _one_line_error(capsys.readouterr().err)
    assert _digest(loopdev) == before
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    # the right one runs, and the fallback purge is recorded as not PTS-compliant
    name = Path(loopdev).name
    assert cli.main(_run_args(loopdev, tmp_path / "ok", "--confirm", name)) == 0
    t = load_run(tmp_path / "ok").test("iops")
    assert t.purge is not None and t.purge.method == "blkdiscard"
    assert t.purge.pts_compliant is False
    assert len(t.rounds) == 2
    assert _digest(loopdev) != before
    # health snapshots around the test: a loop device has no SMART data, and says so
    assert t.health_before is not None and t.health_after is not None
    assert t.health_before["source"] == "none"
    assert "no SMART data for loop devices" in t.health_before["notes"]


@pytest.mark.fio
def test_a_purge_method_the_device_cannot_do_is_refused_before_anything(
    loopdev: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _digest(loopdev)
    name = Path(loopdev).name
    args = _run_args(
        loopdev, tmp_path / "r", "--confirm", name, "--set", "purge.method=nvme-format"
    )
    assert cli.main(args) == 2
    line = _one_line_error(capsys.readouterr().err)
    assert "'nvme-format' is for nvme devices" in line
    assert not (tmp_path / "r").exists()
    assert _digest(loopdev) == before


@pytest.mark.fio
def test_a_failing_purge_marks_the_run_failed(
    loopdev: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a fake blkdiscard that fails (this is the only fake here: the device is real)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "blkdiscard").write_text(
        "#!/bin/sh\necho 'blkdiscard: BLKDISCARD ioctl failed: Input/output error' >&2\nexit 1\n"
    )
    (fake / "blkdiscard").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    args = _run_args(loopdev, tmp_path / "r", "--confirm", Path(loopdev).name)
    assert cli.main(args) == 4
    line = _one_line_error(capsys.readouterr().err)
    assert "Input/output error" in line
    run = load_run(tmp_path / "r")
    assert run.manifest.status == "failed"
    assert "Input/output error" in run.manifest.error
    failed = json.loads((tmp_path / "r/tests/iops/purge-failed.json").read_text())
    assert failed["commands"][0]["argv"][0].endswith("blkdiscard")
    assert run.test("iops").rounds == []


@pytest.mark.fio
def test_formatted_device_needs_force_and_mounted_is_always_refused(
    loopdev: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev], check=True, capture_output=True)
    before = _digest(loopdev)
    name = Path(loopdev).name
    assert cli.main(_run_args(loopdev, tmp_path / "a", "--confirm", name)) == 3
    assert "--force" in _one_line_error(capsys.readouterr().err)
    assert _digest(loopdev) == before
    # (mounting changes the superblock itself, so the bytes are compared before that)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", loopdev, str(mnt)], check=True)
    try:
        assert cli.main(_run_args(loopdev, tmp_path / "b", "--confirm", name, "--force")) == 3
        assert "mounted" in _one_line_error(capsys.readouterr().err)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    assert not (tmp_path / "b").exists()


def test_plan_touches_nothing(loopdev: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = _digest(loopdev)
    assert cli.main(["plan", "--profile", "pts-e", "--target", loopdev]) == 0
    out = capsys.readouterr().out
    assert "p055_512_0-100" in out  # 56 IOPS points on a 512-byte-sector device, 512 0/100 last
    assert "Estimated duration" in out
    assert _digest(loopdev) == before
