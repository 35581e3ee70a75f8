"""The converters of a profile's values: each takes the TOML value and returns the
validated Python value or raises ValueError with a short reason."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from tkbench.units import format_duration, parse_duration, parse_size

Conv = Callable[[Any], Any]


def _int(lo: int, hi: int) -> Conv:
    def conv(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"expected an integer, got {_tname(v)}")
        if not lo <= v <= hi:
            raise ValueError(f"{v} is out of range {lo}..{hi}")
        return v

    return conv


def _float(lo: float, hi: float, lo_open: bool = False) -> Conv:
    def conv(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"expected a number, got {_tname(v)}")
        f = float(v)
        if not math.isfinite(f) or f > hi or f < lo or (lo_open and f == lo):
            raise ValueError(f"{v} is out of range {'(' if lo_open else '['}{lo:g}, {hi:g}]")
        return f

    return conv


def _percent_limit(v: Any) -> float:
    """A deviation limit such as ``"3%"``: a percentage above 0 and at most 100."""
    text = v.strip() if isinstance(v, str) else ""
    if not text.endswith("%"):
        raise ValueError(f'expected a percentage such as "3%", got {v!r}')
    try:
        f = float(text[:-1])
    except ValueError:
        raise ValueError(f'expected a percentage such as "3%", got {v!r}') from None
    if not math.isfinite(f) or f <= 0 or f > 100:
        raise ValueError(f"{text} is out of range: above 0 % and at most 100 %")
    return f


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expected true or false, got {_tname(v)}")
    return v


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError(f"expected a string, got {_tname(v)}")
    return v


def _choice(options: Iterable[str]) -> Conv:
    opts = tuple(options)

    def conv(v: Any) -> str:
        if v not in opts:
            raise ValueError(f"{v!r} is not one of {', '.join(opts)}")
        return str(v)

    return conv


def _size(lo: int = 1) -> Conv:
    def conv(v: Any) -> int:
        if isinstance(v, float):
            raise ValueError('expected a size such as "4k"')
        n = parse_size(v)
        if n < lo:
            raise ValueError(f"size {v!r} is below {lo}")
        return n

    return conv


def _block_size(v: Any) -> int:
    n = _size(512)(v)
    if n % 512:
        raise ValueError(f"block size {v!r} is not a multiple of 512")
    return n


DAY = 86400.0


def _duration(lo: float = 0.0, lo_open: bool = True, hi: float = 30 * DAY) -> Conv:
    """A duration above ``lo`` and at most ``hi``: a point or test lasting thousands
    of days is a typo, not a plan."""

    def conv(v: Any) -> float:
        s = parse_duration(v)
        if s < lo or (lo_open and s == lo):
            raise ValueError(f"duration {v!r} must be more than {lo:g} s")
        if s > hi:
            raise ValueError(f"duration {v!r} is longer than {format_duration(hi)}")
        return s

    return conv


def _list(item: Conv, min_len: int = 1, unique: bool = True) -> Conv:
    def conv(v: Any) -> tuple[Any, ...]:
        if not isinstance(v, list):
            raise ValueError(f"expected a list, got {_tname(v)}")
        if len(v) < min_len:
            raise ValueError(f"needs at least {min_len} entr{'y' if min_len == 1 else 'ies'}")
        out = tuple(item(x) for x in v)
        if unique and len(set(out)) != len(out):
            raise ValueError("contains duplicates")
        return out

    return conv


def _tname(v: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a table",
    }.get(type(v), type(v).__name__)
