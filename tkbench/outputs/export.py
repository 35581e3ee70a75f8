"""Export: every value of every test's measurement window as flat rows (pure).

One row per measured value: a point's IOPS, bandwidth, mean and maximum latency
as a whole (``direction`` ``all``) and per direction, and per direction its
pooled latency percentiles.  The values are the report's own: window, window means
(percentiles pooled over the window, never averaged) and steady-state verdict all
come from one :func:`tkbench.analysis.analyze_test`, computed once per test
(:mod:`tkbench.kinds.results.analysed`).  :func:`to_csv`,
:func:`to_jsonl` and :func:`to_openmetrics` format the rows for ``tkbench export``
(docs/automation.md, "Exporting values").
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from tkbench.analysis.window import PointMean, point_mean
from tkbench.kinds.figures import DEVIATION, UNITS
from tkbench.kinds.results.analysed import Analysed
from tkbench.kinds.results.run import analyse_run
from tkbench.report.labels import mix_label
from tkbench.rundir.records import PointResult
from tkbench.rundir.store import RunData, TestData
from tkbench.units import format_size
from tkbench.vocab import metric as metric_of

# The column set's version, in every row (column ``export_version``).  1: the columns
# before the version was written; 2: ``export_version`` added as the last column, and
# a test of several points of one block size and mix (the staged PTS tests) exports
# each point under its own name (``point`` "4k 0/100 #3").  A new column is added
# last, with a new version; a column is never renamed or reordered within a version.
EXPORT_VERSION = 2


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
    export_version: int = EXPORT_VERSION  # the column set's version

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
    device = m.target.device
    return Row(
        run_id=m.run_id,
        run_dir=str(run.root),
        host=m.host.hostname,
        model=_text(device.model),
        serial=_text(device.serial),
        firmware=_text(device.firmware),
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


def test_rows(run: RunData, analysed: Analysed) -> Iterator[Row]:
    """The rows of one test: its plan's points in plan order, over its window.  When
    several points share a block size and mix (a staged PTS test's repeated,
    grid and interval points), each is its own point, named by its plan label."""
    test, a = analysed.test, analysed.analysis
    base = replace(_blank(run, test), steady_state=a.steady, window=_window_label(a.window))
    keys = [p.key for p in test.plan.points]
    by_label: dict[str, list[PointResult]] | None = None
    if len(set(keys)) < len(keys):
        by_label = {}
        for r in a.records:
            for q in r.points:
                if q.measured:
                    by_label.setdefault(q.label, []).append(q)
    seen: set[str] = set()
    for p in test.plan.points:
        pm: PointMean | None
        if by_label is None:
            pm = a.means.get(p.key)
            name = "" if pm is None else f"{format_size(pm.bs)} {mix_label(pm.read_pct)}"
        else:
            pts = by_label.get(p.label) if p.label not in seen else None
            seen.add(p.label)
            pm, name = (point_mean(pts) if pts else None), p.label
        if pm is None:
            continue
        point = replace(base, point=name, block_size=pm.bs, read_pct=pm.read_pct)
        yield from _point_rows(point, pm)


def _point_rows(point: Row, pm: PointMean) -> Iterator[Row]:
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
                point,
                direction=direction,
                metric=metric,
                value=float(value),
                unit=metric_of(metric).unit,
            )


def figure_rows(run: RunData, analysed: Analysed) -> list[Row]:
    """A volume benchmark's headline figures (tkbench.kinds.figures): per figure
    its mean over the test's runs (metric ``bw``, MB/s, or ``nodes_s``) and, with two
    runs or more, their mean absolute deviation (``mean_abs_dev_pct``, % of the mean).
    ``point`` is the figure's name without its unit (``iso.random``, ``best_write``,
    ``random-read.1.warm``); ``block_size`` is a sweep's best buffer size (else 0),
    ``direction`` a sweep's best's or a virtual-file operation's (else ``all``),
    ``read_pct`` 100 for a read and 0 else, ``window`` the runs (``1-3``)."""
    found = analysed.figures
    if not found:
        return []
    base = _blank(run, analysed.test)
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
        for a in analyse_run(run).tests:
            if a.test.rounds:
                out.extend(figure_rows(run, a) or test_rows(run, a))
    return out


# ----------------------------------------------------------------------------- formats


def to_csv(found: Sequence[Row]) -> str:
    """A header of :data:`COLUMNS`, then one line per row (``steady_state`` ``true``,
    ``false`` or empty)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in found:
        d = r.to_dict()
        if d["steady_state"] is not None:
            d["steady_state"] = "true" if d["steady_state"] else "false"
        w.writerow(["" if d[c] is None else d[c] for c in COLUMNS])
    return buf.getvalue()


def to_jsonl(found: Sequence[Row]) -> str:
    """One JSON object per row, its keys :data:`COLUMNS`."""
    return "".join(json.dumps(r.to_dict(), allow_nan=False) + "\n" for r in found)


# metric -> (family name, unit, factor to the base unit, help)
_FAMILIES = {
    "iops": ("tkbench_iops", "", 1.0, "I/O operations per second, mean over the window"),
    "bw": (
        "tkbench_bandwidth_bytes_per_second",
        "bytes_per_second",
        1e6,
        "bandwidth, mean over the window",
    ),
    "lat_mean": (
        "tkbench_latency_mean_seconds",
        "seconds",
        1e-3,
        "mean response time, mean over the window",
    ),
    "lat_max": (
        "tkbench_latency_max_seconds",
        "seconds",
        1e-3,
        "largest response time in the window",
    ),
    "pct": (
        "tkbench_latency_percentile_seconds",
        "seconds",
        1e-3,
        "response-time percentile, pooled over the window",
    ),
    "nodes_s": (
        "tkbench_nodes_per_second",
        "",
        1.0,
        "virtual-file nodes per second, mean over the test's runs",
    ),
    "mean_abs_dev_pct": (
        "tkbench_runs_deviation_ratio",
        "ratio",
        1e-2,
        "mean absolute deviation of the test's runs, as a fraction of their mean",
    ),
}
_LABELS = ("run_id", "host", "model", "serial", "firmware", "profile", "test", "run_dir")


def _label_value(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_openmetrics(found: Sequence[Row]) -> str:
    """The OpenMetrics text format: one gauge family per metric, base units, each
    family's ``# TYPE``, ``# UNIT`` and ``# HELP`` once before all its samples, and
    ``# EOF`` last.  A point's samples carry its name (label ``point``), a volume
    figure's the figure's (``figure``), so no two samples of a family share labels."""
    samples: dict[str, list[str]] = {k: [] for k in _FAMILIES}
    for r in found:
        key = "pct" if r.metric.startswith("p") else r.metric
        name, _, factor, _ = _FAMILIES[key]
        labels = [(k, getattr(r, k)) for k in _LABELS]
        labels += [
            ("block_size", r.block_size),
            ("read_pct", r.read_pct),
            ("direction", r.direction),
            ("steady_state", "" if r.steady_state is None else str(r.steady_state).lower()),
            ("window", r.window),
        ]
        if key == "pct":
            labels.append(("percentile", r.metric[1:]))
        if r.point and " " not in r.point:  # a volume figure's name (a point is "4k 0/100")
            labels.append(("figure", r.point))
        elif r.point:
            labels.append(("point", r.point))
        text = ",".join(f'{k}="{_label_value(v)}"' for k, v in labels)
        samples[key].append(f"{name}{{{text}}} {r.value * factor!r}")
    out = []
    for key, (name, unit, _, help_text) in _FAMILIES.items():
        if not samples[key]:
            continue
        out.append(f"# TYPE {name} gauge")
        if unit:
            out.append(f"# UNIT {name} {unit}")
        out.append(f"# HELP {name} {help_text}")
        out.extend(samples[key])
    out.append("# EOF")
    return "\n".join(out) + "\n"
