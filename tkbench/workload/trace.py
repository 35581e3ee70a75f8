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
completion (``C``) is paired with it by sector and direction, first in first out.
"""

from __future__ import annotations

import struct
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

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


class Event(NamedTuple):
    """One blktrace record, as far as a trace needs it."""

    time_ns: int
    sector: int
    nbytes: int
    action: int


def events(data: bytes) -> list[Event]:
    """The records of one blktrace output (a per-CPU file or their concatenation).

    A record cut short at the end (blktrace stopped mid-write) is dropped; anything
    that is not a blktrace record is an :class:`InputError`."""
    out: list[Event] = []
    pos, end = 0, len(data)
    while pos + RECORD.size <= end:
        magic, _seq, time_ns, sector, nbytes, action, *_rest, pdu_len = RECORD.unpack_from(
            data, pos
        )
        if magic & 0xFFFFFF00 != MAGIC:
            raise InputError(f"not a blktrace record at byte {pos} (magic {magic:#x})")
        if magic & 0xFF != VERSION:
            raise InputError(f"blktrace record version {magic & 0xFF} (this reads {VERSION})")
        out.append(Event(time_ns, sector, nbytes, action))
        pos += RECORD.size + pdu_len
    return out


def direction(action: int, nbytes: int) -> int | None:
    """READ, WRITE or TRIM for an I/O's record; None for a notice or an empty flush (a
    flush is filed as a read; a write with a pre-flush keeps its bytes)."""
    if action & TC_NOTIFY or (action & TC_FLUSH and nbytes == 0):
        return None
    if action & TC_DISCARD:
        return TRIM
    if action & TC_WRITE:
        return WRITE
    return READ


def from_events(evs: Iterable[Event], base: int = 0, length: int | None = None) -> Trace:
    """The trace of issue and completion records: each issue (with bytes) is an I/O,
    its completion the first unpaired one of the same sector and direction after it.

    ``base`` is the device's first byte in the records' numbering (a partition's start
    on its disk); I/Os outside ``[base, base + length)`` are left out.  Times start at
    the first record."""
    ordered = sorted(evs, key=lambda e: e.time_ns)
    if not ordered:
        return Trace.from_rows([])
    t0 = ordered[0].time_ns
    rows: list[list[int]] = []
    waiting: dict[tuple[int, int], deque[int]] = defaultdict(deque)
    for ev in ordered:
        code = ev.action & 0xFF
        if code not in (ACT_ISSUE, ACT_COMPLETE):
            continue
        op = direction(ev.action, ev.nbytes)
        if op is None:
            continue
        if code == ACT_ISSUE:
            if ev.nbytes == 0:
                continue
            offset = ev.sector * SECTOR - base
            if offset < 0 or (length is not None and offset + ev.nbytes > length):
                continue
            waiting[(ev.sector, op)].append(len(rows))
            rows.append([ev.time_ns - t0, -1, offset, ev.nbytes, op])
        else:
            queue = waiting.get((ev.sector, op))
            if queue:
                row = rows[queue.popleft()]
                row[1] = ev.time_ns - t0 - row[0]
    return Trace.from_rows(rows)
