"""What a run left on its target, so that the next run knows its own data.

Random data written over a drive or file now and then matches a weak on-disk
signature.  libblkid (util-linux 2.38) takes the two bytes ``JM`` at the start of
the last sector for a JMicron RAID member: one run in 65,536 that rewrites that
sector leaves one, and the next night's run would refuse the drive for "holding"
it.  Weakening the signature check is no answer; knowing tkbench's own data is.

When a run that wrote to its target ends (however it ends), a *mark* is kept: the
target (its resolved path; a file's device, inode and inode generation, a block
device's device number and serial), its size, a SHA-256 of its first and last
:data:`SPAN` bytes (the bytes every signature probe reads) and the signatures --
type and offset -- that the probe finds in them, provided the target still holds
what the run's last write left (the digest taken when its writes ended) and only
those signatures inside the byte ranges the run wrote.  A mark is believed only
for its own target: the same bytes copied onto another file are no licence.

The next check of the target computes the digest again.  A signature is tkbench's
own only if a mark with that digest exists for this target *and* lists that very
signature at that offset inside the spans: then the bytes it lies in are exactly
as tkbench's run left them, and that run saw it there.  A single
changed byte in either span (a ``mkfs``, ``wipefs``, a new partition table), a
signature the mark does not list (one that a newer libblkid finds in the same
bytes), one outside the spans or without an offset: the check refuses as before.

A mark is kept only for a run whose start found no signature it had to be forced
over (``--force``) -- the remnant of someone's filesystem never becomes tkbench's
-- that wrote to the target (a purge or a fio run started), and whose fio wrote
this host's target (not a fio server's).

Marks live in :func:`state_dir`, one small JSON file per digest, the older mark of
the same target removed when a new one is written.  They are believed only from a
directory and files owned by this user (or root) that nobody else may write: a
mark is a licence to write over a signature.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from tkbench.rundir.jsonfile import replace_file

# the bytes at each end a mark covers: beyond every superblock, label and
# partition-table probe of libblkid (LUKS2's last secondary header starts at 4 MiB)
SPAN = 8 << 20
# a signature this close to a span's inner edge may reach beyond it: not covered
_EDGE = 64 << 10
SYSTEM_DIR = Path("/var/lib/tkbench/written")  # root's marks, beside its history
# reading 16 MiB of a target takes well under a second; a drive that does not answer
# in this long (a hung device after an interrupt) gets no mark rather than a hang
KEEP_TIMEOUT = 60.0
_MAX_MARK = 1 << 20  # bytes: a mark file larger than this is no mark of tkbench's


def state_dir() -> Path:
    """``$TKBENCH_STATE/written``; else root's ``/var/lib/tkbench/written``; else
    ``$XDG_STATE_HOME/tkbench/written`` (``~/.local/state`` when unset)."""
    env = os.environ.get("TKBENCH_STATE")
    if env:
        return Path(env) / "written"
    if os.geteuid() == 0:
        return SYSTEM_DIR
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "tkbench" / "written"


MARK_VERSION = 2  # 2: bound to the target and to the bytes tkbench wrote


@dataclass(frozen=True)
class Mark:
    """A run's data on a target, as the run left it."""

    digest: str
    size: int
    target: str  # the path the run wrote, every link resolved
    run: str  # the run directory
    written: str  # when the mark was kept (ISO 8601)
    # the signatures the probe found in the spans when the mark was kept
    signatures: tuple[tuple[str, int], ...] = ()
    # which target: a regular file's filesystem device, inode and inode generation, a
    # block device's device number and what the kernel says identifies the drive
    # (serial, WWID)
    node: tuple[int, int, int] = (0, 0, 0)
    drive: str = ""
    # the byte ranges [start, end) the run wrote (its purge, its fio jobs' regions)
    extent: tuple[tuple[int, int], ...] = ()

    def covers(self, offset: int) -> bool:
        """Whether a signature at ``offset`` lies inside the bytes the mark covers: the
        digested spans, and the bytes the run wrote."""
        if not 0 <= offset < self.size:
            return False
        if not any(start <= offset < end for start, end in self.extent):
            return False
        if self.size <= 2 * SPAN:
            return True  # the digest took all of it
        return offset < SPAN - _EDGE or offset >= self.size - SPAN

    def vouches(self, kind: str, offset: int | None) -> bool:
        """Whether the signature ``kind`` at ``offset`` is one tkbench's run left: in
        the digested bytes it wrote, and seen there when the mark was kept."""
        return offset is not None and self.covers(offset) and (kind, offset) in self.signatures


def identify_node(path: str) -> tuple[str, tuple[int, int, int], str]:
    """Which target ``path`` is: its resolved path; (device, inode, generation) of a
    regular file or (device number, 0, 0) of a block device; and a block device's
    drive identity (serial or WWID from sysfs, a loop device's backing file; empty
    when none).  Raises
    :class:`OSError`."""
    resolved = os.path.realpath(path)
    fd = os.open(resolved, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        st = os.fstat(fd)
        if stat.S_ISBLK(st.st_mode):
            return resolved, (st.st_rdev, 0, 0), _drive_identity(st.st_rdev)
        return resolved, (st.st_dev, st.st_ino, inode_generation(fd)), ""
    finally:
        os.close(fd)


FS_IOC_GETVERSION = 0x80087601  # _IOR('v', 1, long)


def inode_generation(fd: int) -> int:
    """The inode's generation number (``FS_IOC_GETVERSION``): a new file that gets a
    removed file's inode number gets another generation (ext4, XFS, Btrfs).  0 where
    the filesystem keeps none."""
    import fcntl
    import struct

    try:
        raw = fcntl.ioctl(fd, FS_IOC_GETVERSION, bytes(8))
    except OSError:
        return 0
    return int(struct.unpack("l", raw)[0]) & 0xFFFFFFFF


def _drive_identity(rdev: int) -> str:
    base = Path(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}")
    # a loop device has no serial: the file behind it says which one it is
    for name in ("device/serial", "device/wwid", "wwid", "serial", "loop/backing_file"):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            text = (base / name).read_text(encoding="utf-8").strip()
            if text:
                return f"{name.rsplit('/', 1)[-1]}:{text}"
    return ""


def digest(path: str) -> tuple[str, int]:
    """SHA-256 of ``path``'s size and its first and last :data:`SPAN` bytes (the
    whole of it when smaller), and the size.  Raises :class:`OSError`."""
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        # what the device holds, not pages cached before a passthrough purge
        with contextlib.suppress(OSError):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        h.update(size.to_bytes(8, "little"))
        spans = [(0, min(SPAN, size))]
        if size > SPAN:
            tail = max(SPAN, size - SPAN)
            spans.append((tail, size - tail))
        for start, length in spans:
            done = 0
            while done < length:
                chunk = os.pread(fd, min(1 << 20, length - done), start + done)
                if not chunk:
                    break
                h.update(chunk)
                done += len(chunk)
    finally:
        os.close(fd)
    return h.hexdigest(), size


def digest_within(path: str, timeout: float = KEEP_TIMEOUT) -> tuple[str, int] | None:
    """:func:`digest` given at most ``timeout`` seconds (a hung drive gives None, not a
    hang), or None when ``path`` cannot be read."""
    found: list[tuple[str, int]] = []

    def measure() -> None:
        with contextlib.suppress(OSError):
            found.append(digest(path))

    worker = threading.Thread(target=measure, name="tkbench-digest", daemon=True)
    worker.start()
    worker.join(timeout)
    return found[0] if found else None


def _mark_file(where: Path, hexdigest: str) -> Path:
    return where / f"{hexdigest}.json"


def _trusted(st: os.stat_result) -> bool:
    """Owned by this user or root, and writable by nobody else."""
    return st.st_uid in (os.geteuid(), 0) and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read_mark(path: Path) -> dict[str, object] | None:
    """A mark file's JSON object, if the file is a trusted regular file (a FIFO, a link,
    a file others may write or a huge one is no mark)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _trusted(st) or st.st_size > _MAX_MARK:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = json.loads(fh.read(_MAX_MARK))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else None


def _mark_of(raw: dict[str, object]) -> Mark | None:
    """A :class:`Mark` from its JSON object, every field of its type, or None."""
    if raw.get("version") != MARK_VERSION:
        return None  # an older mark names no target: no licence for any
    texts = [raw.get(k) for k in ("digest", "target", "run", "written", "drive")]
    size, sigs = raw.get("size"), raw.get("signatures")
    node, extent = raw.get("node"), raw.get("extent")
    if not all(isinstance(t, str) for t in texts) or type(size) is not int:
        return None
    if not isinstance(sigs, list) or not all(
        isinstance(s, list) and len(s) == 2 and isinstance(s[0], str) and type(s[1]) is int
        for s in sigs
    ):
        return None
    if not _ints(node, 3) or not isinstance(extent, list) or not all(_ints(e, 2) for e in extent):
        return None
    d, target, run, written, drive = (str(t) for t in texts)
    return Mark(
        d,
        size,
        target,
        run,
        written,
        tuple((str(s[0]), int(s[1])) for s in sigs),
        (int(node[0]), int(node[1]), int(node[2])),  # type: ignore[index]
        drive,
        tuple((int(e[0]), int(e[1])) for e in extent),
    )


def _ints(value: object, count: int) -> bool:
    return isinstance(value, list) and len(value) == count and all(type(v) is int for v in value)


def left_by_tkbench(path: str, where: Path | None = None) -> Mark | None:
    """The mark of the run whose data ``path`` still holds at both ends, if any: made
    for this very target (its resolved path, and the same file or drive), not only
    for the same bytes."""
    where = where or state_dir()
    try:
        if not _trusted(os.stat(where)):
            return None
        resolved, node, drive = identify_node(path)
        hexdigest, size = digest(path)
    except OSError:
        return None
    raw = _read_mark(_mark_file(where, hexdigest))
    mark = _mark_of(raw) if raw is not None else None
    if mark is None or mark.digest != hexdigest or mark.size != size:
        return None
    if (mark.target, mark.node, mark.drive) != (resolved, node, drive):
        return None  # the same bytes on another file or drive: a copy, no licence
    return mark


def keep_mark(
    path: str,
    run: str,
    when: str,
    probe: Callable[[str], Sequence[tuple[str, int | None]]],
    where: Path | None = None,
    timeout: float = KEEP_TIMEOUT,
    *,
    ended: str | None,
    extent: Sequence[tuple[int, int]],
) -> Mark | None:
    """Keep the mark of the data a run leaves on ``path``: the signatures ``probe``
    finds on it now (type and offset) that lie in ``extent`` (the byte ranges the run
    wrote), provided the target still holds what it held when the run's last write
    ended (``ended``: the digest taken then) before and after the probe.  Removes the
    older mark of the same target.  Returns None (and keeps nothing) when the target
    changed since, cannot be read within ``timeout`` seconds, or the state directory
    cannot be written: the next run then checks as if there were no mark.  Never
    raises for what the target or the directory do."""
    where = where or state_dir()
    if ended is None:
        return None  # nothing says what the last write left
    seen: list[tuple[str, int]] = []

    def look() -> None:
        with contextlib.suppress(OSError):
            seen.extend(sorted((k, o) for k, o in probe(path) if o is not None))
            seen.append(("", -1))  # the probe finished

    before = digest_within(path, timeout)
    if before is None or before[0] != ended:
        return None  # written by someone else after tkbench's last write (or unreadable)
    worker = threading.Thread(target=look, name="tkbench-mark", daemon=True)
    worker.start()
    worker.join(timeout)
    after = digest_within(path, timeout)
    if not seen or seen[-1] != ("", -1) or after != before:
        return None  # the probe did not finish, or did not look at these bytes
    hexdigest, size = before
    try:
        target, node, drive = identify_node(path)
    except OSError:
        return None
    ranges = tuple(sorted((max(0, a), min(size, b)) for a, b in extent if a < b))
    sigs = tuple(s for s in seen[:-1] if _covered(size, ranges, s))
    mark = Mark(hexdigest, size, target, run, when, sigs, node, drive, ranges)
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o755)
        if not _trusted(os.stat(where)):
            return None
        _drop_marks_of(where, target, keep=hexdigest)
        text = json.dumps({"version": MARK_VERSION, **asdict(mark)}, indent=1) + "\n"
        replace_file(_mark_file(where, hexdigest), text, mode=0o644)
    except OSError:
        return None
    return mark


def _covered(size: int, extent: tuple[tuple[int, int], ...], sig: tuple[str, int]) -> bool:
    return Mark("", size, "", "", "", extent=extent).covers(sig[1])


def _drop_marks_of(where: Path, target: str, keep: str) -> None:
    for old in where.glob("*.json"):
        if old.stem == keep:
            continue
        raw = _read_mark(old)
        if raw is not None and raw.get("target") == target:
            with contextlib.suppress(OSError):
                old.unlink()
