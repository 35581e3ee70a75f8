"""One tkbench run per device at a time.

:class:`DeviceLock` takes an exclusive ``flock`` on a file under
``/run/lock/tkbench`` (or ``$TMPDIR/tkbench-locks`` when that is not writable)
named after the device's major:minor, or after the resolved path of a regular
file.  The kernel drops a flock when its holder exits, however it exits, so a
crash or ``kill -9`` never leaves a stale lock.  The holder's pid is written
into the file only to name it in the refusal message; the lock itself is the
flock, not the file's existence.  Release removes the file while still holding
the lock, and acquire re-checks after locking that the path still names the
inode it locked, so removal never lets two runs hold the "same" lock.  After
a crash the file stays behind, unlocked, and is simply reused.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path
from types import TracebackType

from tkbench.errors import SafetyError

RUN_LOCK_DIR = Path("/run/lock/tkbench")


def default_lock_dir() -> Path:
    """``/run/lock/tkbench`` when usable, else ``$TMPDIR/tkbench-locks``."""
    candidates = (RUN_LOCK_DIR, Path(tempfile.gettempdir()) / "tkbench-locks")
    for cand in candidates:
        try:
            if not cand.is_dir():
                cand.mkdir(mode=0o755)
                # Shared by every user's runs on regular files: sticky like /tmp.
                os.chmod(cand, 0o1777)
        except OSError:
            continue
        if os.access(cand, os.W_OK | os.X_OK):
            return cand
    raise SafetyError("no writable lock directory: " + " or ".join(str(c) for c in candidates))


def lock_name(path: str | os.PathLike[str]) -> str:
    """File name of the lock for ``path``: ``block-MAJ-MIN.lock`` for a block
    device, ``file-<path>-<hash>.lock`` for anything else."""
    spath = os.fspath(path)
    try:
        st = os.stat(spath)
    except OSError:
        st = None
    if st is not None and stat.S_ISBLK(st.st_mode):
        return f"block-{os.major(st.st_rdev)}-{os.minor(st.st_rdev)}.lock"
    if st is not None and stat.S_ISREG(st.st_mode):
        # by inode: two names of one file (hard links) are one target
        return f"inode-{os.major(st.st_dev)}-{os.minor(st.st_dev)}-{st.st_ino}.lock"
    real = os.path.realpath(spath)
    digest = hashlib.sha256(real.encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", real).strip("_")[-80:]
    return f"file-{slug}-{digest}.lock"


class DeviceLock:
    """``with DeviceLock(path):`` -- hold the device for this process.

    A second acquirer (any process, including this one through another
    DeviceLock) gets :class:`SafetyError` naming the holder's pid.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, lock_dir: str | os.PathLike[str] | None = None
    ) -> None:
        self.path = os.fspath(path)
        base = Path(lock_dir) if lock_dir is not None else default_lock_dir()
        self.lock_path = base / lock_name(self.path)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> DeviceLock:
        if self._fd is not None:
            return self
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(20):
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise SafetyError(
                        f"{self.path} is in use by another tkbench run (pid {self._holder_pid()})"
                    ) from None
                raise SafetyError(f"cannot lock {self.path} ({self.lock_path}): {exc}") from exc
            # The previous holder may have removed the file between our open
            # and our flock: then we locked an orphan inode; start over.
            if self._is_current(fd):
                break
            os.close(fd)
        else:
            raise SafetyError(f"cannot lock {self.path}: {self.lock_path} keeps changing")
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def _open(self) -> int:
        try:
            return os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except PermissionError:
            # Created by another user in a shared directory: flock works on a
            # read-only descriptor too; only the pid cannot be written.
            return os.open(self.lock_path, os.O_RDONLY | os.O_CLOEXEC)

    def _is_current(self, fd: int) -> bool:
        try:
            on_disk = os.stat(self.lock_path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (on_disk.st_dev, on_disk.st_ino) == (mine.st_dev, mine.st_ino)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        # Remove the file while still holding the lock, so nobody can lock
        # this inode after us unnoticed (acquire() re-checks the path).
        with contextlib.suppress(OSError):
            os.unlink(self.lock_path)
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def _holder_pid(self) -> str:
        try:
            text = self.lock_path.read_text().strip()
        except OSError:
            return "unknown"
        return text if text.isdigit() else "unknown"

    def __enter__(self) -> DeviceLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __del__(self) -> None:
        # Defensive: an unreleased lock is dropped with its descriptor anyway.
        if getattr(self, "_fd", None) is not None:
            self.release()
