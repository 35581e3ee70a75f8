"""Volume mode: benchmarks of a directory on a mounted filesystem (docs/volume.md).

A :class:`VolumeTarget` is a directory.  tkbench writes nothing in it but its own
working directory, ``tkbench-<date>-<time>-<pid>/``, made when the run starts and
removed when it ends (also after an error or Ctrl-C).  A marker file in it names the
run directory, the host and the pid, so a working directory left by a run that died
(``kill -9``, a crash, a power cut) is recognised: the next run on the directory
removes it, or reuses it when it resumes that very run.  No purge, no confirmation
and no write-cache change: nothing but tkbench's own files is touched.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import socket
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .device.purge import PurgeRecord
from .device.safety import Guarded
from .errors import DeviceError, InputError, SafetyError
from .plan import TargetInfo
from .target import Target
from .units import human_bytes

PREFIX = "tkbench-"
MARKER = ".tkbench-workdir.json"


@dataclass(frozen=True)
class Workdir:
    """A working directory of tkbench found in a volume, with its marker."""

    path: Path
    run_dir: str
    pid: int
    host: str

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


def find_workdirs(directory: Path) -> list[Workdir]:
    """tkbench's working directories directly in ``directory``: real directories named
    ``tkbench-*`` holding a readable marker.  Anything else is not tkbench's."""
    found = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            data = json.loads((Path(entry.path) / MARKER).read_text(encoding="utf-8"))
            wd = Workdir(
                Path(entry.path), str(data["run_dir"]), int(data["pid"]), str(data["host"])
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
        found.append(wd)
    return found


def usage(path: Path) -> int:
    """Bytes allocated to the files below ``path`` (not following links)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def _mount(st_dev: int) -> dict[str, str]:
    """The mount point, filesystem type and source of a device number."""
    want = f"{os.major(st_dev)}:{os.minor(st_dev)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                f = left.split()
                if len(f) > 4 and f[2] == want:
                    r = right.split()
                    return {
                        "mount_point": f[4].replace("\\040", " "),
                        "filesystem": r[0] if r else "unknown",
                        "source": r[1] if len(r) > 1 else "unknown",
                    }
    except OSError:
        pass
    return {"mount_point": "unknown", "filesystem": "unknown", "source": "unknown"}


def volume_serial(mount: dict[str, str]) -> str:
    """What tells this filesystem from another of its kind, as a drive's serial does
    (the history's runs of "the same drive", the dashboard's lines): its UUID when
    its device has one, else its source and mount point."""
    source = mount.get("source", "unknown")
    if source.startswith("/dev/"):
        from .device._common import try_run

        # udev's record first (any user may read it), then the superblock itself
        for argv in (
            ["findmnt", "-n", "-o", "UUID", "--source", source],
            ["blkid", "-p", "-o", "value", "-s", "UUID", source],
        ):
            done, _ = try_run(argv, 10.0)
            text = done.stdout.strip() if done is not None and done.returncode == 0 else ""
            uuid = text.splitlines()[0].strip() if text else ""
            if uuid and len(uuid) <= 64 and uuid.isprintable():
                return f"UUID={uuid}"
    return f"{source} at {mount.get('mount_point', 'unknown')}"


def filesystem_serial(st_dev: int) -> str:
    """:func:`volume_serial` of the filesystem of a device number (``st_dev``): what
    tells a file target's filesystem from another (tkbench.target)."""
    return volume_serial(_mount(st_dev))


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
        fs = self.identity.get("filesystem", "unknown")
        size = human_bytes(self.capacity)
        return f"{self.spec} (volume, {fs}, {human_bytes(self.free)} free of {size})"

    def fio_options(self, ioengine: str = "auto") -> dict[str, object]:
        from .jobfile import filename_value

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
        again when the body ends, however it ends."""
        root = Path(self.path)
        mine = str(Path(run_dir).resolve())
        reuse = None
        for wd in find_workdirs(root):
            if wd.alive:
                continue
            if wd.run_dir == mine and reuse is None:
                reuse = wd.path
                self.log(f"volume: reusing the working directory {wd.path} of this run")
                continue
            shutil.rmtree(wd.path, ignore_errors=True)
            self.log(f"volume: removed {wd.path}, left by a dead run ({wd.run_dir}, pid {wd.pid})")
        path = reuse or root / f"{PREFIX}{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        try:
            if reuse is None:
                path.mkdir(mode=0o700)
            marker = {
                "run_dir": mine,
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": time.time(),
            }
            tmp = path / (MARKER + ".tmp")
            tmp.write_text(json.dumps(marker) + "\n", encoding="utf-8")
            tmp.replace(path / MARKER)
        except OSError as exc:
            shutil.rmtree(path, ignore_errors=True)
            raise DeviceError(f"cannot make the working directory {path}: {exc.strerror}") from None
        self.workdir = path
        self.log(f"volume: working directory {path}")
        try:
            yield
        finally:
            self.workdir = None
            _remove(path)
            self.log(f"volume: removed the working directory {path}")

    def test_done(self, name: str) -> None:
        """A test's files go when it is done: the next test has the space to itself."""
        if self.workdir is None:
            return
        for entry in os.scandir(self.workdir):
            if entry.name != MARKER and not entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _remove(path: Path) -> None:
    """Remove a working directory, never following a link out of it."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return
    shutil.rmtree(path, ignore_errors=True)


def open_volume(spec: str, path: Path) -> VolumeTarget:
    """The target of ``--target DIR`` (an existing directory)."""
    resolved = path.resolve()
    try:
        st = os.stat(resolved)
        fs = os.statvfs(resolved)
    except OSError as exc:
        raise InputError(f"target {spec}: {exc.strerror}") from None
    mount = _mount(st.st_dev)
    capacity = fs.f_blocks * fs.f_frsize
    free = fs.f_bavail * fs.f_frsize
    dead = [wd for wd in find_workdirs(resolved) if not wd.alive]
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
