"""The summary's headline numbers: 4k random IOPS, sequential MB/s, 4k QD 1 response
times, write saturation (pure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from tkbench.analysis import TestAnalysis, samples_needed
from tkbench.analysis.window import PointMean
from tkbench.report import saturation
from tkbench.report.model import Headline, TestReport
from tkbench.rundir.records import TestPlan
from tkbench.rundir.store import TestData
from tkbench.units import count, format_size


def headlines(
    tests: Sequence[tuple[TestReport, TestData, TestAnalysis]],
) -> tuple[Headline, ...]:
    """The summary's numbers: 4k random IOPS, sequential MB/s, 4k QD1 latency, WSAT."""
    out: list[Headline] = []
    for rep, t, a in tests:
        if not t.rounds:
            continue
        if t.plan.stage or rep.copy is not None or rep.vfile is not None:
            # a stage's, a copy test's or a virtual-file test's numbers are in its own
            # chapter and page 1's sentence (a virtual file's points share one block
            # size and mix, so a row of their means would be dashes)
            continue
        if rep.saturation is not None:
            out.extend(saturation.headlines(rep, _load_detail(t.plan)))
            continue
        out.extend(_test_headlines(rep, t.plan, a.means))
    return _told_apart(out, {rep.anchor: rep.name for rep, _t, _a in tests})


def _told_apart(lines: list[Headline], names: Mapping[str, str]) -> tuple[Headline, ...]:
    """Lines that would read alike (the same workload and load from two tests, e.g. a
    recipe run plainly and with an fsync after every write) name their test."""
    seen = Counter((h.label, h.detail) for h in lines)
    return tuple(
        replace(h, label=f"{h.label} ({names[h.anchor]})") if seen[(h.label, h.detail)] > 1 else h
        for h in lines
    )


def _load_detail(plan: TestPlan) -> str:
    jobs, qd = plan.workload.numjobs, plan.workload.iodepth
    if jobs == 1 and qd == 1:
        return "QD 1, 1 job"
    return f"{count(jobs, 'job')} × QD {qd}"


def _headline_bs(sizes: Sequence[int]) -> int | None:
    """4k when the test has it (PTS's headline size), else its smallest block size."""
    if not sizes:
        return None
    return 4096 if 4096 in sizes else min(sizes)


def _test_headlines(
    rep: TestReport, plan: TestPlan, means: Mapping[tuple[int, int], PointMean]
) -> list[Headline]:
    sizes = plan.block_sizes
    detail = _load_detail(plan)

    def line(label: str, bs: int, unit: str, value: Any) -> Headline:
        r, w = means.get((bs, 100)), means.get((bs, 0))
        return Headline(
            label=label,
            read=value(r, "read") if r else None,
            write=value(w, "write") if w else None,
            unit=unit,
            detail=detail,
            basis=rep.window_basis,
            steady=rep.steady,
            anchor=rep.anchor,
            steady_rule=rep.steady_rule,
        )

    if rep.metric == "bw":
        return [
            line(f"{format_size(bs)} sequential", bs, "MB/s", lambda p, _d: p.bw_mbs)
            for bs in sorted(sizes, reverse=True)
        ]
    bs = _headline_bs(sizes)
    if bs is None:
        return []
    name = f"{format_size(bs)} random"
    if rep.metric == "iops":
        return [line(name, bs, "IOPS", lambda p, _d: p.iops)]
    if rep.metric == "lat_mean":

        def p9999(p: PointMean, direction: str) -> float | None:
            d = p.directions.get(direction)
            return d.percentiles_ms.get("99.99") if d else None

        tail = line(f"{name}, 99.99 % response time", bs, "ms", p9999)
        if tail.read is None or tail.write is None:
            need = samples_needed(99.99)
            tail = replace(
                tail,
                basis=f"{tail.basis}; a dash: fewer than {need:,} I/Os in the window, "
                "too few for a 99.99 % value",
            )
        return [line(f"{name}, mean response time", bs, "ms", lambda p, _d: p.lat_mean_ms), tail]
    return []
