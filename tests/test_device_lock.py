"""DeviceLock: one run per device, held by the process, never stale."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.helpers import LoopDevices

from tkbench.device import DeviceLock, default_lock_dir
from tkbench.device.lock import lock_name
from tkbench.errors import SafetyError

REPO = Path(__file__).resolve().parent.parent

HOLDER = textwrap.dedent(
    """
    import sys, time
    from tkbench.device import DeviceLock
    lock = DeviceLock(sys.argv[1], lock_dir=sys.argv[2]).acquire()
    print("locked", flush=True)
    time.sleep(120)
    """
)


class Holder:
    """A second, real python process holding a DeviceLock."""

    def __init__(self, target: str, lock_dir: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, target, str(lock_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "locked":
            self.stop()
            raise AssertionError(f"holder did not lock: {line!r} {self.proc.stderr}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()


@pytest.fixture
def holders() -> Iterator[list[Holder]]:
    started: list[Holder] = []
    yield started
    for h in started:
        h.stop()


@pytest.mark.root
def test_lock_file_named_after_major_minor(loops: LoopDevices, tmp_path: Path) -> None:
    dev = loops.create(8)
    st = os.stat(dev)
    with DeviceLock(dev, lock_dir=tmp_path / "locks") as lock:
        assert lock.lock_path.name == f"block-{os.major(st.st_rdev)}-{os.minor(st.st_rdev)}.lock"
        assert lock.lock_path.read_text().strip() == str(os.getpid())
        assert lock.held
    assert not lock.held
    assert not lock.lock_path.exists()  # released: removed, no pid left behind


@pytest.mark.root
def test_same_device_through_another_path_is_the_same_lock(
    loops: LoopDevices, tmp_path: Path
) -> None:
    dev = loops.create(8)
    link = tmp_path / "alias"
    link.symlink_to(dev)
    with DeviceLock(dev, lock_dir=tmp_path), pytest.raises(SafetyError, match="in use"):
        DeviceLock(link, lock_dir=tmp_path).acquire()


@pytest.mark.root
def test_second_process_refused_and_crash_leaves_no_stale_lock(
    loops: LoopDevices, tmp_path: Path, holders: list[Holder]
) -> None:
    dev = loops.create(8)
    locks = tmp_path / "locks"
    holder = Holder(dev, locks)
    holders.append(holder)
    with pytest.raises(SafetyError) as err:
        DeviceLock(dev, lock_dir=locks).acquire()
    assert str(err.value) == f"{dev} is in use by another tkbench run (pid {holder.pid})"
    holder.kill9()  # crash: no cleanup code runs in the holder
    lock_file = DeviceLock(dev, lock_dir=locks).lock_path
    assert lock_file.read_text().strip() == str(holder.pid)  # left behind, but unlocked
    with DeviceLock(dev, lock_dir=locks) as lock:
        assert lock.lock_path.read_text().strip() == str(os.getpid())


def test_second_lock_in_same_process_refused(tmp_path: Path) -> None:
    target = tmp_path / "t.img"
    target.write_bytes(b"x")
    first = DeviceLock(target, lock_dir=tmp_path / "locks").acquire()
    try:
        with pytest.raises(SafetyError, match=rf"pid {os.getpid()}\)"):
            DeviceLock(target, lock_dir=tmp_path / "locks").acquire()
    finally:
        first.release()
    DeviceLock(target, lock_dir=tmp_path / "locks").acquire().release()


def test_regular_file_lock_follows_resolved_path(tmp_path: Path) -> None:
    target = tmp_path / "data" / "t.img"
    target.parent.mkdir()
    target.write_bytes(b"x")
    alias = tmp_path / "alias.img"
    alias.symlink_to(target)
    assert lock_name(target) == lock_name(alias)
    # an existing file is locked by its inode (hard links are one target); a file
    # still to be made by its resolved path
    assert lock_name(target) == f"inode-{os.major(target.stat().st_dev)}-" + (
        f"{os.minor(target.stat().st_dev)}-{target.stat().st_ino}.lock"
    )
    assert lock_name(tmp_path / "new.img").startswith("file-")
    assert lock_name(target) != lock_name(tmp_path / "other.img")
    with DeviceLock(alias, lock_dir=tmp_path), pytest.raises(SafetyError):
        DeviceLock(target, lock_dir=tmp_path).acquire()


def test_lock_on_a_removed_inode_is_not_trusted(tmp_path: Path) -> None:
    # A run that opened the lock file just before the holder released (and
    # removed) it would flock an orphan inode; acquire() must notice.
    lock = DeviceLock(tmp_path / "t.img", lock_dir=tmp_path / "locks")
    lock.lock_path.parent.mkdir()
    fd = lock._open()
    try:
        assert lock._is_current(fd)
        os.unlink(lock.lock_path)
        assert not lock._is_current(fd)
        lock.lock_path.touch()  # a newer file of the same name
        assert not lock._is_current(fd)
    finally:
        os.close(fd)
    with lock:
        assert lock._fd is not None and lock._is_current(lock._fd)


def test_lock_released_when_block_raises(tmp_path: Path) -> None:
    target = tmp_path / "t.img"
    with pytest.raises(RuntimeError), DeviceLock(target, lock_dir=tmp_path):
        raise RuntimeError("boom")
    with DeviceLock(target, lock_dir=tmp_path):
        pass


def test_second_process_on_regular_file(tmp_path: Path, holders: list[Holder]) -> None:
    target = tmp_path / "t.img"
    holder = Holder(str(target), tmp_path / "locks")
    holders.append(holder)
    with pytest.raises(SafetyError, match=f"pid {holder.pid}"):
        DeviceLock(target, lock_dir=tmp_path / "locks").acquire()
    holder.kill9()
    DeviceLock(target, lock_dir=tmp_path / "locks").acquire().release()


def test_default_lock_dir_is_writable() -> None:
    d = default_lock_dir()
    assert d.is_dir() and os.access(d, os.W_OK)
    assert d.name in ("tkbench", "tkbench-locks")
