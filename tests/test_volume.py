"""Volume mode (docs/volume.md): benchmarks of a directory on a mounted filesystem.

The run tests use a real ext4 filesystem on a loop device, mounted by the fixture,
and check with checksums that nothing outside tkbench's working directory changes
and that nothing is left behind, also after an interrupt."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._helpers import mounted_volume
from tkbench import cli
from tkbench.analysis.repeat import repeatability, t95
from tkbench.errors import ProfileError
from tkbench.plan import build as planmod
from tkbench.profile.build import load as load_profile
from tkbench.targets.volume import MARKER, PREFIX, VolumeTarget, find_workdirs, open_volume

MiB = 1024 * 1024
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="mounting a loop device needs root")

# the ars recipes, reduced: sub-second points, tiny files, two runs each
SMALL = """
extends = "ars"
[volume]
reserve = "1M"
min_file_size = "1M"
"""
for _name, _size in (("4k", "4m"), ("64k", "1m"), ("1m", "8m")):
    for _t in (_name, f"{_name}-fsync"):
        SMALL += f'[tests.{_t}]\npoint_runtime = "300ms"\nfile_size = "{_size}"\nrepeat = 2\n'


# --------------------------------------------------------------------------- statistics


def test_repeatability_of_three_runs() -> None:
    r = repeatability([10.0, 12.0, 14.0])
    assert r.runs == (10.0, 12.0, 14.0)
    assert r.mean == pytest.approx(12.0)
    assert r.mean_abs_dev == pytest.approx(4 / 3)
    assert r.mean_abs_dev_pct == pytest.approx(100 * (4 / 3) / 12)
    assert r.stdev == pytest.approx(2.0)
    assert r.ci95 is not None
    half = 4.303 * 2.0 / 3**0.5
    assert r.ci95 == pytest.approx((12 - half, 12 + half))
    assert r.to_dict()["ci95"] == pytest.approx([12 - half, 12 + half])


def test_one_run_has_no_spread_to_estimate() -> None:
    r = repeatability([5.0])
    assert r.mean == 5.0 and r.mean_abs_dev == 0.0 and r.stdev is None and r.ci95 is None
    assert repeatability([0.0, 0.0]).mean_abs_dev_pct is None
    with pytest.raises(ValueError):
        repeatability([])


def test_student_t_beyond_the_table_approaches_the_normal() -> None:
    assert t95(1) == pytest.approx(12.706)
    assert t95(30) == pytest.approx(2.042)
    assert t95(40) == pytest.approx(2.021, abs=1e-3)
    assert t95(120) == pytest.approx(1.980, abs=1e-3)
    assert t95(10**6) == pytest.approx(1.960, abs=1e-3)


# --------------------------------------------------------------------------- profiles, plans


def _small(tmp_path: Path) -> Path:
    p = tmp_path / "small.toml"
    p.write_text(SMALL, encoding="utf-8")
    return p


def test_ars_is_a_volume_profile_with_the_published_recipes() -> None:
    prof = load_profile("ars")
    assert prof.scope == "volume"
    by = {t.name: t for t in prof.tests}
    assert set(by) == {"4k", "4k-fsync", "64k", "64k-fsync", "1m", "1m-fsync"}
    for name, bs, jobs, depth, size in (
        ("4k", 4096, 1, 1, 4 << 30),
        ("64k", 65536, 16, 16, 256 * MiB),
        ("1m", MiB, 1, 1, 16 << 30),
    ):
        for t in (by[name], by[f"{name}-fsync"]):
            assert t.block_sizes == (bs,) and t.workload.numjobs == jobs
            assert t.workload.iodepth == depth and t.file_size == size
            assert t.end_fsync and t.point_runtime == 60 and t.workload.ioengine == "posixaio"
            assert not t.purge and not t.precondition and t.kind == "fixed"
        assert by[name].fsync == 0 and by[f"{name}-fsync"].fsync == 1


def test_a_volume_profile_never_purges(tmp_path: Path) -> None:
    p = _small(tmp_path)
    with pytest.raises(ProfileError, match="never purges"):
        load_profile(str(p), ["tests.4k.purge=true"])
    with pytest.raises(ProfileError, match="file_size"):
        load_profile("quick", ["tests.iops.file_size=4m"])


def _info(free: int, direct: bool = True) -> planmod.TargetInfo:
    return planmod.TargetInfo("/mnt/x", "volume", 100 << 30, 512, free, direct)


def test_files_shrink_to_fit_the_volume_with_a_note() -> None:
    prof = load_profile("ars", ["volume.reserve=0"])
    plan = planmod.build(prof, _info(10 << 30))  # 9 GiB usable: the 16 GiB file shrinks
    by = {t.name: t for t in plan.tests}
    assert by["4k"].active_bytes == 4 << 30 and not by["4k"].notes
    assert by["1m"].active_bytes == 9 << 30
    assert "shrunk from 16.00 GiB to 9.00 GiB" in by["1m"].notes[0]
    assert by["1m"].record().workload.end_fsync is True


def test_too_little_space_is_refused_with_the_numbers() -> None:
    prof = load_profile("ars", ["volume.shrink=false"])
    with pytest.raises(ValueError, match=r"needs 1 x 4.00 GiB = 4.00 GiB .*\(2.00 GiB free"):
        planmod.build(prof, _info(2 << 30))
    # shrinking stops at volume.min_file_size
    with pytest.raises(ValueError, match="only"):
        planmod.build(load_profile("ars"), _info(1 << 30))


def test_direct_io_where_the_filesystem_has_none(tmp_path: Path) -> None:
    p = _small(tmp_path)
    direct = load_profile(str(p), ["workload.direct=true"])
    with pytest.raises(ValueError, match="does not support direct I/O"):
        planmod.build(direct, _info(1 << 30, direct=False))
    allowed = load_profile(str(p), ["workload.direct=true", "volume.allow_buffered=true"])
    plan = planmod.build(allowed, _info(1 << 30, direct=False))
    assert all(not t.spec.workload.direct for t in plan.tests)
    assert "buffered I/O" in plan.tests[0].notes[0]


# --------------------------------------------------------------------------- working directory


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def _stale(where: Path, run_dir: Path, name: str = "tkbench-old") -> Path:
    d = where / name
    d.mkdir()
    (d / "p000_4k_0-100.0.0").write_bytes(b"x" * 4096)
    st = d.stat()
    marker = {
        "run_dir": str(run_dir.resolve()),
        "pid": _dead_pid(),
        "host": os.uname().nodename,
        "dev": st.st_dev,
        "ino": st.st_ino,
    }
    (d / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    return d


def test_a_dead_runs_directory_is_removed_and_a_resumed_runs_reused(tmp_path: Path) -> None:
    vol = tmp_path / "vol"
    vol.mkdir()
    other = _stale(vol, tmp_path / "other-run", "tkbench-a")
    mine = _stale(vol, tmp_path / "this-run", "tkbench-b")
    (vol / "tkbench-not-ours").mkdir()  # no marker: never touched
    target = open_volume(str(vol), vol)
    assert {w.path for w in find_workdirs(vol)} == {other, mine}
    with target.workspace(tmp_path / "this-run"):
        assert target.workdir == mine and not other.exists()
        assert (mine / "p000_4k_0-100.0.0").exists()
        assert json.loads((mine / MARKER).read_text())["pid"] == os.getpid()
    assert not mine.exists() and (vol / "tkbench-not-ours").is_dir()


def test_a_live_runs_directory_is_left_alone(tmp_path: Path) -> None:
    d = tmp_path / "tkbench-live"
    d.mkdir()
    marker = {"run_dir": "/elsewhere", "pid": os.getpid(), "host": os.uname().nodename}
    (d / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    target = open_volume(str(tmp_path), tmp_path)
    with target.workspace(tmp_path / "run"):
        assert target.workdir is not None and target.workdir != d
        assert target.workdir.name.startswith(PREFIX)
    assert d.is_dir()


def test_the_working_directory_goes_after_an_error(tmp_path: Path) -> None:
    target = open_volume(str(tmp_path), tmp_path)
    assert isinstance(target, VolumeTarget)
    with pytest.raises(RuntimeError), target.workspace(tmp_path / "run"):
        assert target.workdir is not None
        (target.workdir / "file").write_bytes(b"1")
        raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- on a real ext4


@pytest.fixture
def ext4(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """An ext4 filesystem of 200 MiB on a loop device, mounted, with a file of its own."""
    with mounted_volume(tmp_path, 200 * MiB) as mounted:
        yield mounted


def _snapshot(root: Path) -> dict[str, str]:
    """Every path below ``root`` with a checksum of its contents (directories: '-')."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for d in dirs:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = "-"
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def _one_error(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("tkbench:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@needs_root
def test_device_profiles_are_refused_on_a_directory(
    ext4: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mnt, dev = ext4
    before = _snapshot(mnt)
    out = tmp_path / "run"
    assert cli.main(["run", "--profile", "pts-e", "--target", str(mnt), "--out", str(out)]) == 3
    assert "device profile" in _one_error(capsys.readouterr().err)
    # and a volume profile on the block device itself
    args = ["run", "--profile", "ars", "--target", dev, "--out", str(out)]
    assert cli.main(args) == 2
    assert "volume benchmark" in _one_error(capsys.readouterr().err)
    assert _snapshot(mnt) == before and not out.exists()


@needs_root
def test_too_little_space_is_refused_before_anything(
    ext4: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mnt, _ = ext4
    before = _snapshot(mnt)
    out = tmp_path / "run"
    assert cli.main(["run", "--profile", "ars", "--target", str(mnt), "--out", str(out)]) == 2
    line = _one_error(capsys.readouterr().err)
    assert "needs" in line and "MiB free" in line, line
    assert _snapshot(mnt) == before and not out.exists()


@needs_root
def test_tmpfs_has_no_direct_io(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], check=True)
    try:
        if open_volume(str(mnt), mnt).direct_io:
            pytest.skip("this kernel's tmpfs supports O_DIRECT")
        args = ["run", "--profile", str(_small(tmp_path)), "--target", str(mnt)]
        args += ["--set", "workload.direct=true", "--out", str(tmp_path / "run")]
        assert cli.main(args) == 2
        assert "does not support direct I/O" in _one_error(capsys.readouterr().err)
        assert os.listdir(mnt) == [] and not (tmp_path / "run").exists()
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


@needs_root
@pytest.mark.fio
def test_ars_reduced_touches_nothing_but_its_own_files(
    ext4: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mnt, _ = ext4
    before = _snapshot(mnt)
    out = tmp_path / "run"
    args = ["run", "--profile", str(_small(tmp_path)), "--target", str(mnt), "--out", str(out)]
    assert cli.main([*args, "--no-history"]) == 0
    assert _snapshot(mnt) == before  # nothing changed, nothing left behind
    # the files were written in the working directory, through the recipe's options
    job = (out / "tests" / "4k-fsync" / "rounds" / "0001.fio").read_text()
    assert f"directory={mnt}/{PREFIX}" in job
    assert "fsync=1" in job and "end_fsync=1" in job and "ioengine=posixaio" in job
    assert "refill_buffers=1" in job and "direct=0" in job
    capsys.readouterr()
    assert cli.main(["show", str(out), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    for t in shown["tests"]:
        (p,) = t["points"]
        assert len(p["runs"]) == 2 and all(x > 0 for x in p["runs"])
        assert p["mean"] == pytest.approx(sum(p["runs"]) / 2)
        lo, hi = p["ci95"]
        assert lo <= p["mean"] <= hi and p["stdev"] is not None
        assert p["mean_abs_dev_pct"] == pytest.approx(100 * p["mean_abs_dev"] / p["mean"])
    page = " ".join((out / "report.html").read_text().split())
    assert "How fast is this volume?" in page and "makes no PTS claim" in page
    assert "MiB/s on average over 2 runs" in page
    log = (out / "events.log").read_text()
    assert "volume: removed the working directory" in log


@needs_root
@pytest.mark.fio
def test_an_interrupted_run_leaves_nothing_behind(ext4: tuple[Path, str], tmp_path: Path) -> None:
    mnt, _ = ext4
    before = _snapshot(mnt)
    prof = _small(tmp_path)
    prof.write_text(SMALL.replace('"300ms"', '"20s"'), encoding="utf-8")
    out = tmp_path / "run"
    cmd = [str(Path(sys.executable).parent / "tkbench"), "run", "--profile", str(prof)]
    cmd += ["--target", str(mnt), "--out", str(out), "--no-history", "--no-report"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait until fio writes its file
            dirs = [d for d in mnt.iterdir() if d.name.startswith(PREFIX)]
            if dirs and any(f.name != MARKER for f in dirs[0].iterdir()):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the run never wrote its test file")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert _snapshot(mnt) == before
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
