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
from .analysis.volfigures import DEVIATION, UNITS, test_figures
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


def _blank(run: RunData, test: TestData) -> Row:
    """A row of the test with what identifies the run and the test, no value yet."""
    m = run.manifest
    ident = m.target.identity
    return Row(
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
        steady_state=None,
        window="",
    )


def test_rows(run: RunData, test: TestData) -> Iterator[Row]:
    """The rows of one test: its plan's points in plan order, over its window."""
    a = analyze_test(test)
    window, means = a.window, a.means
    base = replace(_blank(run, test), steady_state=a.steady, window=_window_label(window))
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


def figure_rows(run: RunData, test: TestData) -> list[Row]:
    """A volume benchmark's headline figures (tkbench.analysis.volfigures): per figure
    its mean over the test's runs (metric ``bw``, MB/s, or ``nodes_s``) and, with two
    runs or more, their mean absolute deviation (``mean_abs_dev_pct``, % of the mean).
    ``point`` is the figure's name without its unit (``iso.random``, ``best_write``,
    ``random-read.1.warm``); ``block_size`` is a sweep's best buffer size (else 0),
    ``direction`` a sweep's best's or a virtual-file operation's (else ``all``),
    ``read_pct`` 100 for a read and 0 else, ``window`` the runs (``1-3``)."""
    found = test_figures(test)
    if not found:
        return []
    base = _blank(run, test)
    out = []
    for f in found:
        ending = next(e for e in UNITS if f.name.endswith(e))
        n = len(f.runs.runs)
        row = replace(
            base,
            point=f.name[: -len(ending)].rstrip("._"),
            block_size=int(f.detail.get("buffer_size", 0)),
            read_pct=100 if f.direction == "read" else 0,
            direction=f.direction,
            metric="bw" if ending == "mb_s" else ending,
            value=float(f.value),
            unit=f.unit,
            window=_window_label(tuple(range(1, n + 1))),
        )
        out.append(row)
        pct = f.runs.mean_abs_dev_pct
        if n > 1 and pct is not None:
            out.append(replace(row, metric=DEVIATION, value=float(pct), unit="%"))
    return out


def rows(runs: Iterable[RunData]) -> list[Row]:
    """The rows of every test of every run that has measured rounds (a volume
    benchmark's: its headline figures, whose points share their keys)."""
    out: list[Row] = []
    for run in runs:
        for test in run.tests:
            if test.rounds:
                out.extend(figure_rows(run, test) or test_rows(run, test))
    return out
