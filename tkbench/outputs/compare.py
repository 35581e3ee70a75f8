"""Side-by-side comparison of runs (any number, any drives): the same points, deltas in %.

Every value is a point's value over its test's measurement window, read through
:mod:`tkbench.analysis` (the numbers each run's own report shows: means of the
per-round values, percentiles pooled over the window, never averaged).  Tests and
points are the union over the runs, in the order the first run that has them
ran them; a run lacking a point shows no value there.  A comparison is only
fair under the same conditions, so :func:`differences` lists every test
condition (queue depth, runtime, stop rule, ...) in which a run departs from
run 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tkbench import analysis
from tkbench.analysis import kind_of
from tkbench.analysis.repeat import Repeatability, difference_noise, repeatability
from tkbench.analysis.window import window_points
from tkbench.kinds.figures import UNITS
from tkbench.kinds.results.analysed import Analysed, AnalysedRun
from tkbench.kinds.results.run import analyse_run
from tkbench.kinds.results.sweep import sweep_in
from tkbench.rundir.records import TestPlan
from tkbench.rundir.store import RunData, TestData
from tkbench.units import format_size, human_bytes
from tkbench.vocab import metric


@dataclass(frozen=True)
class Row:
    test: str
    point: str  # "4k 0/100"
    metric: str
    unit: str
    values: tuple[float, ...]  # one per run (nan where a run lacks the point)
    spreads: tuple[float, ...] = ()  # per run: the point's excursion within its window
    # a repeated point (a fixed test's runs, MiB/s): per run its repeatability (None
    # where a run lacks the point); its noise is then the runs' own (noise_pct)
    repeats: tuple[Repeatability | None, ...] = ()
    # a volume figure's row (metric "mb_s" or "nodes_s"): per run what stands behind the
    # figure (a sweep's best: its mode, buffer size and count; None where there is none)
    details: tuple[Mapping[str, Any] | None, ...] = ()

    @property
    def higher_is_better(self) -> bool:
        return self.metric in FIGURE_METRICS or metric(self.metric).higher_is_better

    @property
    def quantity(self) -> str:
        """What the values are, with their unit (a column caption)."""
        return self.unit if self.metric in FIGURE_METRICS else metric(self.metric).quantity

    def beyond_noise(self) -> tuple[bool | None, ...]:
        """Per run 2..n: does its delta exceed both :data:`MIN_DELTA` and the larger
        window excursion of the two runs (None: no delta)?  Within a run, the point
        moved that much from round to round, so a smaller change proves nothing.

        A repeated point's noise is measured, not assumed: its delta is beyond noise
        when it exceeds :meth:`noise_pct` (the 95 % confidence interval of the
        difference of the two means excludes zero), without :data:`MIN_DELTA`; with a
        single run on either side, whose spread is unknown, MIN_DELTA decides."""
        if self.repeats:
            out_r: list[bool | None] = []
            for d, noise in zip(self.deltas()[1:], self.noise_pct()[1:], strict=True):
                if not math.isfinite(d):
                    out_r.append(None)
                else:
                    out_r.append(abs(d) > noise if noise is not None else abs(d) >= MIN_DELTA)
            return tuple(out_r)
        spreads = self.spreads or tuple(math.nan for _ in self.values)
        out: list[bool | None] = []
        for d, sp in zip(self.deltas()[1:], spreads[1:], strict=True):
            if not math.isfinite(d):
                out.append(None)
                continue
            noise = max((x for x in (spreads[0], sp) if math.isfinite(x)), default=0.0)
            out.append(abs(d) >= max(MIN_DELTA, noise * 100.0))
        return tuple(out)

    def noise_pct(self) -> tuple[float | None, ...]:
        """Per run (None for run 1): half the width of the 95 % confidence interval of
        the difference between its mean and run 1's, in % of run 1's mean (a repeated
        point with at least two runs on both sides; None otherwise)."""
        if not self.repeats:
            return tuple(None for _ in self.values)
        base = self.repeats[0]
        out: list[float | None] = [None]
        for rep in self.repeats[1:]:
            half = difference_noise(base, rep) if base is not None and rep is not None else None
            if half is None or base is None or not base.mean:
                out.append(None)
            else:
                out.append(100.0 * half / abs(base.mean))
        return tuple(out)

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
        return (
            {
                "test": self.test,
                "point": self.point,
                "metric": self.metric,
                "unit": self.unit,
                "values": clean,
                "delta_pct": deltas,
                "window_excursion_pct": [
                    round(x * 100, 3) if math.isfinite(x) else None for x in self.spreads
                ],
                "beyond_noise": [None, *self.beyond_noise()],
            }
            | (self._repeat_dict() if self.repeats else {})
            | self._detail_dict()
        )

    def _detail_dict(self) -> dict[str, Any]:
        if not any(self.details):
            return {}
        return {"details": [dict(d) if d is not None else None for d in self.details]}

    def _repeat_dict(self) -> dict[str, Any]:
        """A repeated point's runs and spread per run, and the noise of each delta (only
        in rows of repeated points: other rows keep their keys)."""
        return {
            "runs": [len(r.runs) if r is not None else None for r in self.repeats],
            "mean_abs_dev_pct": [
                r.mean_abs_dev_pct if r is not None else None for r in self.repeats
            ],
            "ci95": [list(r.ci95) if r is not None and r.ci95 else None for r in self.repeats],
            "noise_pct": list(self.noise_pct()),
        }


@dataclass(frozen=True)
class Difference:
    """A test condition in which some run departs from run 1."""

    test: str
    condition: str
    values: tuple[str | None, ...]  # per run; None: the run lacks the test

    def text(self) -> str:
        shown = "; ".join(
            f"run {i}: {v if v is not None else '-'}" for i, v in enumerate(self.values, 1)
        )
        return f"{self.test}: {self.condition} differs ({shown})"

    def to_dict(self) -> dict[str, Any]:
        return {"test": self.test, "condition": self.condition, "values": list(self.values)}


MIN_DELTA = 5.0  # %: smaller changes are not called better or worse

# the metrics of volume figures' rows (tkbench.kinds.figures): higher is better
FIGURE_METRICS = tuple(UNITS)

# The odd drive out of a fleet: a value further from the median of all runs' values
# than both OUTLIER_PCT % of that median and OUTLIER_MADS robust standard deviations
# (the median absolute deviation times MAD_SCALE, which makes it the standard
# deviation for normally distributed values).  The percentage keeps a tight fleet,
# whose deviation is tiny, from marking a drive a few per cent off; the deviations
# keep a widely spread fleet from marking every drive.  Three values at least: of
# two, neither is the odd one out.
OUTLIER_PCT = 20.0
OUTLIER_MADS = 3.0
MAD_SCALE = 1.4826
OUTLIER_MIN_RUNS = 3


def _median(values: Sequence[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2.0


def outliers(values: Sequence[float | None]) -> tuple[bool, ...]:
    """Per value: is it an outlier among ``values`` (None: a run without the value,
    never an outlier)?  All False with fewer than :data:`OUTLIER_MIN_RUNS` values."""
    have = [v for v in values if v is not None and math.isfinite(v)]
    if len(have) < OUTLIER_MIN_RUNS:
        return tuple(False for _ in values)
    med = _median(have)
    spread = MAD_SCALE * _median([abs(v - med) for v in have])
    return tuple(
        v is not None
        and math.isfinite(v)
        and abs(v - med) > OUTLIER_PCT / 100.0 * abs(med)
        and abs(v - med) > OUTLIER_MADS * spread
        for v in values
    )


def _metrics(plan: TestPlan) -> list[str]:
    tracked = [label.split()[0] for label in plan.tracking]
    first = tracked[0] if tracked else "iops"
    return [first, "p99.99"] if first == "lat_mean" else [first]


def test_names(runs: Sequence[RunData]) -> list[str]:
    """Every test with rounds in any run, in the order of the first run that has it."""
    names: dict[str, None] = {}
    for run in runs:
        for t in run.tests:
            if t.rounds:
                names.setdefault(t.name, None)
    return list(names)


def tests_of(runs: Sequence[RunData], name: str) -> list[TestData | None]:
    """The test ``name`` of every run (None where a run lacks it or has no rounds)."""
    return [next((t for t in r.tests if t.name == name and t.rounds), None) for r in runs]


def points_of(tests: Sequence[TestData | None]) -> list[tuple[int, int]]:
    """(block size, read %) of every point any of ``tests`` planned, in plan order."""
    seen: dict[tuple[int, int], None] = {}
    for t in tests:
        for p in t.plan.points if t is not None else ():
            seen.setdefault(p.key, None)
    return list(seen)


def compare(runs: Sequence[RunData | AnalysedRun]) -> list[Row]:
    """Rows for every (test, metric, point) of any run, deltas against run 1 (``runs``:
    the runs, or their results when the caller has them)."""
    ars = [r if isinstance(r, AnalysedRun) else analyse_run(r, alone=True) for r in runs]
    rows: list[Row] = []
    for name in test_names([ar.run for ar in ars]):
        analysed = [_with_rounds(ar, name) for ar in ars]
        tests = [a.test if a is not None else None for a in analysed]
        figured = figure_rows(name, analysed)
        if figured:  # a sweep's, copy's or virtual file's points share their keys
            rows += figured
            continue
        plan = next(t for t in tests if t is not None).plan
        repeated = _repeated(analysed)
        for key in _metrics(plan):
            for bs, rp in points_of(tests):
                vals = tuple(
                    analysis.value(t, key, bs, rp) if t is not None else math.nan for t in tests
                )
                spreads = tuple(
                    analysis.spread(t, key, bs, rp) if t is not None else math.nan for t in tests
                )
                point = f"{format_size(bs)} {rp}/{100 - rp}"
                pooled = metric(key).percentile is not None  # no per-run value of its own
                reps = _window_repeats(tests, key, bs, rp) if repeated and not pooled else ()
                rows.append(Row(name, point, key, metric(key).unit, vals, spreads, reps))
        rows += repeat_rows(name, analysed)
    return rows


def _with_rounds(ar: AnalysedRun, name: str) -> Analysed | None:
    """The test ``name`` of a run (None where the run lacks it or it has no rounds)."""
    return next((a for a in ar.tests if a.name == name and a.test.rounds), None)


def _repeated(tests: Sequence[Analysed | None]) -> bool:
    """A plain fixed test: its rounds are repetitions (not a stage's, not a sweep's)."""
    plan = next(t for t in tests if t is not None).plan
    if plan.kind != "fixed" or plan.procedure:  # a stage's rounds are no repetitions
        return False
    return not any(t is not None and sweep_in(t) is not None for t in tests)


def _window_repeats(
    tests: Sequence[TestData | None], key: str, bs: int, rp: int
) -> tuple[Repeatability | None, ...]:
    """A repeated point's per-run values of ``key`` over the window rounds, as the
    runs' repeatability: its row is then judged by the runs' noise like its MiB/s row
    (the same deltas and the same verdict)."""
    m = metric(key)
    out: list[Repeatability | None] = []
    for t in tests:
        vals = (
            []
            if t is None
            else [v for p in window_points(t, bs, rp) if math.isfinite(v := m.read(p))]
        )
        out.append(repeatability(vals) if vals else None)
    return tuple(out)


def repeat_rows(name: str, tests: Sequence[Analysed | None]) -> list[Row]:
    """A fixed test's points as their runs' mean MiB/s, with each run's repeatability
    (a bulk-I/O sweep's cells apart: they share point keys)."""
    if not _repeated(tests):
        return []
    reps = [t.repeats if t is not None else {} for t in tests]
    rows = []
    for bs, rp in points_of([t.test if t is not None else None for t in tests]):
        per_run = tuple(r.get((bs, rp)) for r in reps)
        if not any(per_run):
            continue
        values = tuple(r.mean if r is not None else math.nan for r in per_run)
        point = f"{format_size(bs)} {rp}/{100 - rp}"
        rows.append(Row(name, point, "mib_s", "MiB/s", values, repeats=per_run))
    return rows


def figure_rows(name: str, tests: Sequence[Analysed | None]) -> list[Row]:
    """A volume benchmark's headline figures (a bulk-I/O sweep's best per direction, a
    copy test's MB/s per set and pattern, a virtual file's nodes/s per operation,
    threads and cache state), each with its runs' repeatability, so that a change
    within the runs' noise is not called one (:meth:`Row.beyond_noise`)."""
    per_run = [{f.name: f for f in t.figures} if t is not None else {} for t in tests]
    names: dict[str, None] = {}
    for figs in per_run:
        names.update(dict.fromkeys(figs))
    rows = []
    for fname in names:
        found = tuple(figs.get(fname) for figs in per_run)
        first = next(f for f in found if f is not None)
        ending = next(e for e in UNITS if fname.endswith(e))
        rows.append(
            Row(
                name,
                fname[: -len(ending)].rstrip("._"),
                ending,
                first.unit,
                tuple(f.value if f is not None else math.nan for f in found),
                repeats=tuple(f.runs if f is not None else None for f in found),
                details=tuple(f.detail or None if f is not None else None for f in found),
            )
        )
    return rows


# --------------------------------------------------------------------------- conditions


def _sizes(values: Sequence[int]) -> str:
    return ", ".join(format_size(v) for v in values)


def conditions(plan: TestPlan) -> dict[str, str]:
    """The conditions of a test that its numbers depend on, as comparable text."""
    wl = plan.workload
    pts = plan.points
    pre = plan.precondition
    lim = plan.rounds
    active = plan.active_bytes
    out = {
        "kind": plan.kind,
        "access pattern": ", ".join(sorted({p.pattern for p in pts})),
        "block sizes": _sizes(sorted({p.bs for p in pts})),
        "R/W mixes": ", ".join(
            f"{m}/{100 - m}" for m in sorted({p.read_pct for p in pts}, reverse=True)
        ),
        "outstanding I/O": f"{wl.numjobs} jobs × QD {wl.iodepth}",
        "point runtime": ", ".join(f"{p.runtime:g} s" for p in pts[:1]),
        "ActiveRange": f"{plan.active_range:g} %",
        "data pattern": wl.data_pattern,
        "I/O": f"{'direct' if wl.direct else 'buffered'}, ioengine {plan.ioengine_used}",
        "purge": "yes" if plan.purge else "no",
        "preconditioning": (
            f"{pre.total_bytes / active:.2g}× ActiveRange, {format_size(pre.bs)}"
            if pre and active
            else "none"
        ),
    }
    if kind_of(plan).has_steady_state:
        out["stop rule"] = (
            f"window {lim.window}, excursion ≤ {lim.max_excursion:g}, "
            f"slope ≤ {lim.max_slope_excursion:g}, at most {lim.max} rounds"
        )
    return out


RUN_LEVEL = "all tests"  # the test name of a difference between whole runs


def run_conditions(run: RunData) -> dict[str, str]:
    """Conditions of a whole run: the kind and size of target, the fio that drove it."""
    target = run.manifest.target
    return {
        "target kind": target.kind or "?",
        "capacity": human_bytes(float(target.capacity_bytes), decimal=True),
        "fio version": run.manifest.fio_version or "?",
    }


def differences(runs: Sequence[RunData]) -> list[Difference]:
    """Every condition of every test in which some run departs from run 1.

    Differences of whole runs (target kind, capacity, fio version) come first,
    under the test name :data:`RUN_LEVEL`.  A test some runs lack is one
    difference, ``ran`` (``yes``/``no`` per run); the conditions are then compared
    among the runs that have it.
    """
    out = []
    whole = [run_conditions(r) for r in runs]
    for key in whole[0]:
        per_run = tuple(w[key] for w in whole)
        if len(set(per_run)) > 1:
            out.append(Difference(RUN_LEVEL, key, per_run))
    for name in test_names(runs):
        conds = [conditions(t.plan) if t is not None else None for t in tests_of(runs, name)]
        if None in conds:
            out.append(Difference(name, "ran", tuple("no" if c is None else "yes" for c in conds)))
        keys = next(c for c in conds if c is not None)
        for key in keys:
            values = tuple(c.get(key) if c is not None else None for c in conds)
            if len({v for v in values if v is not None}) > 1:
                out.append(Difference(name, key, values))
    return out


# --------------------------------------------------------------------------- text


def run_label(run: RunData) -> str:
    return f"{run.manifest.target.device.model or '?'} ({run.root.name})"


def format_rows(
    runs: Sequence[RunData], rows: Sequence[Row], diffs: Sequence[Difference] = ()
) -> str:
    names = [run_label(r) for r in runs]
    lines = [
        f"run {i + 1}: {n}  [{r.root}]" for i, (n, r) in enumerate(zip(names, runs, strict=True))
    ]
    if diffs:
        lines += ["", "conditions that differ (compare with care):"]
        lines += [f"  {d.text()}" for d in diffs]
    pw = max([11, *(len(r.point) for r in rows)])  # the point column's width
    uw = max([4, *(len(r.unit) for r in rows)])  # the unit column's
    head = (
        f"{'test':<18} {'point':<{pw}} {'metric':<9} {'unit':<{uw}}"
        + "".join(f"{'run ' + str(i + 1):>14}" for i in range(len(runs)))
        + "".join(f"{'Δ run ' + str(i + 1):>12}" for i in range(1, len(runs)))
    )
    lines += ["", head, "-" * len(head)]
    for row in rows:
        vals = "".join(f"{_fmt(v):>14}" for v in row.values)
        deltas = "".join(
            f"{(f'{d:+.1f} %' if math.isfinite(d) else '-'):>12}" for d in row.deltas()[1:]
        )
        lead = f"{row.test:<18} {row.point:<{pw}} {row.metric:<9} {row.unit:<{uw}}"
        lines.append(f"{lead}{vals}{deltas}")
        blank = " " * len(lead)
        if row.repeats:
            lines.append(f"{blank}{_noise_text(row)}")
        if any(row.details):
            combos = "".join(f"{_detail_text(d):>14}" for d in row.details)
            lines.append(f"{blank}{combos}")
    return "\n".join(lines)


def _detail_text(d: Mapping[str, Any] | None) -> str:
    """A sweep's best combination, short: buffer count x size ("4x1M")."""
    if not d or "buffer_size" not in d:
        return "-"
    return f"{d['buffer_count']}x{format_size(d['buffer_size'])}"


def _spread_text(r: Repeatability | None) -> str:
    if r is None or r.mean_abs_dev_pct is None:
        return "-"
    return f"n={len(r.runs)} ±{r.mean_abs_dev_pct:.1f}%"


def _noise_text(row: Row) -> str:
    """Under a repeated point: each run's number of runs and spread, and whether each
    delta is beyond the runs' noise (the half-width of its 95 % interval)."""
    spread = "".join(f"{_spread_text(r):>14}" for r in row.repeats)
    judged = []
    for noise, beyond in zip(row.noise_pct()[1:], row.beyond_noise(), strict=True):
        if beyond is None:
            judged.append("-")
        else:
            bound = f" ±{noise:.1f}%" if noise is not None else ""
            judged.append(("beyond" if beyond else "noise") + bound)
    return spread + "".join(f"{j:>12}" for j in judged)


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
