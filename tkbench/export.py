"""Export: every value of every test's measurement window as flat rows (pure).

One row per measured value: a point's IOPS, bandwidth, mean and maximum latency
as a whole (``direction`` ``all``) and per direction, and per direction its
pooled latency percentiles.  The values are the report's own: window, window means
(percentiles pooled over the window, never averaged) and steady-state verdict all
come from one :func:`tkbench.analysis.analyze_test`.  ``tkbench export`` writes the rows as CSV,
JSON lines or OpenMetrics (docs/automation.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from .analysis import analyze_test
from .report.labels import mix_label
from .store import RunData, TestData
from .units import format_size
from .vocab import metric as metric_of


@dataclass(frozen=True)
class Row:
    """One measured value of a measurement window, with what identifies it."""

    run_id: str | None  # the manifest's run_id; None for runs made before it existed
    run_dir: str
    host: str
    model: str
    serial: str
    firmware: str
    profile: str
    test: str
    point: str  # "4k 65/35"
    block_size: int  # bytes
    read_pct: int
    direction: str  # "all", "read" or "write"
    metric: str  # iops, bw, lat_mean, lat_max, p99, p99.9, ...
    value: float
    unit: str  # IOPS, MB/s or ms
    steady_state: bool | None  # None: not a steady-state test
    window: str  # the window's round numbers, "3-7"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


COLUMNS = tuple(f.name for f in fields(Row))


def _text(value: object) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _window_label(rounds: tuple[int, ...]) -> str:
    if not rounds:
        return ""
    return str(rounds[0]) if len(rounds) == 1 else f"{rounds[0]}-{rounds[-1]}"


def test_rows(run: RunData, test: TestData) -> Iterator[Row]:
    """The rows of one test: its plan's points in plan order, over its window."""
    m = run.manifest
    ident = m.target.identity
    a = analyze_test(test)
    window, means = a.window, a.means
    base = Row(
        run_id=m.run_id,
        run_dir=str(run.root),
        host=m.host.hostname,
        model=_text(ident.get("model")),
        serial=_text(ident.get("serial")),
        firmware=_text(ident.get("firmware")),
        profile=m.profile.name,
        test=test.name,
        point="",
        block_size=0,
        read_pct=0,
        direction="",
        metric="",
        value=math.nan,
        unit="",
        steady_state=a.steady,
        window=_window_label(window),
    )
    for p in test.plan.points:
        pm = means.get(p.key)
        if pm is None:
            continue
        values: list[tuple[str, str, float]] = [
            ("all", "iops", pm.iops),
            ("all", "bw", pm.bw_mbs),
            ("all", "lat_mean", pm.lat_mean_ms),
            ("all", "lat_max", pm.lat_max_ms),
        ]
        for name, d in pm.directions.items():
            values += [
                (name, "iops", d.iops),
                (name, "bw", d.bw_mbs),
                (name, "lat_mean", d.mean_ms),
                (name, "lat_max", d.max_ms),
            ]
            values += [(name, f"p{k}", v) for k, v in d.percentiles_ms.items()]
        for direction, metric, value in values:
            if math.isfinite(value):
                yield replace(
                    base,
                    point=f"{format_size(pm.bs)} {mix_label(pm.read_pct)}",
                    block_size=pm.bs,
                    read_pct=pm.read_pct,
                    direction=direction,
                    metric=metric,
                    value=float(value),
                    unit=metric_of(metric).unit,
                )


def rows(runs: Iterable[RunData]) -> list[Row]:
    """The rows of every test of every run that has measured rounds."""
    out: list[Row] = []
    for run in runs:
        for test in run.tests:
            if test.rounds:
                out.extend(test_rows(run, test))
    return out
