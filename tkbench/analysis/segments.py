"""Segments and steady-state verdicts of a test's stored rounds (pure).

A test's rounds form one or more *segments*: a resumed test that was idle too long
is preconditioned again and starts a new one, so that no steady-state window spans
a gap the drive could recover in (docs/resume.md).  Verdicts are always taken over
one segment: the last, unless another is named.  The engine's stop rule and every
reader of a stored run use these functions, so they cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from tkbench.analysis.steady import Verdict, evaluate
from tkbench.rundir.records import Round, TestPlan


def segment_of(record: Round) -> int:
    """The segment a round record belongs to."""
    return record.segment


def last_segment(rounds: Sequence[Round]) -> list[Round]:
    """The rounds of the last segment (a resumed test may begin a new one)."""
    if not rounds:
        return []
    return segment_rounds(rounds, max(segment_of(r) for r in rounds))


def segment_rounds(rounds: Sequence[Round], segment: int) -> list[Round]:
    return [r for r in rounds if segment_of(r) == segment]


def segment_verdicts(
    plan: TestPlan, rounds: Sequence[Round], segment: int | None = None
) -> dict[str, Verdict]:
    """Steady-state verdict per tracking variable over one segment's rounds
    (the last segment by default; an empty segment has no verdict)."""
    seg = last_segment(rounds) if segment is None else segment_rounds(rounds, segment)
    if not seg:
        return {}
    lim = plan.rounds
    out = {}
    for label in plan.tracking:
        values = [r.tracking[label] for r in seg if label in r.tracking]
        if not values or any(not math.isfinite(v) for v in values):
            continue
        out[label] = evaluate(
            values,
            window=lim.window,
            max_excursion=lim.max_excursion,
            max_slope_excursion=lim.max_slope_excursion,
            first_round=seg[0].round,
        )
    return out


def reached(verdicts: Mapping[str, Verdict]) -> bool:
    """Steady state: every tracking variable holds (and there is one)."""
    return bool(verdicts) and all(v.reached for v in verdicts.values())
