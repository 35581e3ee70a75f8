"""A regular file as a target: created by tkbench (O_EXCL, never over anything),
purged by punching a hole, identified by its path on its filesystem."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tkbench.device.purge import PurgeRecord
from tkbench.device.safety import Guarded
from tkbench.errors import DeviceError, InputError, SafetyError
from tkbench.units import human_bytes

if TYPE_CHECKING:
    pass


from tkbench.targets.base import Target, _record
from tkbench.targets.mounts import filesystem_serial


@dataclass
class FileTarget(Target):
    """A regular file, created at ``--size`` if missing (after the guards passed)."""

    kind: ClassVar[str] = "file"
    marks_own_data: ClassVar[bool] = True
    no_write_cache: ClassVar[str] = "a regular file has no drive write cache of its own"
    missing: bool = False  # still to be created

    def check(self, *, force: bool = False) -> Guarded:
        """A file still to be created must fit its filesystem's free space; an existing
        one also gets the checks of :meth:`Target.check`."""
        _check_space(Path(self.path), self.capacity, new=self.missing)
        return Guarded() if self.missing else super().check(force=force)

    @contextlib.contextmanager
    def materialized(self) -> Iterator[None]:
        """Create a missing file at its size (sparse) for the body, which prepares the
        run; the file is removed again if the body fails, so a run that cannot start
        leaves no file behind -- only the very file created here (its device and
        inode, the file held open meanwhile so its inode cannot be another's), never
        one that took its place."""
        if not self.missing:
            yield
            return
        path = Path(self.path)
        fd = _create(path, self.capacity)
        self.missing = False
        try:
            yield
        except BaseException:
            _remove_created(path, fd)
            self.missing = True
            raise
        finally:
            os.close(fd)

    def _purge(self, method: str, allow_fallback: bool, t0: float) -> PurgeRecord:
        """Deallocate every block of the file (the filesystem discards them) without
        changing its size: a hole punched over all of it.  The file is never shrunk,
        so an interrupt at any instant leaves it at its size, which a resume takes
        (docs/resume.md).  A filesystem that cannot punch holes gets zeros written."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError as exc:
            raise DeviceError(f"{self.path}: cannot purge file: {exc.strerror}") from None
        try:
            how = _punch_hole(fd, self.capacity)
            os.fsync(fd)
        except OSError as exc:
            raise DeviceError(f"{self.path}: cannot purge file: {exc.strerror}") from None
        finally:
            os.close(fd)
        return _record(
            "file-recreate",
            False,
            [],
            t0,
            [f"regular file's blocks {how}, its size kept: not a drive purge"],
        )


FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02


def _punch_hole(fd: int, size: int) -> str:
    """Deallocate ``size`` bytes of ``fd`` from its start, keeping the file's size:
    ``fallocate(PUNCH_HOLE|KEEP_SIZE)``; where the filesystem cannot, zeros are
    written over it.  Returns how (for the purge record)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    # the 64-bit offset variant where off_t may be 32 bits (glibc on 32-bit hosts)
    fallocate = getattr(libc, "fallocate64", None) or libc.fallocate
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    if fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, size) == 0:
        return "deallocated (hole punched)"
    err = ctypes.get_errno()
    if err not in (errno.EOPNOTSUPP, errno.ENOSYS):
        raise OSError(err, os.strerror(err))
    zeros = bytes(1 << 20)
    for offset in range(0, size, len(zeros)):
        os.pwrite(fd, zeros[: min(len(zeros), size - offset)], offset)
    return "overwritten with zeros (the filesystem cannot punch holes)"


def _create_file(path: Path, size: int | None) -> Target:
    """A target for a file that does not exist yet; ``materialized()`` creates it."""
    if size is None:
        raise InputError(f"target {path} does not exist; give --size to create it")
    if size <= 0:
        raise InputError("--size must be positive")
    if os.path.abspath(path).startswith("/dev/"):
        raise InputError(f"target {path}: no such device (tkbench creates files, not devices)")
    if not path.parent.is_dir():
        raise InputError(f"target {path}: directory {path.parent} does not exist")
    if os.path.lexists(path):  # stat() found nothing there: a link to a missing file
        raise SafetyError(
            f"target {path} is a symbolic link to a missing file; tkbench creates a new "
            "file target itself, never through a link (give the link's target, or remove it)"
        )
    resolved = path.parent.resolve() / path.name
    ident = _file_identity(resolved, size, path.parent)
    return FileTarget(str(path), str(resolved), size, 512, ident, missing=True)


def _resize(path: Path, size: int, new: bool = False) -> None:
    """Set an existing file's size, or create a new one at ``size`` (:func:`_create`)."""
    if new:
        os.close(_create(path, size))
        return
    try:
        with open(path, "r+b") as fh:
            os.ftruncate(fh.fileno(), size)
    except OSError as exc:
        raise InputError(
            f"target {path}: cannot resize to {human_bytes(size)}: {exc.strerror}"
        ) from None


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def _create(path: Path, size: int) -> int:
    """Create the new file ``path`` at ``size`` (sparse): ``O_CREAT|O_EXCL|O_NOFOLLOW`` in
    its directory, so whatever is there already -- a file made meanwhile, a link -- is
    refused and left as it is.  Returns the new file open for writing (the caller
    closes it); a file made here that cannot take its size is removed again
    (:func:`_remove_created`)."""
    try:
        dfd = os.open(path.parent, _DIR_FLAGS)
    except OSError as exc:
        raise InputError(f"target {path}: {path.parent}: {exc.strerror}") from None
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path.name, flags, 0o666, dir_fd=dfd)
    except FileExistsError:
        raise InputError(
            f"target {path} appeared before tkbench could create it (another program "
            "made it); it was left as it is"
        ) from None
    except OSError as exc:
        raise InputError(f"target {path}: cannot create it: {exc.strerror}") from None
    finally:
        os.close(dfd)
    try:
        os.ftruncate(fd, size)
    except OSError as exc:
        # leave nothing behind: an empty file would confuse the next attempt
        _remove_created(path, fd)
        os.close(fd)
        raise InputError(
            f"target {path}: cannot create a {human_bytes(size)} file: {exc.strerror}"
        ) from None
    return fd


def _remove_created(path: Path, fd: int) -> None:
    """Remove the file tkbench created at ``path`` and holds open as ``fd`` -- only if
    the path still names that very file (its st_dev and st_ino: while it is open, no
    other file can have them), never what replaced it."""
    try:
        dfd = os.open(path.parent, _DIR_FLAGS)
    except OSError:
        return
    try:
        mine = os.fstat(fd)
        st = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
        if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
            os.unlink(path.name, dir_fd=dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _check_space(path: Path, size: int, *, new: bool) -> None:
    """Refuse a regular-file target that its filesystem cannot hold: preconditioning
    writes every block of it, so a sparse file larger than the free space would fill
    the filesystem before fio fails."""
    where = path.parent if new else path
    try:
        fs = os.statvfs(where)
        allocated = 0 if new else os.stat(path).st_blocks * 512
    except OSError as exc:
        raise InputError(f"target {path}: {exc.strerror}") from None
    free = fs.f_bavail * fs.f_frsize
    if size - allocated > free:
        raise InputError(
            f"target {path}: {human_bytes(size)} does not fit: its filesystem has "
            f"{human_bytes(free)} free"
            + ("" if new else f" and the file holds {human_bytes(allocated)} of it")
        )


def check_direct_io(path: str) -> None:
    """Refuse O_DIRECT on a filesystem that cannot do it (tmpfs), with a hint."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            raise InputError(
                f"target {path}: its filesystem does not support direct I/O; "
                "put the file elsewhere or pass --set workload.direct=false"
            ) from None
        raise InputError(f"target {path}: {exc.strerror}") from None
    os.close(fd)


def _file_identity(path: Path, size: int, where: Path | None = None) -> dict[str, Any]:
    """A regular file's identity.  Its serial, which tells it from every other file
    target night after night (the history's "drive"), is its resolved path on its
    filesystem's UUID (else the filesystem's source and mount point,
    :func:`tkbench.targets.volume.volume_serial`); its inode is recorded beside it (not in
    the serial: a file created by its first run has none yet, and a file made anew
    at the same path is still the lab's same target)."""
    st = (where or path).stat()
    extra: dict[str, Any] = {} if where is not None else {"inode": st.st_ino}
    st_dev = st.st_dev
    return {
        "kind": "file",
        "path": str(path),
        "model": "regular file",
        "serial": f"{path} on {filesystem_serial(st_dev)}",
        **extra,
        "firmware": "unknown",
        "capacity_bytes": size,
        "logical_sector": 512,
        "physical_sector": 512,
        "interface": "file",
        "filesystem_device": f"{os.major(st_dev)}:{os.minor(st_dev)}",
        "notes": ["a regular file: results reflect the filesystem and the drive beneath it"],
    }
