"""A captured block trace: one row per I/O the device was given, and the reading of
blktrace's binary records into it (pure).

A :class:`Trace` holds five columns and nothing else: when each I/O was issued to
the driver (ns from the start of the capture), how long the device took to complete
it (ns; -1 when the completion was not seen), its byte offset on the device, its size
in bytes and its direction (:data:`READ`, :data:`WRITE`, :data:`TRIM`).  No data, no
process ids or names: what the application wrote never leaves the server.

blktrace writes ``struct blk_io_trace`` records (``include/uapi/linux/blktrace_api.h``):
a 48-byte header in the host's byte order, then ``pdu_len`` bytes of payload.  An I/O
is its issue record (``D``, the request handed to the driver, after merges); its
completion (``C``) is paired with it by sector and direction, in order.  The records
are read with numpy (a Python loop reads only each payload's length).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from tkbench.errors import InputError

READ, WRITE, TRIM = 0, 1, 2
DIRECTIONS = ("read", "write", "trim")

# struct blk_io_trace: magic, sequence, time, sector, bytes, action, pid, device, cpu,
# error, pdu_len
RECORD = struct.Struct("<IIQQIIIIIHH")
MAGIC = 0x65617400
VERSION = 0x07
# action: the low 16 bits are the action code (and __BLK_TA_CGROUP, 1 << 8), the high
# 16 bits the categories (BLK_TC_*)
ACT_ISSUE = 7
ACT_COMPLETE = 8
TC_READ, TC_WRITE, TC_FLUSH = 1 << 16, 1 << 17, 1 << 18
TC_NOTIFY = 1 << 26
TC_DISCARD = 1 << 29
SECTOR = 512


@dataclass(frozen=True)
class Trace:
    """The I/Os of a capture, sorted by issue time (columns of equal length)."""

    issue_ns: np.ndarray  # uint64, from the start of the capture
    latency_ns: np.ndarray  # int64, issue to completion; -1 when not seen
    offset: np.ndarray  # uint64 bytes from the start of the device
    size: np.ndarray  # uint32 bytes
    op: np.ndarray  # uint8: READ, WRITE, TRIM

    def __post_init__(self) -> None:
        n = len(self.issue_ns)
        if any(len(c) != n for c in (self.latency_ns, self.offset, self.size, self.op)):
            raise ValueError("trace columns of different lengths")

    def __len__(self) -> int:
        return len(self.issue_ns)

    @classmethod
    def from_rows(cls, rows: Iterable[Sequence[int]]) -> Trace:
        """A trace from ``(issue_ns, latency_ns, offset, size, op)`` rows, sorted by
        issue time (stable, so rows issued together keep their order)."""
        data = list(rows)
        cols = list(zip(*data, strict=True)) if data else [(), (), (), (), ()]
        trace = cls(
            np.asarray(cols[0], dtype=np.uint64),
            np.asarray(cols[1], dtype=np.int64),
            np.asarray(cols[2], dtype=np.uint64),
            np.asarray(cols[3], dtype=np.uint32),
            np.asarray(cols[4], dtype=np.uint8),
        )
        return trace.sorted()

    def sorted(self) -> Trace:
        order = np.argsort(self.issue_ns, kind="stable")
        return Trace(*(c[order] for c in self.columns()))

    def columns(self) -> tuple[np.ndarray, ...]:
        return (self.issue_ns, self.latency_ns, self.offset, self.size, self.op)


# the same record as a numpy dtype (packed, as blktrace writes it)
RECORD_DTYPE = np.dtype(
    [("magic", "<u4"), ("sequence", "<u4"), ("time", "<u8"), ("sector", "<u8"),
     ("bytes", "<u4"), ("action", "<u4"), ("pid", "<u4"), ("device", "<u4"), ("cpu", "<u4"),
     ("error", "<u2"), ("pdu_len", "<u2")]
)  # fmt: skip
_PDU_LEN = struct.Struct("<H")
_PDU_AT = 46


def events(data: bytes) -> np.ndarray:
    """The records of one blktrace output (a per-CPU file or their concatenation), as
    an array of :data:`RECORD_DTYPE` (payloads skipped).

    A record cut short at the end (blktrace stopped mid-write) is dropped; anything
    that is not a blktrace record is an :class:`InputError`."""
    starts: list[int] = []
    pos, last = 0, len(data) - RECORD.size
    unpack = _PDU_LEN.unpack_from
    while pos <= last:  # only the payload's length is read here: the rest in numpy
        starts.append(pos)
        pos += RECORD.size + unpack(data, pos + _PDU_AT)[0]
    where = np.asarray(starts, dtype=np.int64)
    raw = np.frombuffer(data, dtype=np.uint8)
    recs = raw[where[:, None] + np.arange(RECORD.size)].copy().view(RECORD_DTYPE).ravel()
    bad = np.flatnonzero(recs["magic"] & 0xFFFFFF00 != MAGIC)
    if len(bad):
        i = int(bad[0])
        raise InputError(
            f"not a blktrace record at byte {starts[i]} (magic {int(recs['magic'][i]):#x})"
        )
    version = recs["magic"] & 0xFF
    if len(recs) and np.any(version != VERSION):
        other = int(version[version != VERSION][0])
        raise InputError(f"blktrace record version {other} (this reads {VERSION})")
    return recs


def directions(action: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """READ, WRITE or TRIM per record; -1 for a notice or an empty flush (a flush is
    filed as a read; a write with a pre-flush keeps its bytes)."""
    act = action.astype(np.int64)
    op = np.where(act & TC_DISCARD, TRIM, np.where(act & TC_WRITE, WRITE, READ))
    skip = (act & TC_NOTIFY != 0) | ((act & TC_FLUSH != 0) & (nbytes == 0))
    return np.where(skip, -1, op)


def from_events(recs: np.ndarray, base: int = 0, length: int | None = None) -> Trace:
    """The trace of issue and completion records: each issue (with bytes) is an I/O;
    the completions of a sector and direction pair with its issues in order (one that
    came before any issue of its sector, from an I/O issued before the trace began,
    is left out).

    ``base`` is the device's first byte in the records' numbering (a partition's start
    on its disk); I/Os outside ``[base, base + length)`` are left out.  Times start at
    the first record."""
    if len(recs) == 0:
        return Trace.from_rows([])
    t0 = int(recs["time"].min())
    code = recs["action"] & 0xFF
    op = directions(recs["action"], recs["bytes"])
    time = recs["time"].astype(np.int64) - t0
    sector = recs["sector"].astype(np.int64)
    offset = sector * SECTOR - base
    inside = offset >= 0
    if length is not None:
        inside &= offset + recs["bytes"].astype(np.int64) <= length
    issue = (code == ACT_ISSUE) & (op >= 0) & (recs["bytes"] > 0) & inside
    done = (code == ACT_COMPLETE) & (op >= 0)
    key = sector * 4 + op  # one per sector and direction
    order = np.lexsort((time[issue], key[issue]))
    ikey, itime = key[issue][order], time[issue][order]
    corder = np.lexsort((time[done], key[done]))
    ckey, ctime = key[done][corder], time[done][corder]
    first = np.searchsorted(ikey, ckey, side="left")
    has = first < len(ikey)
    has[has] &= ikey[first[has]] == ckey[has]
    has[has] &= ctime[has] >= itime[first[has]]
    ckey, ctime = ckey[has], ctime[has]
    rank = np.arange(len(ikey)) - np.searchsorted(ikey, ikey, side="left")
    lo = np.searchsorted(ckey, ikey, side="left")
    hi = np.searchsorted(ckey, ikey, side="right")
    j = lo + rank
    paired = j < hi
    latency = np.full(len(ikey), -1, dtype=np.int64)
    latency[paired] = ctime[j[paired]] - itime[paired]
    latency[latency < 0] = -1
    size = recs["bytes"][issue][order]
    ops = op[issue][order]
    offs = offset[issue][order]
    trace = Trace(
        itime.astype(np.uint64),
        latency,
        offs.astype(np.uint64),
        size.astype(np.uint32),
        ops.astype(np.uint8),
    )
    return trace.sorted()


_IOLOG_OPS = {"read": READ, "write": WRITE, "trim": TRIM}


def from_fio_iolog(text: str) -> Trace:
    """The I/Os of a fio version 3 iolog (fio's ``write_iolog``: a line per action,
    ``TIME FILE ACTION [OFFSET LENGTH]``, the time in µs from the job's start): its
    reads, writes and trims, issued at their times, their service time unknown (-1; a
    log holds no completions, so the reduction has no queue depth or service times).
    File actions (add, open, close) and syncs are skipped; a version 2 log (no times)
    or anything else is an :class:`InputError`."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "fio version 3 iolog":
        first = lines[0].strip() if lines else ""
        raise InputError(f"not a fio version 3 iolog (it begins {first[:40]!r})")
    rows: list[tuple[int, int, int, int, int]] = []
    for n, line in enumerate(lines[1:], start=2):
        parts = line.split()
        if len(parts) == 5 and parts[2] in _IOLOG_OPS:
            try:
                t, off, size = int(parts[0]), int(parts[3]), int(parts[4])
            except ValueError:
                raise InputError(f"iolog line {n}: not numbers: {line[:60]!r}") from None
            if t < 0 or off < 0 or size <= 0:
                raise InputError(f"iolog line {n}: a negative time, offset or size")
            rows.append((t * 1000, -1, off, size, _IOLOG_OPS[parts[2]]))
        elif len(parts) < 3:
            raise InputError(f"iolog line {n}: not an iolog action: {line[:60]!r}")
    return Trace.from_rows(rows)
