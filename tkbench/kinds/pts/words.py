"""Words a requirement and a departure are said in (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tkbench.units import format_duration, format_size


def sizes(values: Iterable[int]) -> str:
    return ", ".join(format_size(b) if b else "composite (bssplit)" for b in values)


def mixes(values: Iterable[int]) -> str:
    return ", ".join(f"{m}/{100 - m}" for m in values)


def load(jobs: int, qd: int) -> str:
    return f"{jobs} thread{'s' if jobs != 1 else ''} x queue depth {qd}"


def short_load(t: int, q: int) -> str:
    return f"T{t}/Q{q}"


def pct(x: float) -> str:
    return f"{x * 100:g} %"


def times(x: float) -> str:
    return f"{x:.3g}x the user capacity"


def secs(values: Sequence[float]) -> str:
    return ", ".join(format_duration(v) for v in values) or "none"


def loop_words(mix_values: Sequence[int], size_values: Sequence[int]) -> str:
    return (
        f"R/W mixes ({mixes(mix_values)}) in the outer loop, block sizes "
        f"({sizes(size_values)}) in the inner loop"
    )


def loop_actual(points: Sequence[tuple[int, int]]) -> str:
    """The loop order a round's points (block size, read %) follow, in words."""
    mix_values = list(dict.fromkeys(m for _, m in points))
    size_values = list(dict.fromkeys(b for b, _ in points))
    mix_outer = [m for _, m in points] == sorted((m for _, m in points), key=mix_values.index)
    if mix_outer:
        return loop_words(mix_values, size_values)
    return (
        f"block sizes ({sizes(size_values)}) in the outer loop, R/W mixes "
        f"({mixes(mix_values)}) inside"
    )
