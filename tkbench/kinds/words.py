"""Numbers as ``tkbench show`` writes them, for every type's lines."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def num(x: float) -> str:
    """4 significant digits with thousands separators: 81,978 / 1,701 / 0.08676."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def repeat_text(p: Mapping[str, Any]) -> str:
    """A repeated point for people: runs, mean, deviation (MiB/s)."""
    runs = ", ".join(num(x) for x in p["runs"])
    text = f"{p['unit']}: runs {runs}; mean {num(p['mean'])}, deviation ±{num(p['mean_abs_dev'])}"
    if p["mean_abs_dev_pct"] is not None:
        text += f" ({p['mean_abs_dev_pct']:.1f} %)"
    if p["ci95"] is not None:
        text += f", 95 % CI [{num(p['ci95'][0])}, {num(p['ci95'][1])}]"
    return text
