"""The copy test (profile ``copy``, docs/volume.md): its plan and layouts, bad input,
and real copies on filesystems mounted by the tests (ext4; XFS with reflinks, where a
copy that shared extents with its source would show): byte-identical copies, no
shared extents, cold sources, nothing outside the working directory changed, nothing
left behind, and a run killed with SIGKILL mid-copy that resumes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests._helpers import layout_text, mounted_volume
from tests.test_volume import _one_error, _snapshot, needs_root
from tkbench import cli
from tkbench.errors import ProfileError
from tkbench.kinds import copy as copyplan
from tkbench.kinds.copyrun import CopySession, drop_pages, fill
from tkbench.plan import build as planmod
from tkbench.profile import CopySet
from tkbench.profile.build import load as load_profile
from tkbench.targets.volume import PREFIX

K, M = 1024, 1024 * 1024
GiB = 1024 * M
ROOT = os.geteuid() == 0

# the bundled profile, reduced: sets of a few MiB, two runs
SMALL = """
extends = "copy"
[volume]
reserve = "1M"
min_file_size = "1M"
[tests.copy]
sets = ["iso 2 12m", "program 80 3m", "game 30 9m"]
copy_buffer = "256k"
repeat = 2
"""


def _info(free: int = 100 * GiB) -> planmod.TargetInfo:
    return planmod.TargetInfo("/srv/data", "volume", 200 * GiB, 512, free, True)


def _profile(tmp_path: Path, text: str = SMALL) -> Path:
    p = tmp_path / "small.toml"
    p.write_text(text, encoding="utf-8")
    return p


# --------------------------------------------------------------------------- plan


def test_the_bundled_copy_plan_copies_three_sets_in_two_patterns() -> None:
    prof = load_profile("copy")
    assert prof.scope == "volume"
    plan = planmod.build(prof, _info())
    (test,) = plan.tests
    assert test.spec.kind == "copy" and test.spec.repeat == 3
    assert [p.tag for p in test.points] == [
        f"{s} {d}" for s in ("iso", "program", "game") for d in ("zero", "random")
    ]
    assert {p.bs for p in test.points} == {M} and {p.role for p in test.points} == {"copy"}
    iso = test.points[0]
    assert (iso.files, iso.size) == (2, GiB)
    record = test.record("read/write")
    assert record.kind == "copy" and record.points[2].copy_set == "program"
    text = planmod.describe(plan)
    assert "read()/write()" in text and "never a reflink" in text and "fsynced" in text
    assert "600 file(s)" in text and "Estimated duration" in text
    lo, hi = plan.estimate()
    assert lo == hi > 60  # sources plus three runs of every copy, at the assumed rates


def test_layouts_are_fixed_by_the_set_and_look_like_their_kind() -> None:
    iso = copyplan.layout(CopySet("iso", 2, GiB))
    assert [n for _, n in iso.files] == [GiB // 2, GiB // 2]
    prog = CopySet("program", 600, 256 * M)
    a, b = copyplan.layout(prog), copyplan.layout(prog)
    assert a == b and a.size == 256 * M and len(a.files) == 600
    assert max(d.count("/") for d in a.dirs) >= 3  # nested folders
    sizes = sorted(n for _, n in a.files)
    assert sizes[len(sizes) // 2] < 256 * M // 600  # most files small ...
    assert sizes[-1] > 20 * sizes[len(sizes) // 2]  # ... a few large
    game = copyplan.layout(CopySet("game", 120, 768 * M))
    big = [n for _, n in game.files if n > 4 * M]
    assert len(big) == 12 and sum(big) > 0.9 * game.size  # one in ten holds most bytes
    assert len({p for p, _ in game.files}) == 120  # no two files share a path


def test_the_sets_shrink_to_a_small_volume_with_a_note() -> None:
    prof = load_profile("copy")
    (test,) = planmod.build(prof, _info(free=3 * GiB)).tests
    usable = planmod.volume_usable(3 * GiB, prof.volume.reserve)
    assert copyplan.needed(test.spec) <= usable
    assert [s.files for s in copyplan.own(test.spec).sets] == [2, 600, 120]  # counts kept
    assert all(s.size < GiB for s in copyplan.own(test.spec).sets)
    assert any("file sets shrunk to fit" in n for n in test.notes)


def test_bad_copy_profiles_are_refused_with_the_key() -> None:
    def refused(*overrides: str) -> str:
        with pytest.raises(ProfileError) as exc:
            load_profile("copy", list(overrides))
        return str(exc.value)

    assert "data_patterns" in refused('tests.copy.data_patterns=["ones"]')
    assert "compressible-NN" in refused('tests.copy.data_patterns=["compressible-100"]')
    assert "not a file set" in refused('tests.copy.sets=["dvd 2 1g"]')
    assert "at most once" in refused('tests.copy.sets=["iso 2 1g", "iso 3 1g"]')
    assert "fewer bytes than files" in refused('tests.copy.sets=["program 600 100"]')
    assert "does not apply" in refused('tests.copy.block_sizes=["4k"]')
    with pytest.raises(ProfileError, match="belongs to a copy test"):
        load_profile("ars", ['tests.4k.sets=["iso 2 1g"]'])
    with pytest.raises(ProfileError, match="volume benchmark"):
        load_profile("quick", ["tests.iops.kind=copy"])


def test_compressible_data_compresses_by_its_share() -> None:
    # the fio tests' convention (buffer_compress_percentage): compressible-75 shrinks by 75 %
    for pct in (25, 50, 75):
        buf = bytearray(M)
        fill(memoryview(buf), f"compressible-{pct}")
        ratio = len(zlib.compress(bytes(buf), 6)) / len(buf)
        assert abs(ratio - (100 - pct) / 100) < 0.03, (pct, ratio)
    buf = bytearray(M)
    fill(memoryview(buf), "random")
    assert len(zlib.compress(bytes(buf))) > 0.99 * M
    fill(memoryview(buf), "zero")
    assert bytes(buf) == bytes(M)


# --------------------------------------------------------------------------- real filesystems


def _mounted(tmp_path: Path, fs: str, size: int) -> Iterator[Path]:
    with mounted_volume(tmp_path, size, fs) as (mnt, _dev):
        yield mnt


@pytest.fixture
def ext4(tmp_path: Path) -> Iterator[Path]:
    """ext4 of 400 MiB on a loop device, mounted, with files of its own."""
    yield from _mounted(tmp_path, "ext4", 400 * M)


@pytest.fixture
def xfs(tmp_path: Path) -> Iterator[Path]:
    """XFS with reflinks (copies may share extents there), 320 MiB, mounted."""
    yield from _mounted(tmp_path, "xfs", 320 * M)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root: Path) -> dict[str, str]:
    """Every file below ``root`` with its SHA-256, by relative path."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            if not f.startswith("."):
                p = Path(dirpath) / f
                out[str(p.relative_to(root))] = _sha(p)
    return out


def _shared(path: Path) -> bool:
    """Whether any extent of the file is shared with another file (filefrag's flag)."""
    out = subprocess.run(
        ["filefrag", "-v", str(path)], check=True, capture_output=True, text=True
    ).stdout
    return any("shared" in line for line in out.splitlines()[3:])


def _resident(path: Path) -> int:
    """Pages of the file in the page cache (util-linux fincore)."""
    out = subprocess.run(
        ["fincore", "--raw", "--noheadings", "--bytes", "--output", "RES", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(out.split()[0])


def _session(tmp_path: Path, where: Path, text: str = SMALL) -> tuple[CopySession, list]:
    prof = load_profile(str(_profile(tmp_path, text)))
    (test,) = planmod.build(prof, _info()).tests
    session = CopySession(test.spec, where)
    session.prepare()
    return session, list(test.points)


@needs_root
def test_copies_are_identical_unshared_and_made_from_cold_sources(
    xfs: Path, tmp_path: Path
) -> None:
    work = xfs / "work"
    work.mkdir()
    session, points = _session(tmp_path, work)
    try:
        # the check itself: cp reflinks on XFS (its default since coreutils 9), and
        # filefrag shows the shared extents
        src = session.source("iso", "random")
        subprocess.run(
            ["cp", "--reflink=always", str(src / "iso/image-1.iso"), str(work / "ref")],
            check=True,
        )
        assert _shared(work / "ref")
        (work / "ref").unlink()
        for p in points:
            source = session.source(p.copy_set, p.data)
            _ = _tree(source)  # read every source: now in the page cache
            some = source / copyplan.layout(CopySet(p.copy_set, p.files, p.size)).files[0][0]
            assert _resident(some) > 0
            session.cool(p)  # what every copy does first
            assert _resident(some) == 0
            done = session.copy(p, keep=True)
            assert done.seconds > 0 and done.verified and done.writes >= p.files
            copied = _tree(session.destination)
            assert copied == _tree(source) and len(copied) == p.files  # byte-identical
            assert not any(_shared(session.destination / rel) for rel in copied)
            assert sum((session.destination / r).stat().st_size for r in copied) == p.size
    finally:
        session.close()
    assert os.listdir(work) == []


@needs_root
def test_a_corrupted_copy_fails_its_check(ext4: Path, tmp_path: Path) -> None:
    from tkbench.errors import DeviceError

    work = ext4 / "work"
    work.mkdir()
    session, points = _session(tmp_path, work)
    try:
        # a source changed behind the session's back: the copy no longer matches the
        # checksum the source had when it was written
        path = (
            session.source("game", "zero")
            / copyplan.layout(copyplan.own(session.spec).sets[2]).files[3][0]
        )
        with open(path, "r+b") as fh:
            fh.write(b"x")
        drop_pages(path)
        with pytest.raises(DeviceError, match="differs from its source"):
            session.copy(points[4])
    finally:
        session.close()


@needs_root
@pytest.mark.fio  # tkbench run asks fio for its version, whatever the profile
def test_the_copy_profile_reduced_touches_nothing_but_its_own_files(
    ext4: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(ext4)
    out = tmp_path / "run"
    args = ["run", "--profile", str(_profile(tmp_path)), "--target", str(ext4), "--out", str(out)]
    assert cli.main([*args, "--no-history"]) == 0
    assert _snapshot(ext4) == before  # nothing changed, nothing left behind
    capsys.readouterr()
    assert cli.main(["show", str(out), "--json"]) == 0
    (t,) = json.loads(capsys.readouterr().out)["tests"]
    assert t["kind"] == "copy" and t["status"] == "complete" and t["rounds"] == 2
    rows = {(c["set"], c["data_pattern"]): c for c in t["copies"]}
    assert set(rows) == {(s, d) for s in ("iso", "program", "game") for d in ("zero", "random")}
    for c in rows.values():
        assert c["unit"] == "MB/s" and len(c["runs"]) == 2 and all(x > 0 for x in c["runs"])
        assert c["mean"] == pytest.approx(sum(c["runs"]) / 2)
        assert c["mean_abs_dev_pct"] == pytest.approx(100 * c["mean_abs_dev"] / c["mean"])
        assert c["stdev"] is not None and c["ci95"][0] <= c["mean"] <= c["ci95"][1]
        secs = c["seconds"]["runs"]
        for mbs, s in zip(c["runs"], secs, strict=True):  # MB/s = the set's bytes / seconds
            assert mbs == pytest.approx(c["bytes"] / s / 1e6)
    assert rows[("program", "zero")]["files"] == 80
    log = (out / "tests" / "copy" / "rounds" / "0002.log").read_text()
    assert log.count("verified against the sources") == 6
    record = json.loads((out / "tests" / "copy" / "test.json").read_text())
    assert record["kind"] == "copy" and record["ioengine_used"] == "read/write"
    page = " ".join((out / "report.html").read_text().split())
    assert "File copies" in page and "Run 2" in page and "Deviation %" in page
    assert "the volume copied the iso set with zero data at" in page
    assert "1024k random" not in page  # no fio headline made up from the copies
    text = layout_text(out / "report.pdf")
    assert "File copies" in text and "s per copy" in text


@needs_root
def test_sets_too_large_for_the_volume_without_shrinking_are_refused(
    ext4: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(ext4)
    out = tmp_path / "run"
    args = ["run", "--profile", "copy", "--target", str(ext4), "--out", str(out)]
    assert cli.main([*args, "--set", "volume.shrink=false"]) == 2
    line = _one_error(capsys.readouterr().err)
    assert "needs" in line and "volume.shrink is off" in line, line
    args += ["--set", 'tests.copy.data_patterns=["zero", "ones"]']
    assert cli.main(args) == 2
    assert "not a data pattern" in _one_error(capsys.readouterr().err)
    assert _snapshot(ext4) == before and not out.exists()
    # with shrinking (the default) the plan fits the sets to the volume and says so
    args = ["plan", "--profile", "copy", "--target", str(ext4)]
    args += ["--set", "volume.reserve=1M", "--set", "volume.min_file_size=1M"]
    assert cli.main(args) == 0
    shown = capsys.readouterr().out
    assert "file sets shrunk to fit the volume" in shown and "Estimated duration" in shown


def _wait(what: Callable[[], bool], timeout: float, why: str) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        if time.monotonic() > deadline:
            pytest.fail(why)
        time.sleep(0.005)


@needs_root
@pytest.mark.fio
def test_a_run_killed_mid_copy_resumes(ext4: Path, tmp_path: Path) -> None:
    before = _snapshot(ext4)
    text = SMALL.replace('"iso 2 12m", "program 80 3m", "game 30 9m"', '"iso 2 48m", "game 40 24m"')
    prof = _profile(tmp_path, text.replace("repeat = 2", "repeat = 3"))
    out = tmp_path / "run"
    tkbench = str(Path(sys.executable).parent / "tkbench")
    cmd = [tkbench, "run", "--profile", str(prof), "--target", str(ext4), "--out", str(out)]
    cmd += ["--no-history", "--no-report"]
    rounds = out / "tests" / "copy" / "rounds"
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait(lambda: (rounds / "0001.json").exists(), 60, "the first run was never stored")
        first = (rounds / "0001.json").read_text()

        def copying() -> bool:
            return any((d / "copy" / "dst").exists() for d in ext4.glob(f"{PREFIX}*"))

        _wait(copying, 60, "the second run never started a copy")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert not (rounds / "0002.json").exists()  # killed mid-copy: the second run is lost
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"
    resumed = subprocess.run(
        [tkbench, "run", "--resume", str(out), "--no-history", "--no-report"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert (rounds / "0001.json").read_text() == first  # the stored run is kept as it was
    assert sorted(p.name for p in rounds.glob("*.json")) == ["0001.json", "0002.json", "0003.json"]
    log = (out / "events.log").read_text()
    assert "resume copy: continue (1 complete round(s) kept)" in log
    assert "reusing the complete iso set (random)" in log  # the killed run's sources
    assert _snapshot(ext4) == before  # the dead run's directory went too
    show = subprocess.run(
        [tkbench, "show", str(out), "--json"], capture_output=True, text=True, check=True
    )
    (t,) = json.loads(show.stdout)["tests"]
    assert t["status"] == "complete" and all(len(c["runs"]) == 3 for c in t["copies"])


_COPY_SCRIPT = """
import sys
import tempfile
from pathlib import Path
from tkbench.plan import build as plan
from tkbench.kinds.copyrun import CopySession
from tkbench.profile.build import load as load_profile
prof = load_profile(sys.argv[1])
info = plan.TargetInfo("/srv/data", "volume", 1 << 40, 512, 1 << 40, True)
(test,) = plan.build(prof, info).tests
session = CopySession(test.spec, Path(sys.argv[2]))
session.prepare()
for p in test.points:
    session.copy(p)
session.close()
"""


def test_the_copy_makes_no_system_call_that_copies_in_the_kernel(tmp_path: Path) -> None:
    """strace of a whole copy session: read()/write() only; Python's own shutil, the
    control, copies with sendfile."""
    calls = "trace=readv,write,sendfile,copy_file_range,ioctl"
    work = tmp_path / "work"
    work.mkdir()
    trace = tmp_path / "copy.strace"
    cmd = ["strace", "-f", "-qq", "-e", calls, "-o", str(trace), sys.executable, "-c"]
    subprocess.run([*cmd, _COPY_SCRIPT, str(_profile(tmp_path)), str(work)], check=True)
    seen = trace.read_text()
    assert seen.count("readv(") > 100  # the copies' reads
    for call in ("sendfile(", "copy_file_range(", "FICLONE", "BTRFS_IOC_CLONE"):
        assert call not in seen, call
    assert os.listdir(work) == []
    (work / "a").write_bytes(os.urandom(100_000))
    control = "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])"
    subprocess.run([*cmd, control, str(work / "a"), str(work / "b")], check=True)
    assert "sendfile(" in trace.read_text() or "copy_file_range(" in trace.read_text()


@needs_root
def test_drop_caches_empties_the_whole_page_cache_before_a_copy(ext4: Path, tmp_path: Path) -> None:
    """With drop_caches the kernel's caches go too: a file outside the test's own
    (read into the cache here) is no longer cached once the copy's first step ran."""
    work = ext4 / "work"
    work.mkdir()
    text = SMALL + "drop_caches = true\n"
    session, points = _session(tmp_path, work, text)
    try:
        other = ext4 / "photos" / "a.jpg"
        other.read_bytes()
        assert _resident(other) > 0
        session.cool(points[0])
        assert _resident(other) == 0
        assert session.copy(points[0]).verified
    finally:
        session.close()


@needs_root
def test_drop_caches_without_root_is_refused_before_anything(tmp_path: Path) -> None:
    """Run as nobody (setpriv): one line, exit 2, nothing written."""
    place = Path(tempfile.mkdtemp(prefix="tkbench-nobody-"))
    try:
        place.chmod(0o777)
        vol = place / "vol"
        vol.mkdir(mode=0o777)
        vol.chmod(0o777)
        cmd = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
        cmd += [str(Path(sys.executable).parent / "tkbench"), "run", "--profile", "copy"]
        cmd += ["--target", str(vol), "--out", str(place / "run"), "--no-history"]
        cmd += ["--set", "tests.copy.drop_caches=true", "--set", "volume.reserve=1M"]
        cmd += ["--set", 'tests.copy.sets=["iso 2 4m"]']
        env = {"PATH": "/usr/bin:/bin", "HOME": str(place), "XDG_CONFIG_HOME": "/nonexistent"}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 2, done.stderr
        assert "only root may do" in _one_error(done.stderr)
        assert os.listdir(vol) == [] and not (place / "run").exists()
    finally:
        shutil.rmtree(place, ignore_errors=True)
