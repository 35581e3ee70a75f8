"""The procedure of a test, in words, generated from the plan that ran and its records.

Never boilerplate: every number comes from the stored plan (``test.json``) or
from the purge and preconditioning records, so the text cannot disagree with
the run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tkbench import cache
from tkbench.analysis.segments import last_segment, segment_of
from tkbench.kinds import of_plan
from tkbench.plan.build import pattern_text
from tkbench.report import fmt
from tkbench.report.labels import mix_label, tracking_of
from tkbench.report.model import Row
from tkbench.report.parts import part_of, section_for
from tkbench.rundir.records import Precondition, Purge, TestPlan
from tkbench.rundir.store import TestData
from tkbench.units import count, format_size


def outstanding(plan: TestPlan) -> str:
    jobs, qd = plan.workload.numjobs, plan.workload.iodepth
    if plan.points and of_plan(plan).loads_per_point:
        # each point its own load (a sweep's buffer counts, a virtual file's threads)
        loads = sorted({(p.numjobs, p.iodepth) for p in plan.points})
        return "per point, jobs × queue depth: " + ", ".join(f"{j} × {q}" for j, q in loads)
    loads = list(dict.fromkeys((p.numjobs, p.iodepth) for p in plan.points if p.measured))
    if len(loads) > 1 or (loads and loads[0] != (jobs, qd)):
        # each point at its own load: a demand-intensity grid, the operating points
        if len(loads) > 6:
            threads = ", ".join(str(t) for t in dict.fromkeys(t for t, _ in loads))
            depths = ", ".join(str(q) for q in dict.fromkeys(q for _, q in loads))
            return f"{len(loads)} loads: jobs {threads} × queue depth {depths}"
        return "per point, jobs × queue depth: " + ", ".join(f"{j} × {q}" for j, q in loads)
    return f"{count(jobs, 'job')} × queue depth {qd} ({count(jobs * qd, 'outstanding I/O')})"


def purge_text(plan: TestPlan, purge: Purge | None) -> str:
    if not plan.purge:
        return "none (not part of this test's plan)"
    if purge is None:
        return "planned, but no purge was recorded (the test stopped before it)"
    method = purge.method or "unknown"
    compliant = "PTS-compliant" if purge.pts_compliant else "NOT a PTS-compliant purge"
    return f"{method} ({compliant}), {fmt.duration(purge.seconds)}"


def precondition_text(plan: TestPlan, pre: Precondition | None) -> str:
    planned = plan.precondition
    if not planned:
        return section_for(plan).no_precondition
    if pre is None:
        return (
            f"planned ({fmt.gb(planned.total_bytes)}), but not recorded "
            "(the test stopped before it)"
        )
    active = plan.active_bytes
    written = pre.written_bytes
    jobs, qd = pre.numjobs, pre.iodepth
    times = f" = {written / active:.2f}× the ActiveRange" if active else ""
    return (
        f"{fmt.gb(written)} of {format_size(pre.bs)} sequential writes{times}, "
        f"{count(jobs, 'job')} × queue depth {qd}, "
        f"in {fmt.duration(pre.seconds)}"
    )


def stop_rule(plan: TestPlan, capacity: int) -> str:
    return section_for(plan).stop_rule(plan, capacity)


def ioengine(plan: TestPlan) -> str:
    """The fio I/O engine the test ran with, and whether the profile left it to tkbench."""
    used = plan.ioengine_used
    return f"{used} (auto)" if plan.workload.ioengine == "auto" and used != "auto" else used


def block_sizes(plan: TestPlan) -> str:
    """The plan's block sizes; a mix of sizes (bs 0, tkbench.kinds.staged) as fio's bssplit."""
    out = []
    for bs in plan.block_sizes:
        if bs:
            out.append(format_size(bs))
            continue
        split = next((p.bssplit for p in plan.points if p.bs == bs and p.bssplit), "")
        shares = ", ".join(
            f"{format_size(int(size))} {pct} %"
            for size, pct in (x.split("/", 1) for x in split.split(":") if "/" in x)
        )
        out.append(f"composite ({shares})" if shares else "composite")
    return ", ".join(out)


def points_text(runtimes: Sequence[float], round_s: float) -> str:
    """A round's points and their durations: "6, back to back, 500 ms each (3 s per
    round)", or, when they differ, every point's in the order they run ("4, back to
    back: 3 s, 3 s, 6 s, 9 s (21 s per round)"), so that they add up to the round."""
    per_round = f"({fmt.duration(round_s)} per round)"
    if len(set(runtimes)) <= 1:
        each = f"{fmt.duration(runtimes[0])} each " if runtimes else ""
        return f"{len(runtimes)}, back to back, {each}{per_round}"
    return (
        f"{len(runtimes)}, back to back: {', '.join(fmt.duration(r) for r in runtimes)} {per_round}"
    )


def parameters(t: TestData, capacity: int) -> tuple[Row, ...]:
    plan = t.plan
    own = part_of(plan).parameters(t, stop_rule(plan, capacity))
    if own is not None:  # no fio workload (a copy test: its sets and how they are copied)
        return own
    wl = plan.workload
    pts = plan.points
    round_s = math.fsum(p.runtime for p in pts)
    pattern = " and ".join(dict.fromkeys(p.pattern for p in pts)) if pts else "?"
    rows = [
        Row("Access pattern", pattern),
        Row("Block sizes", block_sizes(plan)),
        Row("R/W mixes (% read / % write)", ", ".join(mix_label(m) for m in plan.mixes)),
        Row("Workload points per round", points_text([p.runtime for p in pts], round_s)),
        Row("Outstanding I/O", outstanding(plan)),
        Row(
            "ActiveRange",
            f"{plan.active_range:g} % of the user capacity ({fmt.gb(plan.active_bytes)})",
        ),
        Row("Data pattern", pattern_text(wl.data_pattern, wl.compress_percentage)),
        (
            io_row := Row(
                "I/O",
                f"{'direct (O_DIRECT)' if wl.direct else 'buffered'}, ioengine {ioengine(plan)}",
            )
        ),
        Row("Purge", purge_text(plan, t.purge)),
        Row("Preconditioning", precondition_text(plan, t.precondition)),
        Row("Stop rule", stop_rule(plan, capacity)),
    ]
    # the page cache where it was in play (buffered I/O) or stated (tkbench.cache)
    states = of_plan(plan).cache_states(plan)
    if states:
        text = "; ".join(cache.describe(s, wl.drop_caches) for s in states)
        rows.insert(rows.index(io_row) + 1, Row("Page cache", text))
    if wl.sync:
        rows.insert(
            rows.index(io_row) + 1,
            Row("Writes", "write-through: the file is opened O_SYNC (fio sync=1)"),
        )
    if plan.tracking:
        rows.append(
            Row(
                "Tracking variables",
                ", ".join(f"{x.label} ({x.unit})" for x in tracking_of(plan)),
            )
        )
    if plan.percentiles:
        rows.append(
            Row(
                "Latency percentiles recorded",
                ", ".join(f"{p:g} %" for p in plan.percentiles)
                + (" and response-time histograms (fio json+ bins)" if plan.histogram else ""),
            )
        )
    return tuple(rows)


def outcome(t: TestData, capacity: int = 0) -> str:
    if not t.rounds:
        return "No round was completed."
    first, last = t.rounds[0], t.rounds[-1]
    start, end = first.started, last.ended
    n = len(t.rounds)
    text = (
        f"{n} round{'s' if n != 1 else ''} ran from {fmt.when(start)} to {fmt.when(end)} "
        f"({fmt.duration(end - start)})."
    )
    segments = sorted({segment_of(r) for r in t.rounds})
    if len(segments) > 1:
        seg = last_segment(t.rounds)
        text += (
            " The run was resumed after a pause: rounds "
            f"{fmt.rounds([r.round for r in seg])} form segment {segments[-1]}, "
            "begun after fresh preconditioning; the measurement window lies in that segment."
        )
    return text + section_for(t.plan).outcome_tail(t, capacity)


HEALTH_FIELDS = (
    ("temperature_c", "Temperature (°C)"),
    ("critical_warning", "Critical warning"),
    ("available_spare", "Available spare (%)"),
    ("percentage_used", "Percentage used (%)"),
    ("media_errors", "Media and data integrity errors"),
    ("power_on_hours", "Power-on hours"),
    ("bytes_written", "Data written (GB)"),
)


def health_rows(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> tuple[tuple[str, str, str], ...]:
    """SMART values before and after a test, where the drive reported them."""
    snaps = [s if s and s.get("source") not in (None, "none") else None for s in (before, after)]
    if not any(snaps):
        return ()

    def show(snap: Mapping[str, Any] | None, key: str) -> str:
        value = (snap or {}).get(key)
        if value is None:
            return fmt.DASH
        if key == "bytes_written":
            return fmt.sig(float(value) / fmt.GB)
        return f"{value:,}" if isinstance(value, int) else f"{value:g}"

    rows = [(label, show(snaps[0], key), show(snaps[1], key)) for key, label in HEALTH_FIELDS]
    return tuple(r for r in rows if r[1] != fmt.DASH or r[2] != fmt.DASH)
