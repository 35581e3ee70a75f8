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

import dataclasses
import gzip
import hashlib
import json
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tkbench.errors import InputError
from tkbench.outputs.files import write_output
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
class Workload:
    """A workload file's contents: its header (with the reduction) and its trace."""

    header: dict[str, Any]
    trace: Trace
    # the SHA-256 (hex) and size of the file it was read from ("" and 0: not read from
    # one), which a run pins so that its resume replays the same file
    sha256: str = ""
    size: int = 0

    @property
    def reduction(self) -> dict[str, Any]:
        return dict(self.header["reduction"])

    @property
    def capacity_bytes(self) -> int:
        return int(self.header["device"]["capacity_bytes"])


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
    return Workload(header, _columns(raw[end + 1 :], header, name))


def _columns(body: bytes, header: dict[str, Any], name: str) -> Trace:
    rows = header.get("rows")
    widths = [np.dtype(dt).itemsize for _, dt in COLUMNS]
    if not isinstance(rows, int) or rows < 0 or len(body) != rows * sum(widths):
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
    for key in ("device", "reduction"):
        if not isinstance(header.get(key), dict):
            raise InputError(f"{name} is damaged: its header has no {key}")
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
    return dataclasses.replace(
        decode(data, str(path)), sha256=hashlib.sha256(data).hexdigest(), size=len(data)
    )


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
