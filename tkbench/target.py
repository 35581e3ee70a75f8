"""Targets: what tkbench runs fio against.

A Target knows its size and sector size, how fio addresses it, how to identify,
guard, lock and purge it.  Three kinds:

* ``block``: a block device (/dev/nvme0n1, /dev/sdb, /dev/loop3);
* ``file``: a regular file (created at ``--size`` if missing);
* ``nbd``: an NBD server on a Unix socket (``nbd+unix:///?socket=PATH``), e.g.
  the bundled SSD emulator.
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
from typing import Any

from .errors import DeviceError, InputError, SafetyError
from .jobfile import engine_for
from .plan import TargetInfo
from .units import human_bytes

# how the bundled emulator names itself in the NBD handshake (tkbench/emulator/plugin.py)
EMULATOR_DESCRIPTION = "tkbench SSD emulator"


@dataclass
class Target:
    spec: str  # as the user gave it
    kind: str  # block | file | nbd
    path: str  # device or file path; the URI for nbd
    capacity: int
    logical_sector: int = 512
    identity: dict[str, Any] = field(default_factory=dict)
    device: Any = None  # tkbench.device.DeviceIdentity for block devices
    missing: bool = False  # a regular file still to be created (after the guards passed)

    def info(self) -> TargetInfo:
        return TargetInfo(self.spec, self.kind, self.capacity, self.logical_sector)

    def describe(self) -> str:
        model = self.identity.get("model")
        extra = f" {model}" if model and model != "unknown" else ""
        return f"{self.spec} ({self.kind}{extra}, {human_bytes(self.capacity)})"

    def fio_options(self, ioengine: str = "auto") -> dict[str, object]:
        """Global job-file options that address this target."""
        engine = engine_for(self.kind, ioengine)
        if self.kind == "nbd":
            return {"ioengine": engine, "uri": self.path}
        from .jobfile import filename_value

        return {"ioengine": engine, "filename": filename_value(self.path)}

    # ------------------------------------------------------------ safety
    def check(self, *, force: bool = False) -> None:
        """Refuse a target that must not be written (read-only checks).

        Block devices and existing regular files go through the same checks
        (docs/safety.md): swap, loop backing file, open elsewhere, not writable,
        signatures (``force`` overrides only these).  A file still to be created
        must fit the free space of its filesystem; an NBD export must be writable.
        """
        if self.kind == "nbd":
            if self.identity.get("read_only"):
                raise SafetyError(f"refusing to write {self.spec}: the NBD export is read-only")
            return
        if self.kind == "file":
            _check_space(Path(self.path), self.capacity, new=self.missing)
            if self.missing:
                return
        from .device import check_target

        check_target(self.path, force=force)

    def confirm(
        self,
        *,
        confirm_id: str | None,
        assume_yes: bool,
        interactive: bool,
        prompt: Callable[[str], str] | None = None,
    ) -> None:
        """The operator's consent to destroy the target's data."""
        if self.kind == "block":
            from .device import confirm

            confirm(
                self.device,
                confirm_id,
                assume_yes,
                True,
                interactive=interactive,
                prompt=prompt,
            )
            return
        if assume_yes or confirm_id is not None:
            return
        if interactive and prompt is not None:
            answer = prompt(
                f"tkbench will overwrite all data of {self.describe()}. Type 'yes' to go on: "
            )
            if answer.strip().lower() == "yes":
                return
            raise SafetyError("not confirmed: nothing was written")
        raise SafetyError(f"{self.spec}: destroying its data needs confirmation: pass --yes")

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the one-run-per-device lock while the body runs."""
        from .device import DeviceLock

        with DeviceLock(self.path if self.kind != "nbd" else _nbd_socket(self.path)):
            yield

    @contextlib.contextmanager
    def materialized(self) -> Iterator[None]:
        """Create a missing regular-file target at its size (sparse) for the body, which
        prepares the run; the file is removed again if the body fails, so a run that
        cannot start leaves no file behind."""
        if not self.missing:
            yield
            return
        path = Path(self.path)
        _resize(path, self.capacity, new=True)
        self.missing = False
        try:
            yield
        except BaseException:
            with contextlib.suppress(OSError):
                path.unlink()
            self.missing = True
            raise

    def check_purge(self, method: str) -> None:
        """Refuse, before anything starts, a purge method that cannot apply to this target."""
        if self.kind == "block" and method != "none":
            from .device.purge import check_method

            check_method(self.device, method)

    def health(self) -> dict[str, Any] | None:
        """A SMART/health snapshot of a block device (None for files and NBD targets)."""
        if self.kind != "block":
            return None
        from .device import health

        interface = getattr(self.device, "interface", None)
        snap: dict[str, Any] = health(self.path, interface=interface).to_dict()
        return snap

    # ------------------------------------------------------------ purge
    def purge(self, method: str, allow_fallback: bool) -> dict[str, Any]:
        """Return the drive to a fresh state; the record of what was done."""
        t0 = time.monotonic()
        if method == "none":
            return _record("none", False, [], t0, ["purge disabled by the profile"])
        if self.kind == "file":
            return self._purge_file(t0)
        if self.kind == "nbd":
            from . import nbd

            nbd.trim(self.path)
            return _record(
                "trim",
                False,
                [],
                t0,
                [f"NBD trim of the whole range ({human_bytes(self.capacity)})"],
            )
        from .device import purge as device_purge

        record: dict[str, Any] = device_purge(
            self.device, method=method, allow_fallback=allow_fallback
        ).to_dict()
        return record

    def _purge_file(self, t0: float) -> dict[str, Any]:
        """Recreate a regular file: drop its blocks (the filesystem discards them), re-extend."""
        try:
            with open(self.path, "r+b") as fh:
                os.ftruncate(fh.fileno(), 0)
                os.fsync(fh.fileno())
                os.ftruncate(fh.fileno(), self.capacity)
                os.fsync(fh.fileno())
        except OSError as exc:
            raise DeviceError(f"{self.path}: cannot recreate file: {exc.strerror}") from None
        return _record(
            "file-recreate",
            False,
            [],
            t0,
            ["regular file truncated to 0 and re-extended (sparse): not a drive purge"],
        )


def _record(
    method: str, compliant: bool, commands: list[dict[str, Any]], t0: float, notes: list[str]
) -> dict[str, Any]:
    return {
        "method": method,
        "pts_compliant": compliant,
        "commands": commands,
        "seconds": round(time.monotonic() - t0, 3),
        "notes": notes,
    }


def _nbd_socket(uri: str) -> str:
    from . import nbd

    return nbd.parse_uri(uri).socket


def is_nbd(spec: str) -> bool:
    return spec.startswith(("nbd://", "nbd+unix://", "nbds://", "nbds+unix://"))


def open_target(spec: str, size: int | None = None, create: bool = False) -> Target:
    """Resolve a ``--target`` argument.  ``create`` makes a missing regular file."""
    if not spec or spec.strip() != spec:
        raise InputError(f"bad target {spec!r}")
    from .jobfile import check_value

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
        raise InputError(f"target {spec} is a directory; give a file, a block device or an NBD URI")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"target {spec} is neither a regular file nor a block device")
    cap = st.st_size
    if size is not None and size != cap:
        raise InputError(
            f"target {spec} is {human_bytes(cap)}, not the --size {human_bytes(size)} given "
            "(tkbench does not resize existing files)"
        )
    if cap <= 0:
        raise InputError(f"target {spec} is an empty file; give --size to set its size")
    resolved = path.resolve()
    return Target(spec, "file", str(resolved), cap, 512, _file_identity(resolved, cap))


def _create_file(path: Path, size: int | None) -> Target:
    """A target for a file that does not exist yet; ``materialized()`` creates it."""
    if size is None:
        raise InputError(f"target {path} does not exist; give --size to create it")
    if size <= 0:
        raise InputError("--size must be positive")
    if not path.parent.is_dir():
        raise InputError(f"target {path}: directory {path.parent} does not exist")
    resolved = path.parent.resolve() / path.name
    ident = _file_identity(resolved, size, path.parent)
    return Target(str(path), "file", str(resolved), size, 512, ident, missing=True)


def _resize(path: Path, size: int, new: bool = False) -> None:
    try:
        with open(path, "xb" if new else "r+b") as fh:
            os.ftruncate(fh.fileno(), size)
    except OSError as exc:
        if new:  # leave nothing behind: an empty file would confuse the next attempt
            with contextlib.suppress(OSError):
                path.unlink()
        raise InputError(
            f"target {path}: cannot create a {human_bytes(size)} file: {exc.strerror}"
        ) from None


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
    st_dev = (where or path).stat().st_dev
    return {
        "kind": "file",
        "path": str(path),
        "model": "regular file",
        "serial": "unknown",
        "firmware": "unknown",
        "capacity_bytes": size,
        "logical_sector": 512,
        "physical_sector": 512,
        "interface": "file",
        "filesystem_device": f"{os.major(st_dev)}:{os.minor(st_dev)}",
        "notes": ["a regular file: results reflect the filesystem and the drive beneath it"],
    }


def _open_block(spec: str) -> Target:
    from .device import identify

    ident = identify(spec)
    data: dict[str, Any] = ident.to_dict()
    cap = int(data.get("capacity_bytes") or 0)
    if cap <= 0:
        raise DeviceError(f"{spec}: cannot determine the device's capacity")
    sector = int(data.get("logical_sector") or 512)
    return Target(spec, "block", os.path.realpath(spec), cap, sector, data, device=ident)


def _open_nbd(spec: str, size: int | None) -> Target:
    from . import nbd

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
        "serial": "unknown",
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
    return Target(spec, "nbd", spec, info.size, sector, ident)
