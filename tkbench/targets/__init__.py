"""Targets: what tkbench runs fio against.

A target knows its size and sector size, how fio addresses it, how to identify,
guard, lock and purge it.  One interface (:class:`tkbench.targets.base.Target`), a class per
kind, and :func:`open_target` picks it:

* :class:`~tkbench.targets.block.BlockTarget`: a block device (/dev/nvme0n1, /dev/sdb, /dev/loop3);
* :class:`~tkbench.targets.file.FileTarget`: a regular file (created at ``--size`` if missing);
* :class:`~tkbench.targets.nbdtarget.NbdTarget`: an NBD server on a Unix socket
  (``nbd+unix:///?socket=PATH``), e.g. the bundled SSD emulator;
* :class:`~tkbench.targets.volume.VolumeTarget`: a directory on a mounted filesystem.
"""

from __future__ import annotations

import stat
from pathlib import Path

from tkbench.errors import InputError, SafetyError
from tkbench.fiovalue import check_value
from tkbench.targets.base import Target
from tkbench.targets.block import _open_block
from tkbench.targets.file import FileTarget, _create_file, _file_identity
from tkbench.targets.nbdtarget import _open_nbd, is_nbd
from tkbench.targets.volume import open_volume
from tkbench.units import human_bytes


def open_target(spec: str, size: int | None = None, create: bool = False) -> Target:
    """Resolve a ``--target`` argument.  ``create`` makes a missing regular file."""
    if not spec or spec.strip() != spec:
        raise InputError(f"bad target {spec!r}")
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
