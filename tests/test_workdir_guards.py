"""A volume's working directories: made under a new name only, reused on ``--resume``
only when proven the run's own, cleaned without following a link or entering a mount.

The attacks are real: a second user (nobody, through ``setpriv``) plants directories in
a sticky world-writable directory, a bind mount sits inside a working directory, a
name is already taken.  Everything outside what tkbench made is compared byte for
byte and by file type, owner and mode before and after.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._helpers import start_tkbench
from tkbench.errors import SafetyError
from tkbench.rundir.records.run import Manifest
from tkbench.rundir.store import RunStore
from tkbench.targets.volume import MARKER, PREFIX, VolumeTarget, find_workdirs, open_volume

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="a second user and mounts need root")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def tree_state(*roots: Path) -> dict[str, tuple[object, ...]]:
    """Every path below (and at) ``roots``: its type, owner, mode and content (a
    checksum; a link's target), never following a link."""
    out: dict[str, tuple[object, ...]] = {}

    def one(p: str) -> None:
        st = os.lstat(p)
        kind = stat.S_IFMT(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            what: object = os.readlink(p)
        elif stat.S_ISREG(st.st_mode):
            with open(p, "rb") as fh:
                what = hashlib.sha256(fh.read()).hexdigest()
        else:
            what = None
        out[p] = (kind, st.st_uid, stat.S_IMODE(st.st_mode), what)

    for root in roots:
        one(str(root))
        for dirpath, dirs, files in os.walk(root):
            for n in dirs + files:
                one(os.path.join(dirpath, n))
    return out


@pytest.fixture
def shared() -> Iterator[Path]:
    """``BASE/shared``: a sticky world-writable directory (as /tmp is), in a base any
    user can reach; BASE also holds root's own files."""
    base = Path(tempfile.mkdtemp(prefix="tkbench-guards-", dir="/tmp"))
    os.chmod(base, 0o755)
    d = base / "shared"
    d.mkdir()
    os.chmod(d, 0o1777)
    try:
        yield d
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _as_nobody(script: str, *args: str) -> None:
    subprocess.run([*NOBODY, sys.executable, "-c", textwrap.dedent(script), *args], check=True)


def _run_dir(where: Path) -> Path:
    """A run directory with a manifest (its run id) as ``tkbench run`` makes it."""
    out = where / "run"
    RunStore.create(out, Manifest(run_id="0b7e3c52-0000-4000-8000-000000000001"))
    return out


def _dead_workdir(vol: Path, run_dir: Path) -> Path:
    """The working directory of a run that died (the process entered the workspace and
    was gone without a word: ``kill -9``)."""
    before = {p.name for p in vol.iterdir()}
    code = (
        "import os, sys\nfrom pathlib import Path\nfrom tkbench.targets.volume import open_volume\n"
        "t = open_volume(sys.argv[1], Path(sys.argv[1]))\n"
        "cm = t.workspace(Path(sys.argv[2]))\ncm.__enter__()\n"
        "(t.workdir / 'job.0.0').write_bytes(b'x' * 8192)\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(vol), str(run_dir)], check=True)
    (made,) = [p for p in vol.iterdir() if p.name not in before]
    return made


PLANT = """
    import json, os, sys
    shared, run_dir, run_id, victim, host = sys.argv[1:6]
    for i in range(3):
        d = os.path.join(shared, f"tkbench-20000101-000000-{i}")
        os.mkdir(d, 0o755)
        st = os.stat(d)
        marker = {"run_dir": run_dir, "run_id": run_id, "pid": 999999, "host": host,
                  "dev": st.st_dev, "ino": st.st_ino}
        with open(os.path.join(d, ".tkbench-workdir.json"), "w") as fh:
            json.dump(marker, fh)
        for name in (".tkbench-workdir.json.tmp", "job.0.0", "job.1.0"):
            os.symlink(victim, os.path.join(d, name))
"""


@needs_root
def test_directories_planted_by_another_user_are_refused_and_nothing_touched(
    shared: Path, tmp_path: Path
) -> None:
    run_dir = _run_dir(tmp_path)
    real = _dead_workdir(shared, run_dir)
    victim = shared.parent / "root-file"
    victim.write_bytes(b"root's own data\n" * 100)
    _as_nobody(
        PLANT,
        str(shared),
        str(run_dir.resolve()),
        Manifest.load_checked(json.loads((run_dir / "manifest.json").read_text()), run_dir).run_id
        or "",
        str(victim),
        os.uname().nodename,
    )
    planted = [p for p in shared.iterdir() if p.stat().st_uid == 65534]
    assert len(planted) == 3
    before = tree_state(shared.parent)
    target = open_volume(str(shared), shared)
    assert isinstance(target, VolumeTarget)
    with pytest.raises(SafetyError, match="owned by uid 65534") as err, target.workspace(run_dir):
        pass
    assert "\n" not in str(err.value)
    assert tree_state(shared.parent) == before  # nothing written, nothing removed
    assert victim.read_bytes() == b"root's own data\n" * 100
    assert real.is_dir() and (real / "job.0.0").stat().st_size == 8192

    # once the planted directories are gone (their owner removes them) the run's own
    # working directory is proven and reused
    _as_nobody("import shutil, sys\nfor d in sys.argv[1:]: shutil.rmtree(d)", *map(str, planted))
    with target.workspace(run_dir):
        assert target.workdir == real
    assert not real.exists() and victim.read_bytes() == b"root's own data\n" * 100


def _world_writable(d: Path) -> str:
    os.chmod(d, 0o777)
    return "writable by others"


def _link_inside(d: Path) -> str:
    (d / "job.1.0").symlink_to(d.parent.parent / "root-file")
    return "is a symbolic link"


def _copied(d: Path) -> str:
    copy = d.with_name(d.name + "-copy")
    subprocess.run(["cp", "-a", str(d), str(copy)], check=True)
    shutil.rmtree(d)
    return "device or inode differs"


def _given_away(d: Path) -> str:
    os.chown(d, 65534, 65534)
    return "owned by uid 65534"


def _foreign_file(d: Path) -> str:
    os.chown(d / "job.0.0", 65534, 65534)
    return "job.0.0 is owned by uid 65534"


@needs_root
@pytest.mark.parametrize(
    "spoil", [_world_writable, _link_inside, _copied, _given_away, _foreign_file]
)
def test_a_working_directory_not_proven_the_runs_is_refused(
    shared: Path, tmp_path: Path, spoil: object
) -> None:
    run_dir = _run_dir(tmp_path)
    real = _dead_workdir(shared, run_dir)
    (shared.parent / "root-file").write_bytes(b"keep\n")
    assert callable(spoil)
    why = spoil(real)
    before = tree_state(shared.parent)
    target = open_volume(str(shared), shared)
    with pytest.raises(SafetyError, match=why), target.workspace(run_dir):
        pass
    assert tree_state(shared.parent) == before


def test_a_name_already_taken_is_never_reused_nor_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs with one pid in one second (containers): the second one's name exists."""
    vol = tmp_path / "vol"
    vol.mkdir()
    monkeypatch.setattr(time, "strftime", lambda fmt, *a: "20260101-000000")
    tokens = iter(["aaaaaaaa", "bbbbbbbb"])
    monkeypatch.setattr("secrets.token_hex", lambda n=None: next(tokens))
    stamp = f"{PREFIX}20260101-000000-{os.getpid()}"
    taken = [vol / stamp, vol / f"{stamp}-aaaaaaaa"]
    for d in taken:
        d.mkdir()
        (d / "theirs").write_bytes(b"another run's file\n")
        (d / MARKER).write_text(json.dumps({"run_dir": "/elsewhere", "pid": os.getpid()}))
    before = tree_state(*taken)
    target = open_volume(str(vol), vol)
    with pytest.raises(RuntimeError), target.workspace(tmp_path / "run"):
        assert target.workdir is not None and target.workdir not in taken
        raise RuntimeError("the run fails")  # the error path
    assert tree_state(*taken) == before
    assert sorted(vol.iterdir()) == sorted(taken)


@contextlib.contextmanager
def _bind(source: Path, where: Path) -> Iterator[None]:
    where.mkdir()
    subprocess.run(["mount", "--bind", str(source), str(where)], check=True)
    try:
        yield
    finally:
        subprocess.run(["umount", str(where)], check=False)


def _elsewhere(tmp_path: Path) -> Path:
    other = tmp_path / "other"  # the same filesystem: only the mount table tells
    (other / "sub").mkdir(parents=True)
    (other / "a").write_bytes(os.urandom(5000))
    (other / "sub" / "b").write_bytes(b"bbb")
    (other / "sub" / "link").symlink_to(other / "a")
    return other


@needs_root
def test_cleaning_a_stale_working_directory_leaves_a_bind_mount_alone(tmp_path: Path) -> None:
    vol = tmp_path / "vol"
    vol.mkdir()
    other = _elsewhere(tmp_path)
    stale = _dead_workdir(vol, tmp_path / "dead-run")
    # a run long gone with a bind mount of another directory inside: cleaning it
    # removed the files behind the mount too
    before = tree_state(other)
    with _bind(other, stale / "mnt"):
        target = open_volume(str(vol), vol)
        logged: list[str] = []
        target.log = logged.append
        with target.workspace(tmp_path / "new-run"):
            pass
        assert tree_state(other) == before
        assert (stale / "mnt" / "a").is_file()
    assert tree_state(other) == before
    assert any("left" in m and str(stale) in m for m in logged), logged


@needs_root
def test_the_end_of_run_cleanup_leaves_a_bind_mount_and_a_links_target_alone(
    tmp_path: Path,
) -> None:
    vol = tmp_path / "vol"
    vol.mkdir()
    other = _elsewhere(tmp_path)
    before = tree_state(other)
    target = open_volume(str(vol), vol)
    logged: list[str] = []
    target.log = logged.append
    with contextlib.ExitStack() as stack:
        with target.workspace(tmp_path / "run"):
            wd = target.workdir
            assert wd is not None
            (wd / "job.0.0").write_bytes(b"x" * 4096)
            (wd / "link").symlink_to(other)
            stack.enter_context(_bind(other, wd / "d"))
        assert tree_state(other) == before
        assert not (wd / "job.0.0").exists() and not (wd / "link").is_symlink()
        assert (wd / "d" / "sub" / "b").read_bytes() == b"bbb"
        assert any("left in place" in m and str(wd / "d") in m for m in logged), logged
    assert tree_state(other) == before


def test_a_marker_that_is_a_fifo_is_no_marker(tmp_path: Path) -> None:
    """Finding working directories never blocks on a FIFO planted as a marker."""
    d = tmp_path / f"{PREFIX}fifo"
    d.mkdir()
    os.mkfifo(d / MARKER)
    pid = os.fork()
    if pid == 0:  # a child: the parent cannot hang if it does
        found = find_workdirs(tmp_path)
        os._exit(0 if found == [] else 1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("reading a FIFO planted as a marker blocked")


@needs_root
@pytest.mark.fio
def test_resume_refuses_a_planted_directory_end_to_end(shared: Path, tmp_path: Path) -> None:
    """A real volume run on a sticky shared directory, killed outright; another user
    plants directories claiming it, with links to a root-owned file; ``run --resume``
    refuses in one line (exit 3) and writes nothing; once they are gone it resumes."""
    from tests.test_volume import SMALL
    from tkbench.engine.runs import stop_leftovers

    prof = tmp_path / "small.toml"
    prof.write_text(SMALL, encoding="utf-8")
    out = tmp_path / "run"
    opts = ("--no-history", "--no-report")
    proc = start_tkbench(
        "run", "--profile", str(prof), "--target", str(shared), "--out", str(out), *opts
    )
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("tests/*/rounds/*.json")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # fio runs in a session of its own and outlives a tkbench killed outright (its
    # round started ahead, too): stop it as a crash of the machine would, so that the
    # files are still from here on and only the resume could change them
    stop_leftovers(out)
    (real,) = list(shared.iterdir())
    victim = shared.parent / "root-file"
    victim.write_bytes(b"root's own data\n" * 100)
    os.chmod(victim, 0o644)
    manifest = json.loads((out / "manifest.json").read_text())
    args = [str(shared), str(out.resolve()), manifest["run_id"], str(victim), os.uname().nodename]
    _as_nobody(PLANT, *args)
    planted = [p for p in shared.iterdir() if p != real]
    assert len(planted) == 3
    before = tree_state(shared.parent)

    proc = start_tkbench("run", "--resume", str(out), *opts)
    _, err = proc.communicate(timeout=300)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert proc.returncode == 3, err
    assert len(lines) == 1 and "refusing to reuse" in lines[0] and "uid 65534" in lines[0], err
    assert tree_state(shared.parent) == before
    assert victim.read_bytes() == b"root's own data\n" * 100

    _as_nobody("import shutil, sys\nfor d in sys.argv[1:]: shutil.rmtree(d)", *map(str, planted))
    proc = start_tkbench("run", "--resume", str(out), *opts)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert list(shared.iterdir()) == []  # its working directory reused, then removed
    assert f"reusing the working directory {real}" in (out / "events.log").read_text()
    assert victim.read_bytes() == b"root's own data\n" * 100
