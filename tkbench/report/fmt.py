"""Number, size, date and duration formatting for the report (pure).

One place decides how a number looks, so a value reads the same in the summary,
the tables and the captions: 4 significant digits, thousands separators, no
exponent notation, and an en dash for "no value".
"""

from __future__ import annotations

import math
import time

from tkbench.units import format_duration

DASH = "–"
MB = 1e6
GB = 1e9
MiB = 1024.0**2
GiB = 1024.0**3


def sig(value: float | None, digits: int = 4) -> str:
    """``81,978`` / ``1,702`` / ``712.4`` / ``0.06744``: ``digits`` significant digits.

    Numbers of ``digits`` or more integer digits are shown whole with thousands
    separators; smaller ones get as many decimals as the significant digits need.
    """
    if value is None or not math.isfinite(value):
        return DASH
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    rounded = round(value, decimals)
    # rounding may carry into a new digit (999.96 -> 1,000.0): keep the significant digits
    if rounded and math.floor(math.log10(abs(rounded))) > magnitude:
        decimals = max(0, decimals - 1)
    return f"{value:,.{decimals}f}"


def percent(fraction: float | None, decimals: int = 1) -> str:
    """``0.296`` -> ``29.6 %``."""
    if fraction is None or not math.isfinite(fraction):
        return DASH
    return f"{fraction * 100:.{decimals}f} %"


def signed_pct(delta: float | None) -> str:
    """A change in percent with its sign and a true minus: ``+4.2 %``, ``−11.0 %``."""
    if delta is None or not math.isfinite(delta):
        return "–"
    return f"{delta:+.1f} %".replace("-", "\u2212")


def limit(fraction: float) -> str:
    """An allowed fraction as the specification writes it: ``20 %``."""
    return f"{fraction * 100:g} %"


def gb(n: float | None) -> str:
    """Decimal gigabytes (10^9 bytes), as capacities and write totals are stated:
    ``960.2 GB``; below 1 GB in megabytes (10^6 bytes), ``67.11 MB``."""
    if n is None:
        return DASH
    if abs(n) < GB:
        return f"{sig(n / MB)} MB"
    return f"{sig(n / GB)} GB"


def capacity(n: float | None) -> str:
    """``15,363 GB (14,308 GiB, ...)``: decimal first, binary for comparison; below
    1 GB in MB and MiB (``67.11 MB (64.00 MiB, 67,108,864 bytes)``)."""
    if not n:
        return DASH
    binary = f"{sig(n / MiB)} MiB" if n < GB else f"{sig(n / GiB)} GiB"
    return f"{gb(n)} ({binary}, {int(n):,} bytes)"


def size(n: float | None) -> str:
    """Binary sizes: ``4,096 bytes``, ``128 KiB``, ``64 MiB``, ``23.54 GiB``."""
    if n is None:
        return DASH
    value = float(n)
    if value >= GiB:
        return f"{int(value // GiB):,} GiB" if value % GiB == 0 else f"{sig(value / GiB)} GiB"
    for unit, base in (("MiB", 1024.0**2), ("KiB", 1024.0)):
        if value >= base and value % base == 0:
            return f"{int(value // base):,} {unit}"
    return f"{int(value):,} bytes"


def when(ts: float | None) -> str:
    """Epoch seconds as ``2025-03-03 08:00:00 UTC`` (UTC, so every reader agrees)."""
    if ts is None or not math.isfinite(ts) or ts <= 0:
        return DASH
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def day(ts: float | None) -> str:
    if ts is None or not math.isfinite(ts) or ts <= 0:
        return DASH
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def duration(seconds: float | None) -> str:
    """``300 ms``, ``1.5 s``, ``60 s``, ``56m 00s``, ``23h 20m``, ``1d 0h``."""
    if seconds is None or not math.isfinite(seconds):
        return DASH
    if 10 <= seconds < 100:
        return f"{seconds:.0f} s"
    return format_duration(seconds)


def when_short(ts: float | None) -> str:
    """``03-03 10:22:21`` (UTC; the year is in the table's heading)."""
    if ts is None or not math.isfinite(ts) or ts <= 0:
        return DASH
    return time.strftime("%m-%d %H:%M:%S", time.gmtime(ts))


def rounds(numbers: tuple[int, ...] | list[int]) -> str:
    """``21–25`` for a contiguous range, ``3, 5, 9`` otherwise."""
    if not numbers:
        return DASH
    nums = list(numbers)
    if len(nums) > 1 and nums == list(range(nums[0], nums[0] + len(nums))):
        return f"{nums[0]}–{nums[-1]}"
    return ", ".join(str(n) for n in nums)


def rounds_phrase(numbers: tuple[int, ...] | list[int]) -> str:
    """``round 7`` or ``rounds 21–25``."""
    if len(numbers) == 1:
        return f"round {numbers[0]}"
    return f"rounds {rounds(numbers)}"
