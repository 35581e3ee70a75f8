"""A plan judged against SNIA PTS 2.0.2 before anything runs (pure; ``tkbench plan``).

What only a plan can tell -- the purge the target will get, the write cache it can
or cannot set, a limit that may stop a test early -- is gathered here; the table is
applied by :func:`tkbench.conformance.judge.judge`.
"""

from __future__ import annotations

from tkbench.conformance.judge import (
    Judged,
    judge,
    purge_departure,
    skipped_notes,
    starts_alone,
)
from tkbench.conformance.pts import VARIANTS, Departure, Judgement, Variant
from tkbench.plan.build import Plan
from tkbench.plan.model import PlannedTest


def judge_plan(plan: Plan, write_cache_absent: str | None = None) -> Judgement:
    """The plan's standing before anything runs.  ``write_cache_absent``: why the
    target has no drive write cache to set (a file, loop device, NBD export)."""
    prof = plan.profile
    variant = prof.pts_variant
    if variant is None:
        return Judgement(None, planned=True)
    var = VARIANTS[variant]
    run_wide: list[Departure] = []
    wanted = prof.workload.write_cache
    if wanted != var.write_cache:
        run_wide.append(cache_departure(var, setting_words(wanted)))
    elif write_cache_absent:
        run_wide.append(cache_departure(var, f"not set, as {write_cache_absent}"))
    tests = []
    for t in plan.tests:
        rec = t.record()
        words = _planned_purge(plan, t)
        purge = [purge_departure(t.name, t.title, words)] if words and starts_alone(rec) else []
        hp = t.histogram_point
        tests.append(Judged(rec, purge, hp.runtime if hp is not None else 0.0))
    return judge(
        variant,
        tests,
        [s.name for s in prof.tests],
        skipped_notes(plan.notes),
        plan.target.capacity,
        plan.target.logical_sector,
        True,
        run_wide,
    )


def _planned_purge(plan: Plan, test: PlannedTest) -> str | None:
    """Why the planned purge will not be a PTS-compliant one (None: it will be)."""
    method = plan.profile.purge
    if not test.purge:
        return f"none (tests.{test.spec.name}.purge = false)"
    if method.method == "none":
        return "none (purge.method = none)"
    kind = plan.target.kind
    if kind == "file":
        return "the file truncated and re-extended, as a regular file has no drive to purge"
    if kind == "nbd":
        return "an NBD trim of the whole export, not a drive purge"
    if method.method == "blkdiscard":
        return "blkdiscard, which is not a PTS-compliant purge"
    if method.allow_fallback:
        return (
            "a secure erase, or blkdiscard (not PTS-compliant) where none is possible "
            "(purge.allow_fallback = true)"
        )
    return None


def cache_departure(var: Variant, actual: str) -> Departure:
    code = "WCD" if var.write_cache == "disabled" else "WCE"
    return Departure(None, "volatile write cache", f"{var.write_cache}, {code}", actual)


def setting_words(setting: object) -> str:
    if setting == "unchanged":
        return "left as the drive had it (workload.write_cache = unchanged)"
    if setting in ("disabled", "enabled"):
        return str(setting)
    return "not set by tkbench"
