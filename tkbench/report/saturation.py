"""The write-saturation part of the report: IOPS and response times per round, the
summary table, the verdict sentence and the summary's headline numbers (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from tkbench.analysis.load import saturation_series
from tkbench.report import fmt
from tkbench.report.labels import mix_label
from tkbench.report.model import Headline, Row, Saturation, TestReport
from tkbench.rundir.records import Round, TestPlan
from tkbench.units import format_size


def saturation(plan: TestPlan, rounds: Sequence[Round], capacity: int) -> Saturation | None:
    """IOPS and latency of the write-saturation point, per round
    (:func:`tkbench.analysis.load.saturation_series`), with its summary table."""
    series = saturation_series(plan, rounds)
    if series is None:
        return None
    sat = Saturation(
        point=f"{format_size(series.bs)} {mix_label(series.read_pct)}",
        minutes=series.minutes,
        written_gb=tuple(b / fmt.GB for b in series.written_bytes),
        iops=series.iops,
        lat_mean_ms=series.lat_mean_ms,
        lat_max_ms=series.lat_max_ms,
        capacity_bytes=capacity,
        final_rounds=series.final_rounds,
        final_iops=series.final_iops,
        final_lat_ms=series.final_lat_ms,
        rows=(),
    )
    runtime = plan.points[0].runtime
    return replace(sat, rows=saturation_rows(sat, series.rounds, runtime))


def saturation_rows(sat: Saturation, nums: Sequence[int], runtime: float) -> tuple[Row, ...]:
    written = sat.written_gb[-1] * fmt.GB
    peak = int(np.argmax(sat.iops))
    times = (
        f" = {written / sat.capacity_bytes:.2f}× the user capacity" if sat.capacity_bytes else ""
    )
    final = fmt.rounds_phrase(sat.final_rounds)
    return (
        Row("Rounds", f"{len(sat.iops):,} of {fmt.duration(runtime)} each"),
        Row("Test duration", fmt.duration(sat.minutes[-1] * 60.0)),
        Row("Data written", f"{fmt.gb(written)}{times}"),
        Row("IOPS, first round", fmt.sig(sat.iops[0])),
        Row("IOPS, highest round", f"{fmt.sig(sat.iops[peak])} (round {nums[peak]})"),
        Row(f"IOPS, mean of {final}", fmt.sig(sat.final_iops)),
        Row("Mean response time, first round", f"{fmt.sig(sat.lat_mean_ms[0])} ms"),
        Row(f"Mean response time, mean of {final}", f"{fmt.sig(sat.final_lat_ms)} ms"),
        Row("Maximum response time, whole test", f"{fmt.sig(max(sat.lat_max_ms))} ms"),
    )


def verdict(sat: Saturation) -> str:
    n = len(sat.iops)
    written = sat.written_gb[-1] * fmt.GB
    times = f" ({written / sat.capacity_bytes:.2f}× the capacity)" if sat.capacity_bytes else ""
    bs = sat.point.split()[0]
    return (
        f"{n:,} round{'s' if n != 1 else ''} wrote {fmt.gb(written)}{times}. {bs} random-write "
        f"IOPS went from {fmt.sig(sat.iops[0])} in the first round to "
        f"{fmt.sig(sat.final_iops)} (mean of {fmt.rounds_phrase(sat.final_rounds)})."
    )


def headlines(rep: TestReport, detail: str) -> list[Headline]:
    sat = rep.saturation
    assert sat is not None
    written = sat.written_gb[-1] * fmt.GB
    times = f" = {written / sat.capacity_bytes:.2f}× capacity" if sat.capacity_bytes else ""
    name = sat.point.split()[0]

    def line(label: str, value: float, basis: str) -> Headline:
        return Headline(label, None, value, "IOPS", detail, basis, None, rep.anchor)

    return [
        line(f"{name} random write saturation, fresh", sat.iops[0], "first round"),
        line(
            f"{name} random write saturation, end",
            sat.final_iops,
            f"mean of {fmt.rounds_phrase(sat.final_rounds)}, "
            f"after {fmt.gb(written)} written{times}",
        ),
    ]
