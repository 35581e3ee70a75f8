"""The steady-state part of a test's report: the determination of every tracking
variable, the convergence plot's series, the per-round table and the Little's-law
check of the measurement window (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from tkbench.analysis.load import QUEUE_LOW, QueueShare, queue_shares
from tkbench.analysis.segments import segment_of
from tkbench.analysis.steady import Verdict
from tkbench.analysis.window import find_point
from tkbench.profile.model import Tracking
from tkbench.report.labels import mix_label, tracking_of
from tkbench.report.model import Determination, RoundRow, Series
from tkbench.rundir.records import Round, TestPlan
from tkbench.units import count, size_label
from tkbench.vocab import metric as metric_of

CONVERGENCE_MIX = 0  # PTS plots IOPS convergence of every block size at 0/100


def point_label(bs: int, read_pct: int) -> str:
    """A point as a plot's legend and the notes name it: "4k 0/100", "composite 40/60"."""
    return f"{size_label(bs)} {mix_label(read_pct)}"


def determination(label: str, v: Verdict) -> Determination:
    try:
        unit = Tracking.parse(label).unit
    except ValueError:
        unit = ""
    return Determination(
        variable=label,
        unit=unit,
        reached=v.reached,
        reason=v.reason,
        window=v.window,
        rounds=v.rounds,
        values=v.values,
        mean=v.mean,
        excursion=v.excursion,
        allowed_excursion=v.allowed_excursion,
        max_excursion=v.max_excursion,
        excursion_ratio=v.excursion_ratio,
        slope=v.slope,
        intercept=v.intercept,
        slope_excursion=v.slope_excursion,
        allowed_slope_excursion=v.allowed_slope_excursion,
        max_slope_excursion=v.max_slope_excursion,
        slope_excursion_ratio=v.slope_excursion_ratio,
    )


def convergence(
    plan: TestPlan, rounds: Sequence[Round], metric: str
) -> tuple[str, tuple[Series, ...]]:
    """Per-round values to plot: every block size for IOPS, else every point (<= 12)."""
    tracked = {(t.bs, t.mix.read) for t in tracking_of(plan) if t.metric == metric}
    sizes, mx = plan.block_sizes, plan.mixes
    keys: list[tuple[int, int]]
    if metric == "iops" and len(sizes) > 1:
        mix = CONVERGENCE_MIX if CONVERGENCE_MIX in mx else min(m for _, m in tracked or {(0, 0)})
        keys = [(bs, mix) for bs in sizes]
        more = [k for k in sorted(tracked, reverse=True) if k not in keys]
        keys += more
        also = f" and of {', '.join(point_label(*k) for k in more)}" if more else ""
        title = f"{metric_of(metric).unit} of every block size at {mix_label(mix)}{also} per round"
    elif len(sizes) * len(mx) <= 12:
        keys = [(bs, m) for bs in sizes for m in mx]
        title = f"{metric_of(metric).name} ({metric_of(metric).unit}) of every point per round"
    else:
        keys = sorted(tracked, reverse=True)
        title = f"Tracking variables ({metric_of(metric).unit}) per round"
    series = []
    for bs, m in keys:
        xs, ys = [], []
        for r in rounds:
            p = find_point(r, bs, m)
            if p is not None:
                xs.append(float(r.round))
                ys.append(metric_of(metric).read(p))
        if xs:
            series.append(
                Series(
                    label=point_label(bs, m),
                    x=tuple(xs),
                    y=tuple(ys),
                    emphasis=(bs, m) in tracked,
                )
            )
    return title, tuple(series)


def round_rows(
    plan: TestPlan, rounds: Sequence[Round], window: Sequence[int]
) -> tuple[RoundRow, ...]:
    labels = plan.tracking
    seg = max((segment_of(r) for r in rounds), default=1)
    wanted = set(window)
    rows = []
    for r in rounds:
        rows.append(
            RoundRow(
                number=r.round,
                segment=segment_of(r),
                started=r.started,
                seconds=r.ended - r.started,
                values=tuple(r.tracking.get(k) for k in labels),
                written_bytes=int(r.written_bytes),
                in_window=segment_of(r) == seg and r.round in wanted,
            )
        )
    return tuple(rows)


def pct(fraction: float) -> str:
    return f"{fraction * 100:.0f} %"


def queue_check(plan: TestPlan, records: Sequence[Round]) -> tuple[str, bool]:
    """The sentence of the Little's-law check (:func:`tkbench.analysis.load.queue_shares`)
    over the window, and whether it is a warning."""
    found = queue_shares(plan, records)
    if not found:
        return "", False

    def label(q: QueueShare) -> str:
        return point_label(q.bs, q.read_pct)

    lo, hi = found[0].share, found[-1].share
    queues = sorted({q.queue for q in found})
    queue_text = " or ".join(str(q) for q in queues[:-1]) + (" or " if len(queues) > 1 else "")
    queue_text += count(queues[-1], "outstanding I/O")
    kept = f"{pct(lo)}" if pct(lo) == pct(hi) else f"{pct(lo)} to {pct(hi)}"
    text = (
        "Little's law check: IOPS × mean response time is the number of I/Os in flight. "
        f"Over the measurement window the points kept {kept} of the {queue_text} "
        "fio was given (jobs × queue depth)"
    )
    low = [f"{label(q)} ({pct(q.share)})" for q in found if q.low]
    if low:
        more = f" and {len(low) - 5} more" if len(low) > 5 else ""
        text += (
            f". Below {pct(QUEUE_LOW)}: {', '.join(low[:5])}{more}; there the host (CPU, "
            "interrupt handling or the I/O engine), not the drive, may have limited the rate"
        )
    if found[-1].high:
        text += (
            ". Above 100 %, IOPS and response times disagree: check fio's raw output of "
            f"{label(found[-1])}"
        )
    return text + ".", bool(low) or found[-1].high
