"""Side-by-side comparison of runs (any number, any drives): the same points, deltas in %."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from . import measure
from .store import RunData
from .units import format_size


@dataclass(frozen=True)
class Row:
    test: str
    point: str  # "4k 0/100"
    metric: str
    unit: str
    values: tuple[float, ...]  # one per run (nan where a run lacks the point)

    def deltas(self) -> tuple[float, ...]:
        """Percent change of each run against the first."""
        base = self.values[0]
        return tuple(
            (v - base) / abs(base) * 100.0 if math.isfinite(v) and base else math.nan
            for v in self.values
        )

    def to_dict(self) -> dict[str, Any]:
        clean = [v if math.isfinite(v) else None for v in self.values]
        deltas = [d if math.isfinite(d) else None for d in self.deltas()]
        return {
            "test": self.test,
            "point": self.point,
            "metric": self.metric,
            "unit": self.unit,
            "values": clean,
            "delta_pct": deltas,
        }


UNITS = {"iops": "IOPS", "bw": "MB/s", "lat_mean": "ms", "p99.99": "ms"}


def _metrics(plan: dict[str, Any]) -> list[str]:
    tracked = [label.split()[0] for label in plan.get("tracking", [])]
    first = tracked[0] if tracked else "iops"
    return [first, "p99.99"] if first == "lat_mean" else [first]


def compare(runs: list[RunData]) -> list[Row]:
    """Rows for every (test, point) of the first run that has rounds, in plan order."""
    rows: list[Row] = []
    first = runs[0]
    for t in first.tests:
        if not t.rounds:
            continue
        others = [next((o for o in r.tests if o.name == t.name), None) for r in runs]
        for metric in _metrics(t.plan):
            for p in t.plan.get("points", []):
                bs, rp = int(p["bs"]), int(p["read_pct"])
                vals = tuple(
                    measure.value(o, metric, bs, rp) if o is not None and o.rounds else math.nan
                    for o in others
                )
                rows.append(
                    Row(
                        t.name,
                        f"{format_size(bs)} {rp}/{100 - rp}",
                        metric,
                        UNITS.get(metric, ""),
                        vals,
                    )
                )
    return rows


def run_label(run: RunData) -> str:
    ident = (run.manifest.get("target") or {}).get("identity") or {}
    return f"{ident.get('model', '?')} ({run.root.name})"


def format_rows(runs: list[RunData], rows: list[Row]) -> str:
    names = [run_label(r) for r in runs]
    lines = [
        f"run {i + 1}: {n}  [{r.root}]" for i, (n, r) in enumerate(zip(names, runs, strict=True))
    ]
    head = (
        f"{'test':<18} {'point':<11} {'metric':<9}"
        + "".join(f"{'run ' + str(i + 1):>14}" for i in range(len(runs)))
        + "".join(f"{'Δ run ' + str(i + 1):>12}" for i in range(1, len(runs)))
    )
    lines += ["", head, "-" * len(head)]
    for row in rows:
        vals = "".join(f"{_fmt(v):>14}" for v in row.values)
        deltas = "".join(
            f"{(f'{d:+.1f} %' if math.isfinite(d) else '-'):>12}" for d in row.deltas()[1:]
        )
        lines.append(f"{row.test:<18} {row.point:<11} {row.metric:<9}{vals}{deltas}")
    return "\n".join(lines)


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
