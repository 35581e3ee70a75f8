"""Judging a plan or a run against the SNIA PTS 2.0.2 requirement table (pure).

Twice, with the same table (tkbench.conformance.requirements) and the same judge
(:mod:`.judge`): :func:`judge_plan` before anything runs, from the plan
(``tkbench plan``); :func:`judge_run` from what a run recorded (``tkbench show``, the
report).
"""

from __future__ import annotations

from tkbench.conformance.plan import judge_plan
from tkbench.conformance.run import judge_run

__all__ = ["judge_plan", "judge_run"]
