"""Targets: what tkbench runs fio against.

A Target knows its size and sector size, how fio addresses it, how to identify,
guard, lock and purge it.  One interface, a class per kind (:func:`open_target`
picks it):

* :class:`BlockTarget`: a block device (/dev/nvme0n1, /dev/sdb, /dev/loop3);
* :class:`FileTarget`: a regular file (created at ``--size`` if missing);
* :class:`NbdTarget`: an NBD server on a Unix socket (``nbd+unix:///?socket=PATH``),
  e.g. the bundled SSD emulator.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tkbench.device.purge import PurgeRecord
from tkbench.device.safety import Guarded
from tkbench.errors import DeviceError, InputError, SafetyError
from tkbench.fio.jobfile import engine_for
from tkbench.plan.build import TargetInfo
from tkbench.units import human_bytes

if TYPE_CHECKING:
    from tkbench.device.thermal import ThermalReading
    from tkbench.device.writecache import RecordSink, WriteCacheSession

# how the bundled emulator names itself in the NBD handshake (tkbench/emulator/plugin.py)
EMULATOR_DESCRIPTION = "tkbench SSD emulator"


@dataclass
class Target:
    """What tkbench runs fio against; a subclass per kind (file, block device, NBD).

    The engine and the run orchestration use only this interface: how fio addresses
    the target, the read-only safety checks, the operator's consent, the one-run lock,
    the purge, health snapshots.
    """

    kind: ClassVar[str] = ""  # file | block | nbd
    marks_own_data: ClassVar[bool] = False  # checked for signatures: Target.keep_mark
    spec: str  # as the user gave it
    path: str  # device or file path; the URI for nbd
    capacity: int
    logical_sector: int = 512
    identity: dict[str, Any] = field(default_factory=dict)

    def info(self) -> TargetInfo:
        return TargetInfo(self.spec, self.kind, self.capacity, self.logical_sector)

    def describe(self) -> str:
        model = self.identity.get("model")
        extra = f" {model}" if model and model != "unknown" else ""
        return f"{self.spec} ({self.kind}{extra}, {human_bytes(self.capacity)})"

    def fio_options(self, ioengine: str = "auto") -> dict[str, object]:
        """Global job-file options that address this target."""
        from tkbench.fio.jobfile import filename_value

        return {"ioengine": engine_for(self.kind, ioengine), "filename": filename_value(self.path)}

    # ------------------------------------------------------------ safety
    def check(self, *, force: bool = False) -> Guarded:
        """Refuse a target that must not be written (read-only checks, docs/safety.md):
        swap, loop backing file, open elsewhere, not writable, mounted, holders,
        system disk, signatures (``force`` overrides only these).  Returns what the
        passed check has to tell (:class:`tkbench.device.Guarded`)."""
        from tkbench.device import check_target

        return check_target(self.path, force=force)

    def keep_mark(
        self, run: str, when: str, *, ended: str | None, extent: list[tuple[int, int]]
    ) -> str | None:
        """Mark the data a run leaves on the target as tkbench's, so that a signature
        its random data happens to form is not taken for someone's next time
        (:mod:`tkbench.device.owndata`): files and block devices, which are checked
        for signatures; the other kinds are not.  ``ended``: the target's digest when
        the run's writes ended; ``extent``: the byte ranges they reached.  Returns why
        no mark was kept (None: kept, or not a kind that is marked)."""
        if not self.marks_own_data:
            return None
        from tkbench.device import owndata
        from tkbench.device.safety import signature_pairs

        mark = owndata.keep_mark(self.path, run, when, signature_pairs, ended=ended, extent=extent)
        if mark is None:
            return (
                "the target changed after the run's last write, could not be read, or "
                "the marks' directory could not be written"
            )
        return None

    def confirm(
        self,
        *,
        confirm_id: str | None,
        assume_yes: bool,
        interactive: bool,
        prompt: Callable[[str], str] | None = None,
    ) -> None:
        """The operator's consent to destroy the target's data: ``--yes`` or a typed
        'yes' (block devices need more: :class:`BlockTarget`).  ``--confirm`` names a
        block device's serial; for a file or NBD target it is no consent."""
        if assume_yes:
            return
        if confirm_id is not None:
            raise SafetyError(
                f"{self.spec}: --confirm names a block device's serial; "
                "pass --yes to destroy the data of a file or NBD target"
            )
        if interactive and prompt is not None:
            answer = prompt(
                f"tkbench will overwrite all data of {self.describe()}. Type 'yes' to go on: "
            )
            if answer.strip().lower() == "yes":
                return
            raise SafetyError("not confirmed: nothing was written")
        raise SafetyError(f"{self.spec}: destroying its data needs confirmation: pass --yes")

    def lock_path(self) -> str:
        return self.path

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the one-run-per-device lock while the body runs."""
        from tkbench.device import DeviceLock

        with DeviceLock(self.lock_path()):
            yield

    @contextlib.contextmanager
    def materialized(self) -> Iterator[None]:
        """The target exists for the body (a regular file is created: :class:`FileTarget`)."""
        yield

    @contextlib.contextmanager
    def workspace(self, run_dir: Path) -> Iterator[None]:
        """What the run needs on the target while it runs (a volume's working
        directory: :class:`tkbench.targets.volume.VolumeTarget`), removed however it ends."""
        yield

    def test_done(self, name: str) -> None:
        """A test has finished (a volume removes its test files)."""

    def check_purge(self, method: str) -> None:
        """Refuse, before anything starts, a purge method that cannot apply to this target."""

    # ------------------------------------------------------------ write cache
    # why a target that is no drive of its own has no write cache to set
    no_write_cache: ClassVar[str] = "the target has no drive write cache"

    def check_write_cache(self, setting: str) -> None:
        """Refuse, before the confirmation, a ``workload.write_cache`` setting the
        target cannot take (:class:`BlockTarget`).  A target with no drive of its own
        takes any: it does not apply, and the run records that."""

    def write_cache(self, setting: str, sink: RecordSink) -> WriteCacheSession:
        """The session that sets the write cache for a run and restores it."""
        from tkbench.device.writecache import WriteCacheSession

        return WriteCacheSession(None, setting, sink, not_applicable_because=self.no_write_cache)

    def write_cache_plan(self, setting: str) -> str:
        """What ``tkbench plan`` says the run will do with the write cache."""
        from tkbench.device.writecache import plan_text

        return plan_text(None, setting, self.no_write_cache)

    def write_cache_absent(self) -> str | None:
        """Why the target has no drive write cache to set (None: it has one)."""
        return self.no_write_cache

    def health(self) -> dict[str, Any] | None:
        """A SMART/health snapshot (None where the target has none)."""
        return None

    def thermal_reader(self) -> Callable[[], tuple[ThermalReading | None, str]] | None:
        """A query of the drive's temperature and thermal counters for between rounds
        (:func:`tkbench.device.thermal.read`); None where the target has no drive."""
        return None

    def io_counters(self) -> tuple[int, int, int] | None:
        """The kernel's counters of the block device the target's I/O goes to: I/Os
        completed, bytes, and milliseconds spent on them (None where there is none).
        For live figures during a round; the device may carry other I/O too."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        dev = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
        try:
            with open(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat") as fh:
                f = [int(x) for x in fh.read().split()]
        except (OSError, ValueError):
            return None
        if len(f) < 8:
            return None
        return f[0] + f[4], (f[2] + f[6]) * 512, f[3] + f[7]

    # ------------------------------------------------------------ purge
    def purge(self, method: str, allow_fallback: bool) -> PurgeRecord:
        """Return the drive to a fresh state; the record of what was done."""
        t0 = time.monotonic()
        if method == "none":
            return _record("none", False, [], t0, ["purge disabled by the profile"])
        return self._purge(method, allow_fallback, t0)

    def _purge(self, method: str, allow_fallback: bool, t0: float) -> PurgeRecord:
        raise NotImplementedError


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


@dataclass
class BlockTarget(Target):
    """A block device: identified, confirmed by serial, purged by a secure erase."""

    kind: ClassVar[str] = "block"
    marks_own_data: ClassVar[bool] = True
    device: Any = None  # tkbench.device.DeviceIdentity

    def confirm(
        self,
        *,
        confirm_id: str | None,
        assume_yes: bool,
        interactive: bool,
        prompt: Callable[[str], str] | None = None,
    ) -> None:
        """The drive's serial (or kernel name), never just ``--yes``."""
        from tkbench.device import confirm

        confirm(self.device, confirm_id, assume_yes, True, interactive=interactive, prompt=prompt)

    def check_purge(self, method: str) -> None:
        if method != "none":
            from tkbench.device.purge import check_method

            check_method(self.device, method)

    def check_write_cache(self, setting: str) -> None:
        from tkbench.device.writecache import check

        check(self.device, setting)

    def write_cache(self, setting: str, sink: RecordSink) -> WriteCacheSession:
        from tkbench.device.writecache import WriteCacheSession

        return WriteCacheSession(self.device, setting, sink)

    def write_cache_plan(self, setting: str) -> str:
        from tkbench.device.writecache import plan_text

        return plan_text(self.device, setting)

    def write_cache_absent(self) -> str | None:
        from tkbench.device.writecache import not_applicable

        return not_applicable(self.device)

    def health(self) -> dict[str, Any] | None:
        from tkbench.device import health

        interface = getattr(self.device, "interface", None)
        snap: dict[str, Any] = health(self.path, interface=interface).to_dict()
        return snap

    def thermal_reader(self) -> Callable[[], tuple[ThermalReading | None, str]] | None:
        """nvme-cli or smartctl for a drive; none for a loop device or a virtio disk,
        which have no temperature sensor of their own."""
        interface = str(getattr(self.device, "interface", "other"))
        if interface in ("loop", "virtio"):
            return None
        from tkbench.device import thermal

        return lambda: thermal.read(self.path, interface)

    def _purge(self, method: str, allow_fallback: bool, t0: float) -> PurgeRecord:
        from tkbench.device import purge as device_purge

        record: PurgeRecord = device_purge(
            self.device, method=method, allow_fallback=allow_fallback
        )
        return record


@dataclass
class NbdTarget(Target):
    """An NBD export (``nbd+unix:///?socket=PATH``), e.g. the bundled SSD emulator."""

    kind: ClassVar[str] = "nbd"
    no_write_cache: ClassVar[str] = (
        "an NBD export has no drive write cache for tkbench to set (its server keeps its"
        " own; the bundled emulator models none)"
    )

    def fio_options(self, ioengine: str = "auto") -> dict[str, object]:
        return {"ioengine": engine_for(self.kind, ioengine), "uri": self.path}

    def check(self, *, force: bool = False) -> Guarded:
        """Its server owns its data; only a read-only export is refused."""
        if self.identity.get("read_only"):
            raise SafetyError(f"refusing to write {self.spec}: the NBD export is read-only")
        return Guarded()

    def lock_path(self) -> str:
        return _nbd_socket(self.path)

    def io_counters(self) -> tuple[int, int, int] | None:
        return None  # the server's I/O is not this kernel's

    def _purge(self, method: str, allow_fallback: bool, t0: float) -> PurgeRecord:
        from tkbench.targets import nbd

        nbd.trim(self.path)
        return _record(
            "trim", False, [], t0, [f"NBD trim of the whole range ({human_bytes(self.capacity)})"]
        )


def _record(
    method: str, compliant: bool, commands: list[dict[str, Any]], t0: float, notes: list[str]
) -> PurgeRecord:
    return PurgeRecord(
        device="",
        interface="",
        requested_method=method,
        method=method,
        pts_compliant=compliant,
        commands=commands,
        seconds=round(time.monotonic() - t0, 3),
        notes=notes,
    )


def _nbd_socket(uri: str) -> str:
    from tkbench.targets import nbd

    return nbd.parse_uri(uri).socket


def is_nbd(spec: str) -> bool:
    return spec.startswith(("nbd://", "nbd+unix://", "nbds://", "nbds+unix://"))


def open_target(spec: str, size: int | None = None, create: bool = False) -> Target:
    """Resolve a ``--target`` argument.  ``create`` makes a missing regular file."""
    if not spec or spec.strip() != spec:
        raise InputError(f"bad target {spec!r}")
    from tkbench.fiovalue import check_value

    check_value(spec, "target")
    if is_nbd(spec):
        return _open_nbd(spec, size)
    path = Path(spec)
    try:
        st = path.stat()
    except FileNotFoundError:
        if not create:
            raise InputError(f"target {spec}: no such file or device") from None
        return _create_file(path, size)
    except OSError as exc:
        raise InputError(f"target {spec}: {exc.strerror}") from None
    if stat.S_ISBLK(st.st_mode):
        if size is not None:
            raise InputError("--size applies to regular files only, not to block devices")
        return _open_block(spec)
    if stat.S_ISDIR(st.st_mode):
        if size is not None:
            raise InputError("--size applies to regular files only, not to a directory")
        from tkbench.targets.volume import open_volume

        return open_volume(spec, path)
    if not stat.S_ISREG(st.st_mode):
        raise SafetyError(f"target {spec} is neither a regular file nor a block device")
    cap = st.st_size
    if size is not None and size != cap:
        raise InputError(
            f"target {spec} is {human_bytes(cap)}, not the --size {human_bytes(size)} given "
            "(tkbench does not resize existing files)"
        )
    if cap <= 0:
        raise InputError(f"target {spec} is an empty file; give --size to set its size")
    resolved = path.resolve()
    return FileTarget(spec, str(resolved), cap, 512, _file_identity(resolved, cap))


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
    from tkbench.targets.volume import filesystem_serial

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


def _open_block(spec: str) -> Target:
    from tkbench.device import identify

    ident = identify(spec)
    data: dict[str, Any] = ident.to_dict()
    cap = int(data.get("capacity_bytes") or 0)
    if cap <= 0:
        raise DeviceError(f"{spec}: cannot determine the device's capacity")
    sector = int(data.get("logical_sector") or 512)
    return BlockTarget(spec, os.path.realpath(spec), cap, sector, data, device=ident)


def _open_nbd(spec: str, size: int | None) -> Target:
    from tkbench.targets import nbd

    if size is not None:
        raise InputError("--size applies to regular files only, not to NBD targets")
    try:
        info = nbd.export_info(spec)
    except DeviceError as exc:
        # an unreachable target is a wrong argument, not a device failure mid-run
        raise InputError(f"target {spec}: {exc} (is the NBD server or emulator running?)") from None
    sector = max(512, int(getattr(info, "min_block", 512) or 512))
    ident: dict[str, Any] = {
        "kind": "nbd",
        "uri": spec,
        "model": "NBD export",
        "serial": nbd.parse_uri(spec).serial,
        "firmware": "unknown",
        "capacity_bytes": info.size,
        "logical_sector": sector,
        "physical_sector": int(getattr(info, "preferred_block", sector) or sector),
        "interface": "nbd",
        "read_only": bool(getattr(info, "read_only", False)),
        "notes": [],
    }
    if info.description:
        ident["description"] = info.description
    if info.description.startswith(EMULATOR_DESCRIPTION):
        ident["model"] = EMULATOR_DESCRIPTION
        ident["emulated"] = True
        ident["notes"] = [
            "the bundled SSD emulator, not a real drive: " + info.description,
        ]
    return NbdTarget(spec, spec, info.size, sector, ident)
