"""The one way tkbench writes a file a reader must never see half-written, and reads
its JSON files back.

:func:`replace_file` is the writer: a new temporary file beside the destination
(created ``O_EXCL|O_NOFOLLOW``, so never through a link nor over another file),
written, flushed to the disk, renamed over the destination, and the directory
flushed: a reader sees the old file or the new one, whatever instant the writer
dies.  Given ``dir_fd`` it works inside an open directory (a volume benchmark's
working directory, checked to be the one tkbench made), never by a path that
could be swapped in between.  ``exclusive=True`` creates the destination itself
``O_EXCL|O_NOFOLLOW`` instead (a marker that must be new: an existing one is an
error, never replaced).

Every JSON file tkbench writes goes through it: the run directory's records
(:mod:`tkbench.rundir.store`), ``write-cache.json``, ``fleet.json``, the own-data
marks (:mod:`tkbench.device.owndata`), a volume benchmark's working-directory
marker and a copy test's set markers.  This module sits below the devices in the
layers (docs/architecture.md) so that each of them can use it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

from tkbench.errors import DeviceError, RunDirError

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def current_umask() -> int:
    """The process's umask, read without changing it (Linux), else set and restored."""
    with (
        contextlib.suppress(OSError, ValueError),
        open("/proc/self/status", encoding="ascii") as fh,
    ):
        for line in fh:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def replace_file(
    path: Path | str,
    data: str | bytes,
    *,
    mode: int | None = None,
    dir_fd: int | None = None,
    exclusive: bool = False,
) -> None:
    """Write ``data`` to ``path`` atomically (see the module's docstring); OSError on
    failure, with no temporary file left behind.

    ``mode``: the file's permissions (default: what any new file gets, 0666 less the
    umask, not the 0600 of a temporary file, so the operator can read what a run
    wrote as root).  ``dir_fd``: ``path`` is a name in that open directory."""
    path = Path(path)
    content = data.encode("utf-8") if isinstance(data, str) else data
    perms = 0o666 & ~current_umask() if mode is None else mode
    parent = path.parent if dir_fd is None else None
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    if exclusive:
        _write_new(path, content, perms, dir_fd)
        _fsync_dir(parent, dir_fd)
        return
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    _write_new(tmp, content, perms, dir_fd)
    try:
        os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    _fsync_dir(parent, dir_fd)


def _write_new(path: Path, content: bytes, perms: int, dir_fd: int | None) -> None:
    fd = os.open(path, _CREATE, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), perms)
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path, dir_fd=dir_fd)
        raise


def _fsync_dir(path: Path | None, dir_fd: int | None = None) -> None:
    """Flush a directory (the rename in it), by its path or its open descriptor."""
    if dir_fd is not None:
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
        return
    try:
        fd = os.open(path or ".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: Path, data: str | bytes) -> None:
    """:func:`replace_file` for a run's or a fleet's files: a failure is a
    :class:`~tkbench.errors.DeviceError` naming the file."""
    try:
        replace_file(path, data)
    except OSError as exc:
        raise DeviceError(
            f"cannot write {path}: {exc.strerror or exc} (is the results filesystem full?)"
        ) from None


def dumps(data: Any) -> str:
    """The text of every JSON file tkbench writes: indented by one, a final newline."""
    return json.dumps(data, indent=1, sort_keys=False, allow_nan=False) + "\n"


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, dumps(data))


def read_json(path: Path) -> Any:
    """A JSON file's value, or one line (RunDirError) saying why it cannot be read."""
    if path.exists() and not path.is_file():  # a FIFO or a device would block or never end
        raise RunDirError(f"{path}: not a regular file")
    try:
        with path.open(encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise RunDirError(f"{path}: missing") from None
    except RecursionError:
        raise RunDirError(f"{path}: nested too deeply to be a tkbench record") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{path}: corrupt JSON ({exc.msg} at line {exc.lineno})") from None
