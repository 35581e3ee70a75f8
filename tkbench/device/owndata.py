"""What a run left on its target, so that the next run knows its own data.

Random data written over a drive or file now and then matches a weak on-disk
signature.  libblkid (util-linux 2.38) takes the two bytes ``JM`` at the start of
the last sector for a JMicron RAID member: one run in 65,536 that rewrites that
sector leaves one, and the next night's run would refuse the drive for "holding"
it.  Weakening the signature check is no answer; knowing tkbench's own data is.

When a run ends (however it ends), a *mark* is kept of the bytes every signature
probe reads: the target's size and a SHA-256 of its first and last
:data:`SPAN` bytes.  The next check of the target computes the same digest: if
a mark with that digest exists, nothing has changed those bytes since tkbench
wrote them, and a signature found inside them is tkbench's random data, not a
filesystem, partition table or RAID member someone made.  A single changed byte
in either span (a ``mkfs``, ``wipefs``, a new partition table) and the digest no
longer matches: the check refuses as before.

A mark is kept only for a run whose start found no signature it had to be forced
over (``--force``): the remnant of someone's filesystem never becomes tkbench's.

Marks live in :func:`state_dir`, one small JSON file per digest, the older mark
of the same target removed when a new one is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

# the bytes at each end a mark covers: beyond every superblock, label and
# partition-table probe of libblkid (LUKS2's last secondary header starts at 4 MiB)
SPAN = 8 << 20
# a signature this close to a span's inner edge may reach beyond it: not covered
_EDGE = 64 << 10
SYSTEM_DIR = Path("/var/lib/tkbench/written")  # root's marks, beside its history


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


@dataclass(frozen=True)
class Mark:
    """A run's data on a target, as the run left it."""

    digest: str
    size: int
    target: str  # the path the run wrote
    run: str  # the run directory
    written: str  # when the mark was kept (ISO 8601)

    def covers(self, offset: int) -> bool:
        """Whether a signature at ``offset`` lies inside the bytes the mark covers."""
        if not 0 <= offset < self.size:
            return False
        if self.size <= 2 * SPAN:
            return True  # the digest took all of it
        return offset < SPAN - _EDGE or offset >= self.size - SPAN


def _size_of(fd: int) -> int:
    return os.lseek(fd, 0, os.SEEK_END)


def digest(path: str) -> tuple[str, int]:
    """SHA-256 of ``path``'s size and its first and last :data:`SPAN` bytes (the
    whole of it when smaller), and the size.  Raises :class:`OSError`."""
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = _size_of(fd)
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


def _mark_file(where: Path, hexdigest: str) -> Path:
    return where / f"{hexdigest}.json"


def left_by_tkbench(path: str, where: Path | None = None) -> Mark | None:
    """The mark of the run whose data ``path`` still holds at both ends, if any."""
    try:
        hexdigest, _ = digest(path)
        raw = json.loads(_mark_file(where or state_dir(), hexdigest).read_text("utf-8"))
        mark = Mark(**{k: raw[k] for k in Mark.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return mark if mark.digest == hexdigest else None


def keep_mark(path: str, run: str, when: str, where: Path | None = None) -> Mark | None:
    """Keep the mark of the data a run leaves on ``path``; remove the older mark of
    the same target.  Returns None (and keeps nothing) when ``path`` cannot be read
    or the state directory cannot be written: the next run then checks as if there
    were no mark."""
    where = where or state_dir()
    try:
        hexdigest, size = digest(path)
        where.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    target = os.path.realpath(path)
    mark = Mark(hexdigest, size, target, run, when)
    _drop_marks_of(where, target, keep=hexdigest)
    fd, tmp = tempfile.mkstemp(dir=where, prefix=".mark-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(mark.__dict__, fh, indent=1)
            fh.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, _mark_file(where, hexdigest))
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return None
    return mark


def _drop_marks_of(where: Path, target: str, keep: str) -> None:
    for old in where.glob("*.json"):
        if old.stem == keep:
            continue
        try:
            if json.loads(old.read_text("utf-8")).get("target") == target:
                old.unlink()
        except (OSError, ValueError, AttributeError):
            continue
