"""The workload file (``.tkw``): a captured trace and its reduction, versioned.

The file is gzip-compressed.  Inside: the line ``tkbench workload``, one line of JSON
(the header: ``format``, the device it was captured on, when and for how long, the
reduction of :mod:`.reduce`, and the trace's row count), then the trace's five columns
one after the other, little-endian: issue times (uint64 ns), service times (int64 ns,
-1 unknown), offsets (uint64 bytes), sizes (uint32 bytes), directions (uint8).
Offsets, sizes, directions and times only: never data.

Format history:

1. the first format (tkbench 0.1).

:func:`load` reads every format from :data:`OLDEST` to :data:`FORMAT`; an older or
newer file, or one that is cut short or altered, is one clear :class:`InputError`.
:func:`write` writes by the output rule of :mod:`tkbench.outputs.files` (atomically, never
over another user's file or a run directory's records).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import stat
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tkbench.errors import InputError
from tkbench.outputs.files import write_output
from tkbench.typed import build, dump
from tkbench.workload.reduce import reduce
from tkbench.workload.trace import Trace

FORMAT = 1
OLDEST = 1
MAGIC = b"tkbench workload\n"
SUFFIX = ".tkw"
# the dtype of each column, in the order they are stored
COLUMNS = (
    ("issue_ns", "<u8"),
    ("latency_ns", "<i8"),
    ("offset", "<u8"),
    ("size", "<u4"),
    ("op", "u1"),
)
_HEADER_MAX = 64 << 20
WHAT = "workload file"


@dataclass(frozen=True)
class Stream:
    """One I/O stream of a reduction: direction, block size (bytes), pattern (``rand`` or
    ``seq``), its I/Os and bytes and its shares (percent) of the reads' and writes'."""

    rw: str
    bs: int
    pattern: str
    ios: int
    bytes: int
    share_ios: float
    share_bytes: float


_OPTIONAL = {"omit_none": True}


@dataclass(frozen=True)
class Summary:
    """A distribution as :mod:`.reduce` summarises it (values None, and absent from its
    JSON, when it has no samples)."""

    samples: int = 0
    mean: float | None = field(default=None, metadata=_OPTIONAL)
    p50: float | None = field(default=None, metadata=_OPTIONAL)
    p90: float | None = field(default=None, metadata=_OPTIONAL)
    p99: float | None = field(default=None, metadata=_OPTIONAL)
    p99_9: float | None = field(default=None, metadata={**_OPTIONAL, "key": "p99.9"})
    max: float | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True)
class QueueDepth(Summary):
    """The queue depth each I/O saw, summarised, with the share (percent) of I/Os per
    depth (keys: the depths, as JSON keeps them)."""

    share: Mapping[str, float] = field(default_factory=dict, metadata={"numeric_keys": True})


@dataclass(frozen=True)
class Latency:
    """Service times (microseconds) of the reads and of the writes."""

    read: Summary = Summary()
    write: Summary = Summary()


@dataclass(frozen=True)
class Timeline:
    """IOPS and MB/s per ``interval_s`` seconds, reads and writes apart."""

    interval_s: float = 1.0
    read_iops: tuple[float, ...] = ()
    write_iops: tuple[float, ...] = ()
    read_mbps: tuple[float, ...] = ()
    write_mbps: tuple[float, ...] = ()


@dataclass(frozen=True)
class Reduction:
    """A workload's reduction (:func:`.reduce.reduce`), typed: its fields are the JSON
    a workload file's header and a replay stage's ``test.json`` (``capture``) hold, read
    once by :meth:`parse` and given back by :meth:`to_json`."""

    ios: int = 0
    bytes: int = 0
    trims: int = 0
    trim_bytes: int = 0
    duration_s: float = 0.0
    capacity_bytes: int = 0
    read_pct: float = 0.0
    read_bytes_pct: float = 0.0
    random_pct: float = 0.0
    iops: float = 0.0
    mbps: float = 0.0
    streams: tuple[Stream, ...] = ()
    timeline: Timeline = Timeline()
    queue_depth: QueueDepth = QueueDepth()
    interarrival_us: Summary = Summary()
    latency_us: Latency = Latency()
    heat: tuple[int, ...] = ()  # reads and writes per 1 % of the capacity

    @classmethod
    def parse(cls, data: Mapping[str, Any], name: str = "its header") -> Reduction:
        """The reduction in ``data`` (keys it lacks take their defaults: a stored
        ``capture`` may hold a part); :class:`InputError` naming what is wrong."""
        try:
            return build(cls, data, Path(name), error=InputError)
        except InputError as exc:  # "NAME: field ... is ...": the field is what to say
            detail = str(exc).removeprefix(f"{name}: ")
            raise InputError(f"{name}'s reduction is not one ({detail})") from None

    def to_json(self) -> dict[str, Any]:
        """The reduction as JSON, as :func:`.reduce.reduce` made it."""
        return dump(self)

    @property
    def read_latency_us(self) -> Summary:
        return self.latency_us.read

    @property
    def write_latency_us(self) -> Summary:
        return self.latency_us.write

    @property
    def queue_depth_share(self) -> dict[int, float]:
        """The percent of I/Os per queue depth."""
        return {int(k): v for k, v in self.queue_depth.share.items()}


@dataclass(frozen=True)
class Source:
    """The device a workload was captured on."""

    capacity_bytes: int = field(metadata={"minimum": 0})
    path: str = ""
    name: str = ""
    logical_block_bytes: int = 512


@dataclass(frozen=True)
class Header:
    """A workload file's header, typed (the reduction is :class:`Reduction`)."""

    device: Source
    reduction: Reduction
    format: int = FORMAT
    rows: int = field(default=0, metadata={"minimum": 0})
    duration_s: float | None = None
    captured_at: str | None = None
    tool: str = ""
    tkbench: str = ""
    dropped_events: int = 0


def read_header(data: Mapping[str, Any]) -> Header:
    """``data`` (a workload's header as JSON) typed; :class:`InputError` naming the field
    that is wrong."""
    try:
        return build(Header, data, Path("its header"), error=InputError)
    except InputError as exc:  # "its header: field ... is ...": one line
        raise InputError(str(exc).replace("its header: field", "its header's field", 1)) from None


@dataclass(frozen=True)
class Workload:
    """A workload file's contents: its header (as the file holds it, typed once in
    :attr:`info`) and its trace."""

    header: dict[str, Any]
    trace: Trace
    # the SHA-256 (hex) and size of the bytes it was read from ("" and 0: not read),
    # which a run pins so that its resume replays the same file
    sha256: str = ""
    size: int = 0

    info: Header = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "info", read_header(self.header))

    @property
    def reduction(self) -> Reduction:
        return self.info.reduction

    @property
    def capacity_bytes(self) -> int:
        return self.info.device.capacity_bytes


def of_trace(trace: Trace, device: dict[str, Any], duration_s: float, **header: Any) -> Workload:
    """A workload of ``trace`` on ``device`` (``path``, ``name``, ``capacity_bytes``,
    ``logical_block_bytes``) over ``duration_s`` seconds, with its reduction; ``header``:
    what else the file says of it (when, with which tool)."""
    reduction = reduce(trace, int(device["capacity_bytes"]), duration_s)
    return Workload(
        {**header, "device": dict(device), "duration_s": duration_s, "reduction": reduction},
        trace,
    )


def encode(workload: Workload) -> bytes:
    """The bytes of the file holding ``workload`` (its header's ``format`` set)."""
    header = {**workload.header, "format": FORMAT, "rows": len(workload.trace)}
    body = [MAGIC, json.dumps(header, sort_keys=True).encode() + b"\n"]
    for (_, dtype), column in zip(COLUMNS, workload.trace.columns(), strict=True):
        body.append(np.ascontiguousarray(column, dtype=dtype).tobytes())
    return gzip.compress(b"".join(body), compresslevel=6, mtime=0)


def write(path: Path, workload: Workload) -> None:
    """Write ``workload`` to ``path`` (see the module's docstring)."""
    write_output(Path(path), encode(workload), WHAT)


def decode(data: bytes, name: str = "workload file") -> Workload:
    """The workload in ``data``; :class:`InputError` naming what is wrong."""
    try:
        raw = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{name} is not a tkbench workload file or is damaged ({exc})") from None
    if not raw.startswith(MAGIC):
        raise InputError(f"{name} is not a tkbench workload file")
    end = raw.find(b"\n", len(MAGIC), len(MAGIC) + _HEADER_MAX)
    if end < 0:
        raise InputError(f"{name} is damaged: its header is cut short")
    try:
        header = json.loads(raw[len(MAGIC) : end])
    except (ValueError, RecursionError):
        raise InputError(f"{name} is damaged: its header is not JSON") from None
    if not isinstance(header, dict) or not isinstance(header.get("format"), int):
        raise InputError(f"{name} is damaged: its header has no format number")
    version = header["format"]
    if version > FORMAT:
        raise InputError(
            f"{name} has workload format {version}, newer than this tkbench reads "
            f"({OLDEST} to {FORMAT}): read it with a newer tkbench"
        )
    if version < OLDEST:
        raise InputError(
            f"{name} has workload format {version}, older than this tkbench reads "
            f"({OLDEST} to {FORMAT}): capture the workload again"
        )
    try:
        rows = read_header(header).rows
    except InputError as exc:
        raise InputError(f"{name} is damaged: {exc}") from None
    trace = _columns(raw[end + 1 :], rows, name)
    return Workload(header, trace, hashlib.sha256(data).hexdigest(), len(data))


def _columns(body: bytes, rows: int, name: str) -> Trace:
    widths = [np.dtype(dt).itemsize for _, dt in COLUMNS]
    if len(body) != rows * sum(widths):
        raise InputError(
            f"{name} is damaged: its trace holds {len(body)} bytes, not the {rows!r} rows "
            "its header names"
        )
    cols, pos = [], 0
    for (_, dtype), width in zip(COLUMNS, widths, strict=True):
        cols.append(np.frombuffer(body, dtype=dtype, count=rows, offset=pos).astype(dtype[-2:]))
        pos += rows * width
    trace = Trace(*cols)
    if rows and (np.any(np.diff(trace.issue_ns.astype(np.int64)) < 0) or trace.op.max() > 2):
        raise InputError(f"{name} is damaged: its trace is out of order or has unknown I/Os")
    return trace


def load(path: Path) -> Workload:
    """Read the workload file at ``path``."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a device: never ends
            raise InputError(f"{path} is not a regular file: give a workload file")
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise InputError(f"no workload file {path}") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a directory, not a workload file") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    return decode(data, str(path))


def fingerprint(path: Path) -> tuple[str, int] | None:
    """The SHA-256 (hex) and size of the file at ``path`` as it is now (None: there is
    no regular file there, or it cannot be read)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        digest, size = hashlib.sha256(), 0
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
        return digest.hexdigest(), size
    except OSError:
        return None
