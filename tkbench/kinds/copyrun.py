"""The copy step of a copy test (tkbench.kinds.copy): the engine's runner step for a test
of kind ``copy``, in place of fio.

In the test's directory of the run's working directory (``copy/``), every file set
is written once per data pattern (``src-SET-PATTERN/``): each file fsynced, its
cached pages dropped, its checksum kept in the set's marker file, written last
(``.complete.json``), so a resumed run reuses a complete set and writes an
incomplete one anew.  A copy (``dst/``) then:

1. drops the sources' cached pages (``posix_fadvise(POSIX_FADV_DONTNEED)``: they are
   clean, so the kernel lets them go), and with ``drop_caches`` the kernel's page,
   dentry and inode caches too (``sync``, then ``3`` into ``/proc/sys/vm/drop_caches``;
   root only);
2. is timed from the first folder it makes until every file it wrote and every
   folder it made is fsynced: each file read with ``read()`` into one buffer of
   ``copy_buffer`` bytes and written from it with ``write()``, one file after the
   other in the set's order.  Nothing else is used: no ``copy_file_range``,
   ``sendfile``, ``FICLONE``/reflink or server-side copy, which would let the
   filesystem share extents or the kernel skip the data's trip through memory;
3. with ``verify``, after the timing: every copied file's pages are dropped and
   the file read back and compared with its source's checksum; a difference fails
   the run;
4. is removed, so every run starts with no copy on the volume.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tkbench import cache
from tkbench.errors import DeviceError, Interrupted
from tkbench.kinds.copy import DIR, Layout, layout, own
from tkbench.plan.model import Point
from tkbench.profile.model import CopySet, TestSpec
from tkbench.rundir.jsonfile import replace_file
from tkbench.rundir.records import Direction, PlannedPoint, PointResult

MARKER = ".complete.json"
DROP_CACHES = Path(cache.DROP_CACHES)  # root's; refused for others before the run (runs.py)
BLOCK = 4096


def fill(buf: memoryview, data: str) -> None:
    """Fill ``buf`` with fresh bytes of a data pattern: zeros, random bytes, or
    ``compressible-NN`` (each 4 KiB block NN % zeros after random bytes: it compresses
    by about NN %, as fio's ``buffer_compress_percentage`` = NN does)."""
    n = len(buf)
    if data == "zero":
        buf[:] = bytes(n)
    elif data == "random":
        buf[:] = os.urandom(n)
    else:
        pct = int(data.rsplit("-", 1)[1])
        k = BLOCK * (100 - pct) // 100
        buf[:] = bytes(n)
        for off in range(0, n, BLOCK):
            end = min(off + k, n)
            buf[off:end] = os.urandom(end - off)


def _digest() -> hashlib.blake2b:
    return hashlib.blake2b(digest_size=16)


def _fsync_path(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def drop_pages(path: Path) -> None:
    """Ask the kernel to drop a file's cached pages (clean pages go at once)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Copied:
    """One timed copy of a file set."""

    point: PlannedPoint
    seconds: float
    reads: int  # read() calls
    writes: int  # write() calls
    folders: int  # folders made (the copy's own included)
    verified: bool

    @property
    def mb_s(self) -> float:
        return self.point.size / self.seconds / 1e6

    def result(self) -> PointResult:
        size, s = float(self.point.size), self.seconds
        planned = {f.name: getattr(self.point, f.name) for f in dataclasses.fields(PlannedPoint)}

        def direction(calls: int) -> Direction:
            return Direction(
                io_bytes=size,
                total_ios=float(calls),
                iops=calls / s,
                bw_bytes=size / s,
                runtime_ms=s * 1000.0,
            )

        return PointResult(
            **planned, bw_bytes=size / s, read=direction(self.reads), write=direction(self.writes)
        )

    def line(self) -> str:
        p = self.point
        return (
            f"{p.copy_set} {p.data}: {p.files} file(s), {self.folders} folder(s), "
            f"{p.size} bytes in {self.seconds:.6f} s = {self.mb_s:.3f} MB/s; "
            f"{self.reads} read(s), {self.writes} write(s); "
            + ("verified against the sources" if self.verified else "not verified")
        )


class CopySession:
    """A copy test's files in the working directory ``workdir``: its sources, made
    (or found complete) by :meth:`prepare`, and one copy at a time (:meth:`copy`)."""

    def __init__(
        self,
        spec: TestSpec,
        workdir: Path,
        log: Callable[[str], None] = lambda _m: None,
        stop: Callable[[], bool] = lambda: False,
    ) -> None:
        self.spec = spec
        self.root = workdir / DIR
        self.log = log
        self.stop = stop
        self.sums: dict[tuple[str, str], dict[str, str]] = {}  # (set, pattern) -> path -> hash
        self._buf = bytearray(own(spec).copy_buffer)

    # ------------------------------------------------------------------ sources
    def source(self, kind: str, data: str) -> Path:
        return self.root / f"src-{kind}-{data}"

    @property
    def destination(self) -> Path:
        return self.root / "dst"

    def prepare(self, announce: Callable[[str, int], None] = lambda _w, _n: None) -> None:
        """Every set x pattern on disk, complete; a copy left by a killed run removed."""
        try:
            self.root.mkdir(mode=0o700, exist_ok=True)
            shutil.rmtree(self.destination, ignore_errors=True)
            for s in own(self.spec).sets:
                for data in own(self.spec).data_patterns:
                    found = self._complete(s, data)
                    if found is None:
                        self._check_stop()
                        announce(f"writing the {s.kind} set ({data})", s.size)
                        found = self._write_source(s, data)
                    self.sums[(s.kind, data)] = found
        except OSError as exc:
            raise DeviceError(f"copy test {self.spec.name}: {self._why(exc)}") from None

    def _complete(self, s: CopySet, data: str) -> dict[str, str] | None:
        where = self.source(s.kind, data)
        try:
            marker = json.loads((where / MARKER).read_text(encoding="utf-8"))
            sums = {str(k): str(v) for k, v in marker["sums"].items()}
            lay = layout(s)
            if marker["set"] != s.label or sorted(sums) != sorted(p for p, _ in lay.files):
                raise ValueError("another set")
            for rel, size in lay.files:
                if os.lstat(where / rel).st_size != size:
                    raise ValueError("another size")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        self.log(f"copy test {self.spec.name}: reusing the complete {s.kind} set ({data})")
        return sums

    def _write_source(self, s: CopySet, data: str) -> dict[str, str]:
        where = self.source(s.kind, data)
        shutil.rmtree(where, ignore_errors=True)
        lay = layout(s)
        where.mkdir(mode=0o700)
        for d in lay.dirs:
            (where / d).mkdir()
        view = memoryview(self._buf)
        sums: dict[str, str] = {}
        for rel, size in lay.files:
            h = _digest()
            fd = os.open(where / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                left = size
                while left:
                    chunk = view[: min(left, len(view))]
                    fill(chunk, data)
                    h.update(chunk)
                    _write_all(fd, chunk)
                    left -= len(chunk)
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            sums[rel] = h.hexdigest()
        for d in (*lay.dirs, ""):
            _fsync_path(where / d, directory=True)
        marker = json.dumps({"set": s.label, "data": data, "sums": sums})
        replace_file(where / MARKER, marker + "\n")  # written last: the set is complete
        self.log(
            f"copy test {self.spec.name}: wrote the {s.kind} set ({data}): "
            f"{len(lay.files)} file(s), {s.size} bytes"
        )
        return sums

    # ------------------------------------------------------------------ copies
    def copy(self, point: Point | PlannedPoint, keep: bool = False) -> Copied:
        """One timed copy of ``point``'s set and pattern (see the module's steps);
        ``keep``: leave the copy in :attr:`destination` until the next copy or
        :meth:`close` (to look at it)."""
        planned = point.record() if isinstance(point, Point) else point
        s = next(x for x in own(self.spec).sets if x.kind == planned.copy_set)
        lay = layout(s)
        src = self.source(s.kind, planned.data)
        try:
            shutil.rmtree(self.destination, ignore_errors=True)
            self.cool(planned)
            seconds, reads, writes = self._timed_copy(src, lay)
            if own(self.spec).verify:
                self._verify(lay, self.sums[(s.kind, planned.data)], planned)
        except OSError as exc:
            raise DeviceError(
                f"copy test {self.spec.name}, set {s.kind} ({planned.data}): {self._why(exc)}"
            ) from None
        finally:
            if not keep:
                shutil.rmtree(self.destination, ignore_errors=True)
        return Copied(planned, seconds, reads, writes, len(lay.dirs) + 1, own(self.spec).verify)

    def cool(self, point: Point | PlannedPoint) -> None:
        """Drop the cached pages of ``point``'s sources (and with ``drop_caches`` the
        kernel's caches): the copy reads them from the drive."""
        planned = point.record() if isinstance(point, Point) else point
        s = next(x for x in own(self.spec).sets if x.kind == planned.copy_set)
        src = self.source(s.kind, planned.data)
        for rel, _ in layout(s).files:
            drop_pages(src / rel)
        if self.spec.drop_caches:
            os.sync()
            DROP_CACHES.write_text("3\n", encoding="ascii")

    def _timed_copy(self, src: Path, lay: Layout) -> tuple[float, int, int]:
        dst = self.destination
        buf = self._buf
        view = memoryview(buf)
        reads = writes = 0
        t0 = time.perf_counter()
        dst.mkdir(mode=0o700)
        for d in lay.dirs:
            (dst / d).mkdir()
        for rel, _ in lay.files:
            sfd = os.open(src / rel, os.O_RDONLY)
            try:
                dfd = os.open(dst / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    while True:
                        n = os.readv(sfd, [buf])
                        reads += 1
                        if n == 0:
                            break
                        writes += _write_all(dfd, view[:n])
                finally:
                    os.close(dfd)
            finally:
                os.close(sfd)
        # durable: every file's data, then every folder's entries (deepest first), and
        # the entry of the copy's own folder in its parent
        for rel, _ in lay.files:
            _fsync_path(dst / rel)
        for d in reversed(lay.dirs):
            _fsync_path(dst / d, directory=True)
        _fsync_path(dst, directory=True)
        _fsync_path(self.root, directory=True)
        return time.perf_counter() - t0, reads, writes

    def _verify(self, lay: Layout, sums: dict[str, str], p: PlannedPoint) -> None:
        view = memoryview(self._buf)
        for rel, size in lay.files:
            path = self.destination / rel
            drop_pages(path)
            h = _digest()
            got = 0
            with open(path, "rb", buffering=0) as fh:
                while n := fh.readinto(view):
                    h.update(view[:n])
                    got += n
            if got != size or h.hexdigest() != sums[rel]:
                raise DeviceError(
                    f"copy test {self.spec.name}, set {p.copy_set} ({p.data}): the copy of "
                    f"{rel} differs from its source ({got} of {size} bytes read back)"
                )

    def close(self) -> None:
        """Remove the test's files (sources and any copy)."""
        shutil.rmtree(self.root, ignore_errors=True)

    def _check_stop(self) -> None:
        if self.stop():
            raise Interrupted("stop requested")

    @staticmethod
    def _why(exc: OSError) -> str:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"


def _write_all(fd: int, data: memoryview) -> int:
    """Write all of ``data`` with write(); the number of write() calls."""
    calls = 0
    off = 0
    while off < len(data):
        off += os.write(fd, data[off:])
        calls += 1
    return calls


def round_log(copies: list[Copied]) -> str:
    """The round's copies for people (``rounds/NNNN.log``)."""
    return "".join(f"{c.line()}\n" for c in copies)
