"""Parsing and formatting of sizes, durations and rates (pure)."""

from __future__ import annotations

import math
import re
import time
from datetime import UTC, datetime
from fractions import Fraction

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtpe]?)(i?b?)\s*$", re.IGNORECASE)
_POW = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}


# the largest file or device offset Linux (and fio) can address: off_t is signed 64-bit
MAX_SIZE = 2**63 - 1


def parse_size(text: str | int) -> int:
    """Bytes from ``4k``, ``128K``, ``1024k``, ``64M``, ``2GiB``, ``512``.

    Suffixes are binary (k = 1024), as in fio's job files.  At most :data:`MAX_SIZE`.
    """
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"size must not be negative: {text}")
        value = text
    else:
        m = _SIZE_RE.match(str(text))
        if not m:
            raise ValueError(f"not a size: {text!r} (use e.g. 4k, 64M, 2G)")
        exact = Fraction(m.group(1)) * 1024 ** _POW[m.group(2).lower()]
        if exact.denominator != 1:
            raise ValueError(f"size is not a whole number of bytes: {text!r}")
        value = int(exact)
    if value > MAX_SIZE:
        raise ValueError(f"size {text} is beyond what Linux can address (8 EiB)")
    return value


def timestamp(epoch: float | None = None) -> str:
    """The one timestamp format of tkbench's logs and records: ISO 8601 in UTC with its
    offset, ``2026-11-23T09:07:36+00:00`` (now, or ``epoch`` seconds)."""
    t = time.time() if epoch is None else epoch
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def format_size(n: float) -> str:
    """Short binary size: 512, 4k, 128k, 1024k (block sizes as PTS names them)."""
    n = int(n)
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}k"
    return str(n)


# the block size of a point of several block sizes (``bssplit``): 0, shown as "composite"
COMPOSITE = 0


def size_label(bs: int) -> str:
    """A point's block size as people read it ("4k"; "composite" for a block-size mix)."""
    return "composite" if bs == COMPOSITE else format_size(bs)


def count(n: int, noun: str) -> str:
    """``1 job``, ``2 jobs``, ``1 outstanding I/O``: a number and its noun, singular or
    plural (the plural adds an "s")."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def human_bytes(n: float, decimal: bool = False) -> str:
    """``1.50 GiB`` (binary) or ``1.61 GB`` (decimal) for capacities."""
    base = 1000.0 if decimal else 1024.0
    units = ["B", "kB", "MB", "GB", "TB", "PB"] if decimal else ["B", "KiB", "MiB", "GiB", "TiB"]
    value = float(n)
    for unit in units:
        if abs(value) < base or unit == units[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= base
    return f"{value:.2f} {units[-1]}"


_DUR_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|us|s|m|h|d)?", re.IGNORECASE)
_DUR_MULT = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(text: str | float | int) -> float:
    """Seconds from ``60s``, ``0.5s``, ``500ms``, ``1m``, ``24h``, ``1h30m`` or a number."""
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, (int, float)):
        if text < 0 or not math.isfinite(text):
            raise ValueError(f"not a duration: {text!r}")
        return float(text)
    s = str(text).strip().lower()
    pos = 0
    total = 0.0
    for m in _DUR_RE.finditer(s):
        if m.start() != pos or not m.group(0):
            break
        total += float(m.group(1)) * _DUR_MULT[m.group(2)]
        pos = m.end()
    if not s or pos != len(s):
        raise ValueError(f"not a duration: {text!r} (use e.g. 60s, 500ms, 24h)")
    return total


def format_duration(seconds: float) -> str:
    """``1d 2h``, ``3h 05m``, ``4m 10s``, ``2.5 s``, ``300 ms``."""
    if not math.isfinite(seconds):
        return "unknown"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return (
            f"{seconds:.1f} s" if seconds < 10 and seconds != int(seconds) else f"{seconds:.0f} s"
        )
    minutes, sec = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {sec:02d}s"


def fio_duration(seconds: float) -> str:
    """A duration fio accepts exactly: whole milliseconds (``1500ms``)."""
    ms = round(seconds * 1000)
    return f"{ms}ms"
