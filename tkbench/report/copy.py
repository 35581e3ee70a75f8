"""A copy test's part of its chapter (tkbench.kinds.copy): one row per file set and data
pattern with every run's MB/s, their mean and deviation, and the seconds per copy.

:func:`copy_report` turns :mod:`tkbench.kinds.results.copy`'s rows into what the template
``copy.html.j2`` shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tkbench.kinds.results.analysed import Analysed
from tkbench.kinds.results.copy import NAMES, CopyRow, copies_in
from tkbench.report import fmt


@dataclass(frozen=True)
class CopyLine:
    """One set x pattern: every run's MB/s, the mean, the mean absolute deviation
    (MB/s and % of the mean) and the mean seconds per copy."""

    set_title: str
    data: str
    files: int
    size_gb: float  # 10^9 bytes
    runs: tuple[float, ...]
    mean: float
    deviation: float
    deviation_pct: float | None
    seconds: float


@dataclass(frozen=True)
class CopyReport:
    lines: tuple[CopyLine, ...]
    runs: int  # the most runs of any line (the table's run columns)
    sentence: str  # the test's result in a customer's words (page 1)


def _line(c: CopyRow) -> CopyLine:
    return CopyLine(
        set_title=NAMES.get(c.copy_set, c.copy_set),
        data=c.data,
        files=c.files,
        size_gb=c.size / 1e9,
        runs=c.mb_s.runs,
        mean=c.mb_s.mean,
        deviation=c.mb_s.mean_abs_dev,
        deviation_pct=c.mb_s.mean_abs_dev_pct,
        seconds=c.seconds.mean,
    )


def sentence(title: str, rows: Sequence[CopyRow]) -> str:
    parts = []
    for c in rows:
        n = len(c.mb_s.runs)
        text = (
            f"the {c.copy_set} set with {c.data} data at {fmt.sig(c.mb_s.mean)} MB/s "
            f"({fmt.sig(c.seconds.mean)} s per copy, {n} run{'s' if n != 1 else ''}"
        )
        if n > 1 and c.mb_s.mean_abs_dev_pct is not None:
            text += f", within ±{c.mb_s.mean_abs_dev_pct:.1f} %"
        parts.append(text + ")")
    return f"{title}: the volume copied " + "; ".join(parts) + "."


def copy_report(a: Analysed) -> CopyReport | None:
    """The copy part of a test's chapter (None: no copy test, or no run yet)."""
    rows = copies_in(a)
    if not rows:
        return None
    lines = tuple(_line(c) for c in rows)
    return CopyReport(
        lines=lines,
        runs=max(len(x.runs) for x in lines),
        sentence=sentence(a.plan.title or a.name, rows),
    )
