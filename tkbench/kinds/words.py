"""Numbers as ``tkbench show`` writes them, for every type's lines."""

from __future__ import annotations

from tkbench.analysis.repeat import Repeatability


def num(x: float) -> str:
    """4 significant digits with thousands separators: 81,978 / 1,701 / 0.08676."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def repeat_text(unit: str, rep: Repeatability) -> str:
    """A repeated point for people: runs, mean, deviation (in ``unit``)."""
    runs = ", ".join(num(x) for x in rep.runs)
    text = f"{unit}: runs {runs}; mean {num(rep.mean)}, deviation ±{num(rep.mean_abs_dev)}"
    if rep.mean_abs_dev_pct is not None:
        text += f" ({rep.mean_abs_dev_pct:.1f} %)"
    if rep.ci95 is not None:
        text += f", 95 % CI [{num(rep.ci95[0])}, {num(rep.ci95[1])}]"
    return text
