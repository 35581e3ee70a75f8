"""Volume mode: benchmarks of a directory on a mounted filesystem (docs/volume.md).

A :class:`VolumeTarget` is a directory.  tkbench writes nothing in it but its own
working directory, ``tkbench-<date>-<time>-<pid>-<random>/``, made (``mkdir`` of a
new name, never an existing one) when the run starts and removed when it ends (also
after an error or Ctrl-C).  A marker file in it names the run (its directory and
id), the host, the pid and the working directory's own device and inode, so a
working directory left by a run that died (``kill -9``, a crash, a power cut) is
recognised: the next run on the directory removes it, or reuses it when it resumes
that very run -- only when the marker, the owner, the mode and the contents prove it
is that run's (:func:`unproven`).  Removal never follows a link and never crosses
into another filesystem or a mount point (:func:`remove_tree`).  No purge, no
confirmation and no write-cache change: nothing but tkbench's own files is touched.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import socket
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tkbench.device.purge import PurgeRecord
from tkbench.device.safety import Guarded
from tkbench.errors import DeviceError, InputError, SafetyError
from tkbench.fiovalue import filename_value
from tkbench.rundir.jsonfile import replace_file
from tkbench.rundir.store import check_manifest
from tkbench.targets.base import Target, TargetInfo
from tkbench.targets.mounts import mount_of, mount_points, volume_serial
from tkbench.units import human_bytes

PREFIX = "tkbench-"
MARKER = ".tkbench-workdir.json"


@dataclass(frozen=True)
class Workdir:
    """A working directory of tkbench found in a volume, with its marker."""

    path: Path
    run_dir: str
    pid: int
    host: str
    run_id: str | None = None  # the run's manifest id (markers of tkbench 0.x before it: None)
    dev: int | None = None  # the working directory's st_dev and st_ino when it was made
    ino: int | None = None

    @property
    def alive(self) -> bool:
        """Its run still runs (same host, its pid exists)."""
        if self.host != socket.gethostname():
            return True  # a shared filesystem: another machine's run is never ours to judge
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _read_marker(path: Path) -> Any:
    """The marker of a ``tkbench-*`` directory, read without following a link and
    without blocking on a FIFO planted in its place (None: no readable marker)."""
    try:
        dfd = os.open(path, _DIR_FLAGS)
    except OSError:
        return None
    try:
        fd = os.open(MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
    except OSError:
        return None
    finally:
        os.close(dfd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return json.loads(os.read(fd, 1 << 16).decode("utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def find_workdirs(directory: Path) -> list[Workdir]:
    """tkbench's working directories directly in ``directory``: real directories named
    ``tkbench-*`` holding a readable marker.  Anything else is not tkbench's.  A
    marker says what it claims; :func:`unproven` checks the claim."""
    found = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        data = _read_marker(Path(entry.path))
        try:
            wd = Workdir(
                Path(entry.path),
                str(data["run_dir"]),
                int(data["pid"]),
                str(data["host"]),
                str(data["run_id"]) if data.get("run_id") else None,
                int(data["dev"]) if "dev" in data else None,
                int(data["ino"]) if "ino" in data else None,
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        found.append(wd)
    return found


@dataclass(frozen=True)
class Entry:
    """An entry below a directory walked by :func:`walk` (``dir_fd`` is open while it is
    yielded).  ``foreign``: another filesystem or a mount point, never entered."""

    dir_fd: int
    name: str
    path: str
    st: os.stat_result
    foreign: bool


def walk(path: Path, dev: int | None = None) -> Iterator[Entry]:
    """Every entry below the directory ``path``, children before their directory, never
    following a link (directory file descriptors, ``O_NOFOLLOW``) and never entering
    another filesystem (``st_dev``) or a mount point; such a directory is yielded as
    ``foreign`` with nothing below it.  Yields nothing when ``path`` itself is no real
    directory or is ``dev``'s stranger."""
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if dev is not None and st.st_dev != dev:
            return
        yield from _walk_fd(fd, st.st_dev, os.path.realpath(path), mount_points())
    finally:
        os.close(fd)


def _walk_fd(fd: int, dev: int, where: str, mounts: set[str]) -> Iterator[Entry]:
    try:
        names = os.listdir(fd)
    except OSError:
        return
    for name in names:
        path = os.path.join(where, name)
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        foreign = st.st_dev != dev or path in mounts
        if stat.S_ISDIR(st.st_mode) and not foreign:
            try:
                sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                foreign = True
            else:
                try:
                    sst = os.fstat(sub)
                    if (sst.st_dev, sst.st_ino) == (st.st_dev, st.st_ino):
                        yield from _walk_fd(sub, dev, path, mounts)
                    else:  # swapped for another directory between the two looks
                        foreign = True
                finally:
                    os.close(sub)
        yield Entry(fd, name, path, st, foreign)


def usage(path: Path) -> int:
    """Bytes allocated to the files below ``path`` (not following links, not counting
    another filesystem's)."""
    return sum(e.st.st_blocks * 512 for e in walk(path) if not e.foreign)


def unproven(wd: Workdir, run_id: str | None = None, run_dir: str | None = None) -> str | None:
    """Why ``wd`` is not provably a working directory this user's tkbench made (None:
    it is): it must be a real directory owned by this user, writable by no one else,
    at the device and inode its marker recorded when it was made, holding only this
    user's regular files and directories -- no link, no mount point, no other
    filesystem.  Given ``run_id`` (or, for a run with no id, ``run_dir``) its marker
    must name that run."""
    try:
        st = os.lstat(wd.path)
    except OSError as exc:
        return exc.strerror or "cannot be examined"
    euid = os.geteuid()
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != euid:
        return f"it is owned by uid {st.st_uid}, not by this user (uid {euid})"
    if st.st_mode & 0o022:
        return f"it is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    if wd.dev is None or wd.ino is None:
        return "its marker records no device and inode (made by an older tkbench)"
    if (wd.dev, wd.ino) != (st.st_dev, st.st_ino):
        return "it is not the directory its marker was written in (device or inode differs)"
    if run_id is not None and wd.run_id != run_id:
        return "its marker names another run id"
    if run_id is None and run_dir is not None and wd.run_dir != run_dir:
        return "its marker names another run directory"
    if os.path.realpath(wd.path) in mount_points():
        return "it is a mount point"
    for e in walk(wd.path, st.st_dev):
        if e.foreign:
            return f"{e.path} is a mount point or on another filesystem"
        if stat.S_ISLNK(e.st.st_mode):
            return f"{e.path} is a symbolic link"
        if not (stat.S_ISREG(e.st.st_mode) or stat.S_ISDIR(e.st.st_mode)):
            return f"{e.path} is neither a regular file nor a directory"
        if e.st.st_uid != euid:
            return f"{e.path} is owned by uid {e.st.st_uid}"
    return None


def probe_direct_io(directory: Path) -> bool | None:
    """Whether the filesystem takes O_DIRECT: an unnamed temporary file (O_TMPFILE,
    gone when closed, never visible in the directory) opened with O_DIRECT.  None when
    the filesystem has no O_TMPFILE or the directory is not writable (unknown)."""
    flags = os.O_TMPFILE | os.O_WRONLY | os.O_DIRECT
    try:
        fd = os.open(directory, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            try:  # O_TMPFILE itself, or O_DIRECT?
                os.close(os.open(directory, os.O_TMPFILE | os.O_WRONLY, 0o600))
            except OSError:
                return None
            return False
        return None
    os.close(fd)
    return True


@dataclass
class VolumeTarget(Target):
    """A directory on a mounted filesystem; tkbench's files go into a working
    directory of its own inside it."""

    kind: ClassVar[str] = "volume"
    no_write_cache: ClassVar[str] = (
        "a volume benchmark never changes the drive's write cache (the filesystem and "
        "its drive are measured as they are)"
    )
    free: int = 0  # bytes the test files may find: free space plus dead runs' files
    direct_io: bool = True
    read_only: bool = False
    workdir: Path | None = None  # while the run holds it
    log: Callable[[str], None] = field(default=lambda _msg: None, repr=False)

    def info(self) -> TargetInfo:
        return TargetInfo(
            self.spec, self.kind, self.capacity, self.logical_sector, self.free, self.direct_io
        )

    def describe(self) -> str:
        fs = self.facts.filesystem or "unknown"
        size = human_bytes(self.capacity)
        return f"{self.spec} (volume, {fs}, {human_bytes(self.free)} free of {size})"

    def fio_options(self, ioengine: str = "auto") -> dict[str, object]:
        where = self.workdir or Path(self.path) / f"{PREFIX}RUN"
        # fio names each job's file in it (JOB.N.0): one file per job
        return {
            "ioengine": "libaio" if ioengine == "auto" else ioengine,
            "directory": filename_value(str(where)),
        }

    def check(self, *, force: bool = False) -> Guarded:
        """A volume run needs a writable directory; nothing in it is at risk."""
        if self.read_only:
            raise InputError(f"target {self.spec}: its filesystem is mounted read-only")
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise InputError(f"target {self.spec}: the directory is not writable")
        return Guarded()

    def confirm(
        self,
        *,
        confirm_id: str | None,
        assume_yes: bool,
        interactive: bool,
        prompt: Callable[[str], str] | None = None,
    ) -> None:
        """Nothing to consent to: only tkbench's own working directory is written."""
        if confirm_id is not None:
            raise InputError(
                f"{self.spec}: --confirm names a block device's serial; a volume benchmark "
                "needs no confirmation"
            )

    def check_purge(self, method: str) -> None:
        """A volume profile's tests never purge (the profile says so); a purge method
        is simply never used."""

    def _purge(self, method: str, allow_fallback: bool, t0: float) -> PurgeRecord:
        raise SafetyError(f"{self.spec}: a volume benchmark never purges")

    @contextlib.contextmanager
    def workspace(self, run_dir: Path) -> Iterator[None]:
        """The run's working directory for the body: a dead run's working directories
        are removed first (the one of ``run_dir`` is reused: a resumed run); removed
        again when the body ends, however it ends.

        A working directory whose marker names this run is reused only when
        :func:`unproven` finds nothing against it; else the run is refused before
        anything is touched.  A dead run's directory that is not provably tkbench's is
        left alone."""
        root = Path(self.path)
        mine = str(Path(run_dir).resolve())
        run_id = _run_id(Path(run_dir))
        dead = [wd for wd in find_workdirs(root) if not wd.alive]
        reuse: Workdir | None = None
        for wd in dead:
            if wd.run_dir != mine and (run_id is None or wd.run_id != run_id):
                continue
            why = unproven(wd, run_id, mine)
            if why is not None:
                raise SafetyError(
                    f"refusing to reuse {wd.path} as this run's working directory: {why} "
                    "(remove it or move it away to resume with a new one)"
                )
            reuse = reuse or wd
        for wd in dead:
            if wd is reuse:
                continue
            why = unproven(wd)
            if why is not None:
                self.log(f"volume: left {wd.path} alone (a dead run's marker, but {why})")
                continue
            left = remove_tree(wd.path, (wd.dev or 0, wd.ino or 0))
            self.log(
                f"volume: removed {wd.path}, left by a dead run ({wd.run_dir}, pid {wd.pid})"
                + (f"; left in place: {', '.join(left)}" if left else "")
            )
        if reuse is not None:
            self.log(f"volume: reusing the working directory {reuse.path} of this run")
            path, made = reuse.path, (reuse.dev or 0, reuse.ino or 0)
            try:
                _write_marker(path, made, mine, run_id, new=False)
            except OSError as exc:
                why = exc.strerror
                raise DeviceError(f"cannot reuse the working directory {path}: {why}") from None
        else:
            path, made = _make_workdir(root, mine, run_id)
        self.workdir = path
        self.log(f"volume: working directory {path}")
        try:
            yield
        finally:
            self.workdir = None
            left = remove_tree(path, made)
            self.log(
                f"volume: removed the working directory {path}"
                + (f"; left in place: {', '.join(left)}" if left else "")
            )

    def test_done(self, name: str) -> None:
        """A test's files go when it is done: the next test has the space to itself."""
        if self.workdir is None:
            return
        for entry in os.scandir(self.workdir):
            if entry.name != MARKER and not entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _run_id(run_dir: Path) -> str | None:
    """The id in the run directory's manifest (None: none there)."""
    try:
        return check_manifest(run_dir).run_id
    except Exception:  # no manifest, or not one: the run has no id to match
        return None


def _make_workdir(root: Path, run_dir: str, run_id: str | None) -> tuple[Path, tuple[int, int]]:
    """A new working directory in ``root``: ``mkdir`` of a name no one has (a random
    suffix; an existing name is never taken over, whoever made it), then its marker.
    Returns its path and its (st_dev, st_ino); only a directory made here is removed
    when the marker cannot be written."""
    stamp = f"{PREFIX}{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    for _ in range(16):
        path = root / f"{stamp}-{secrets.token_hex(4)}"
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        except OSError as exc:
            raise DeviceError(f"cannot make the working directory {path}: {exc.strerror}") from None
        break
    else:
        raise DeviceError(f"cannot make a working directory in {root}: every name tried exists")
    made = (0, 0)
    try:
        fd = os.open(path, _DIR_FLAGS)
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        made = (st.st_dev, st.st_ino)
        _write_marker(path, made, run_dir, run_id, new=True)
    except OSError as exc:
        if made != (0, 0):
            remove_tree(path, made)
        raise DeviceError(f"cannot make the working directory {path}: {exc.strerror}") from None
    return path, made


def _write_marker(
    path: Path, made: tuple[int, int], run_dir: str, run_id: str | None, *, new: bool
) -> None:
    """Write the marker in the working directory ``path`` (at ``made``): created, never
    through a link; on reuse a new marker replaces the old one."""
    marker = {
        "run_dir": run_dir,
        "run_id": run_id,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.time(),
        "dev": made[0],
        "ino": made[1],
    }
    dfd = os.open(path, _DIR_FLAGS)
    try:
        st = os.fstat(dfd)
        if (st.st_dev, st.st_ino) != made:
            raise OSError(errno.ESTALE, "the directory was replaced")
        # a new directory's marker is created, never over anything; on reuse the new
        # one replaces the old atomically (the temporary file created, never followed)
        replace_file(MARKER, json.dumps(marker) + "\n", mode=0o600, dir_fd=dfd, exclusive=new)
    finally:
        os.close(dfd)


def remove_tree(path: Path, made: tuple[int, int] | None = None) -> list[str]:
    """Remove the directory ``path`` and what is below it, never following a link and
    never entering another filesystem or a mount point (:func:`walk`): those are left
    in place, with the directories holding them.  Given ``made`` (st_dev, st_ino), a
    directory that is not that one is left whole.  Returns what was left."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [f"{path} ({exc.strerror})"]
    if not stat.S_ISDIR(st.st_mode):
        return [f"{path} (not a directory)"]
    if made is not None and (st.st_dev, st.st_ino) != made:
        return [f"{path} (not the directory tkbench made)"]
    if os.path.realpath(path) in mount_points():
        return [f"{path} (a mount point)"]
    left: list[str] = []
    for e in walk(path, st.st_dev):
        if e.foreign:
            left.append(f"{e.path} (a mount point or another filesystem)")
            continue
        try:
            if stat.S_ISDIR(e.st.st_mode):
                os.rmdir(e.name, dir_fd=e.dir_fd)
            else:
                os.unlink(e.name, dir_fd=e.dir_fd)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY:  # a directory holding what was left is told once
                left.append(f"{e.path} ({exc.strerror})")
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if not left:
            left.append(f"{path} ({exc.strerror})")
    return left


def open_volume(spec: str, path: Path) -> VolumeTarget:
    """The target of ``--target DIR`` (an existing directory)."""
    resolved = path.resolve()
    try:
        st = os.stat(resolved)
        fs = os.statvfs(resolved)
    except OSError as exc:
        raise InputError(f"target {spec}: {exc.strerror}") from None
    mount = mount_of(st.st_dev)
    capacity = fs.f_blocks * fs.f_frsize
    free = fs.f_bavail * fs.f_frsize
    # only a dead run's directory that would be removed counts (:meth:`workspace`)
    dead = [wd for wd in find_workdirs(resolved) if not wd.alive and unproven(wd) is None]
    reclaim = sum(usage(wd.path) for wd in dead)
    read_only = bool(fs.f_flag & os.ST_RDONLY)
    direct = probe_direct_io(resolved)
    notes = ["a directory on a mounted filesystem: results are the filesystem's and its drive's"]
    if direct is None:
        notes.append("whether the filesystem takes O_DIRECT could not be probed")
    if reclaim:
        notes.append(f"{human_bytes(reclaim)} of test files left by dead runs count as free")
    identity: dict[str, Any] = {
        "kind": "volume",
        "path": str(resolved),
        "model": f"{mount['filesystem']} volume",
        "serial": volume_serial(mount),
        "firmware": "unknown",
        "capacity_bytes": capacity,
        "free_bytes": free,
        "logical_sector": 512,
        "physical_sector": 512,
        "interface": "volume",
        "filesystem_device": f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}",
        **mount,
        "direct_io": direct,
        "notes": notes,
    }
    if capacity <= 0:
        raise InputError(f"target {spec}: its filesystem reports no size")
    return VolumeTarget(
        spec,
        str(resolved),
        capacity,
        512,
        identity,
        free=free + reclaim,
        direct_io=direct is not False,
        read_only=read_only,
    )
