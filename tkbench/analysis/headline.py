"""Headline numbers of a run: what history lists and regression checks compare (pure).

Per test with rounds, each tracking variable's window value, keyed
``"TEST: METRIC BS MIX"`` (``"iops: iops 4k 0/100"``), and for a tracked mean
response time also the 99.99 % response time of the same point.  The report's
summary table is a presentation of the same window values (report/analysis.py).
"""

from __future__ import annotations

import math

from tkbench.analysis.window import value
from tkbench.rundir.store import RunData, TestData
from tkbench.vocab import metric


def test_headline(t: TestData) -> dict[str, float]:
    out: dict[str, float] = {}
    if not t.rounds:
        return out
    for label in t.plan.tracking:
        name, bs_text, mix = label.split()
        point = next((p for p in t.plan.points if p.label == f"{bs_text} {mix}"), None)
        if point is None:
            continue
        bs, read_pct = point.bs, point.read_pct
        v = value(t, name, bs, read_pct)
        if math.isfinite(v):
            out[f"{t.name}: {label}"] = v
        if name == "lat_mean":
            p = value(t, "p99.99", bs, read_pct)
            if math.isfinite(p):
                out[f"{t.name}: p99.99 {bs_text} {mix}"] = p
    return out


def headline(run: RunData) -> dict[str, float]:
    """Every finished or running test's headline values (:func:`test_headline`)."""
    out: dict[str, float] = {}
    for t in run.tests:
        out.update(test_headline(t))
    return out


def better_is_higher(key: str) -> bool:
    """Whether a headline key (``"TEST: METRIC BS MIX"``) improves upwards."""
    return metric(key.split(": ", 1)[-1].split()[0]).higher_is_better
