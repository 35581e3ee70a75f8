"""The one rule for every file the user names for output (``export --out``, ``--junit``,
``report --out``, ``compare --out``, the pages of ``dashboard --out``).

What the path is decides what happens (docs/safety.md, "Output paths"):

* a new path: a new regular file, created with ``O_CREAT|O_EXCL|O_NOFOLLOW`` in its
  directory (a temporary file, then a hard link that fails if the name appeared
  meanwhile), never following a symbolic link at the last component;
* a regular file owned by the user: replaced atomically (temporary file, fsync,
  rename), keeping its permission bits;
* a FIFO or a character device (``/dev/null``, ``/dev/full``, a terminal), also one a
  symbolic link leads to: written in place, like a shell redirection; it is never
  replaced by a regular file;
* ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N`` (the CI idiom
  ``--junit /dev/stderr``): written to that file descriptor of this process, as the
  shell does for ``>/dev/stderr``, whatever it is open on;
* refused with one line (exit 2): a record of a run directory (anything in a
  directory holding a tkbench manifest, except new or non-record files at its top such
  as the report, a JUnit or an export beside the records), a regular file of another
  user, a symbolic link to a regular file or to nothing, a directory, a block device,
  a socket.

:func:`check_output` refuses before any work; :func:`write_output` applies the rule
again when writing (the path may have changed since).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import stat
import sys
from pathlib import Path

from tkbench.errors import DeviceError, InputError
from tkbench.rundir.store import check_creatable

__all__ = ["check_output", "run_directory_of", "write_output"]

# the names of a run directory's own files at its top; anything in a subdirectory
# (tests/, .scratch/) and any .json or .log there is a record too
_RECORD_SUFFIXES = (".json", ".log")
_STD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_FD_PATH = re.compile(r"^/(?:dev|proc/self|proc/(\d+))/fd/(\d+)$")
_MANIFEST_MAX = 16 << 20  # a manifest is far smaller; a bigger file is not read


def _std_fd(path: Path) -> int | None:
    """The file descriptor of this process ``path`` names, following symbolic links
    by hand: ``/dev/stderr`` -> ``/proc/self/fd/2`` -> 2 (None: not such a path)."""
    p = os.path.abspath(path)
    for _ in range(40):
        if p in _STD:
            return _STD[p]
        m = _FD_PATH.match(p)
        if m and (m.group(1) is None or int(m.group(1)) == os.getpid()):
            return int(m.group(2))
        try:
            link = os.readlink(p)
        except OSError:
            return None
        p = os.path.normpath(os.path.join(os.path.dirname(p), link))
    return None


def _is_manifest(path: Path) -> bool:
    from tkbench.rundir.records.run import KIND

    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MANIFEST_MAX:
            return False
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("kind") == KIND


def run_directory_of(path: Path) -> Path | None:
    """The run directory ``path`` is in (its directory or one above holds a tkbench
    manifest), looked up through the resolved parent; None when it is in none."""
    parent = Path(os.path.realpath(Path(path).absolute().parent))
    for d in (parent, *parent.parents):
        if _is_manifest(d / "manifest.json"):
            return d
    return None


def _check_record(path: Path, what: str) -> None:
    root = run_directory_of(path)
    if root is None:
        return
    inside = Path(os.path.realpath(Path(path).absolute().parent)) / Path(path).name
    rel = inside.relative_to(root)
    if len(rel.parts) > 1 or rel.suffix in _RECORD_SUFFIXES or rel.name == "manifest.json":
        raise InputError(
            f"{what} {path} is a record of the run directory {root}: give another file"
        )


def _refusal(path: Path, what: str, st: os.stat_result, linked: bool) -> InputError | None:
    """Why ``path`` (``st``: what it is, through the link when ``linked``) is no output
    tkbench writes; None when it is one."""
    mode = st.st_mode
    via = " (through a symbolic link)" if linked else ""
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return None
    if stat.S_ISREG(mode):
        if linked:
            return InputError(
                f"{what} {path} is a symbolic link to a regular file: tkbench does not "
                "write through links; give the file itself"
            )
        if st.st_uid != os.geteuid():
            return InputError(
                f"{what} {path} is another user's file (uid {st.st_uid}): tkbench replaces "
                "only your own files; give another name"
            )
        return None
    kind = (
        "a directory; give a file name"
        if stat.S_ISDIR(mode)
        else "a block device: outputs go to files, FIFOs and character devices only"
        if stat.S_ISBLK(mode)
        else "not a file, FIFO or character device"
    )
    return InputError(f"{what} {path}{via} is {kind}")


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise InputError(f"{path}: a component of the path is not a directory") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot look at it: {exc.strerror or exc}") from None


def check_output(path: Path, what: str) -> None:
    """Refuse, before any work, an output path :func:`write_output` would refuse, or
    one whose file could not be created (no directory to make it in, no permission).
    Creates nothing."""
    path = Path(path)
    if _std_fd(path) is not None:
        return
    _check_record(path, what)
    st = _lstat(path)
    if st is None:
        check_creatable(path, what)  # a probe file made and removed where it would go
        return
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.stat(path)
        except OSError:
            raise InputError(
                f"{what} {path} is a symbolic link to nothing: tkbench does not create "
                "files through links"
            ) from None
        refused = _refusal(path, what, target, linked=True)
    else:
        refused = _refusal(path, what, st, linked=False)
    if refused is not None:
        raise refused
    if stat.S_ISREG(st.st_mode) and not os.access(path.parent, os.W_OK | os.X_OK):
        raise InputError(f"{what} {path}: no write permission in {path.parent}")


def write_output(path: Path, data: str | bytes, what: str) -> None:
    """Write ``data`` to the output ``path`` by the rule of this module; a refusal is
    an :class:`InputError`, a failed write (``/dev/full``, a full filesystem) a
    :class:`DeviceError`, each one line."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd = _std_fd(path)
    if fd is not None:
        _to_descriptor(fd, payload, path, what)
        return
    _check_record(path, what)
    st = _lstat(path)
    if st is not None and (stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode)):
        check_output(path, what)  # refuses all but a FIFO or character device
        _in_place(path, payload, what)
        return
    if st is not None:
        refused = _refusal(path, what, st, linked=False)
        if refused is not None:
            raise refused
    _replace(path, payload, what, st)


def _failed(path: Path, what: str, exc: OSError) -> DeviceError:
    return DeviceError(f"{what} {path}: cannot write: {exc.strerror or exc}")


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def _to_descriptor(fd: int, payload: bytes, path: Path, what: str) -> None:
    """``/dev/stderr`` and its kin: written to the process's own descriptor, after
    what Python has buffered for it, so the lines stay in order."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()
    try:
        dup = os.dup(fd)
    except OSError:
        raise InputError(f"{what} {path}: file descriptor {fd} is not open") from None
    try:
        _write_all(dup, payload)
    except OSError as exc:
        raise _failed(path, what, exc) from None
    finally:
        os.close(dup)


def _in_place(path: Path, payload: bytes, what: str) -> None:
    """A FIFO or character device (or a link to one): opened for writing without
    creating or truncating anything, checked once open, written, never replaced."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise _failed(path, what, exc) from None
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):  # changed since it was looked at
            raise InputError(f"{what} {path} changed while it was opened: nothing written")
        _write_all(fd, payload)
    except OSError as exc:
        raise _failed(path, what, exc) from None
    finally:
        os.close(fd)


def _replace(path: Path, payload: bytes, what: str, old: os.stat_result | None) -> None:
    """A new file (``old`` None) or the user's own regular file: a temporary file in
    the same directory, then a hard link that cannot replace anything (new) or a rename
    over the very file that was looked at (replace)."""
    parent = path.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        dfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot use {parent}: {exc.strerror or exc}") from None
    tmp = f".{path.name}.{secrets.token_hex(6)}.tmp"
    created = False
    try:
        tfd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o666 if old is None else old.st_mode & 0o777,
            dir_fd=dfd,
        )
        created = True
        try:
            if old is not None:
                os.fchmod(tfd, old.st_mode & 0o777)  # whatever the umask: as it was
            _write_all(tfd, payload)
            os.fsync(tfd)
        finally:
            os.close(tfd)
        if old is None:
            _link_new(tmp, path, dfd, payload, what)
        else:
            now = _lstat_at(path.name, dfd)
            if now is None or (now.st_dev, now.st_ino) != (old.st_dev, old.st_ino):
                raise InputError(f"{what} {path} changed while it was written: left as it is")
            os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
            created = False
        with contextlib.suppress(OSError):
            os.fsync(dfd)
    except OSError as exc:
        raise _failed(path, what, exc) from None
    finally:
        if created:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
        os.close(dfd)


def _lstat_at(name: str, dfd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _link_new(tmp: str, path: Path, dfd: int, payload: bytes, what: str) -> None:
    """Give the written temporary file its name, only if nothing has that name: a hard
    link fails on any existing name, link or not.  A filesystem without hard links
    gets the file created under its name with ``O_EXCL`` (not atomic, never replacing)."""
    try:
        os.link(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
        return
    except FileExistsError:
        raise InputError(f"{what} {path} appeared while it was written: left as it is") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise
    try:
        fd = os.open(
            path.name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o666,
            dir_fd=dfd,
        )
    except FileExistsError:
        raise InputError(f"{what} {path} appeared while it was written: left as it is") from None
    try:
        _write_all(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)
