"""A run judged against SNIA PTS 2.0.2 from what it recorded (pure; ``tkbench show``,
the report).

Its stored profile's variant, ``test.json`` of every test, the purge and
preconditioning records (``cut_short``, their segments), ``result.json`` (how each
test ended), the response-histogram records, the manifest's resumes and
``write-cache.json``.  A plan's limit that may stop a test early departs here only
if it did; running on past round 25 without steady state is no departure: "the Test
Operator may either continue running the test until Steady State is reached, or may
stop the test at Round x".
"""

from __future__ import annotations

from collections.abc import Sequence

from tkbench import kinds
from tkbench.conformance.judge import (
    Judged,
    judge,
    purge_departure,
    skipped_notes,
    starts_alone,
)
from tkbench.conformance.plan import cache_departure, setting_words
from tkbench.conformance.pts import (
    BY_NAME,
    VARIANTS,
    Departure,
    Judgement,
    TestRequirement,
    Variant,
    stored_variant,
)
from tkbench.conformance.ptsstages import STAGED
from tkbench.conformance.requirements.basic import wsat_rule
from tkbench.device.cacherecord import ABSENT, WriteCacheRecord
from tkbench.errors import ProfileError
from tkbench.kinds.pts.common import COMMON
from tkbench.kinds.pts.words import times
from tkbench.profile.build import build
from tkbench.rundir.records import Manifest, Resume, Round, TestPlan
from tkbench.rundir.store import RunData, TestData
from tkbench.units import format_duration, human_bytes


def judge_run(run: RunData, write_cache: WriteCacheRecord | None = None) -> Judgement:
    """The run's standing, from what it recorded.  ``write_cache``: its
    ``write-cache.json`` (:func:`tkbench.rundir.writecache.load`; None for runs before it)."""
    m = run.manifest
    variant = stored_variant(m)
    if variant is None:
        return Judgement(None)
    var = VARIANTS[variant]
    capacity = m.target.capacity_bytes or m.target.capacity
    run_wide = [d for d in [_run_cache(var, write_cache)] if d]
    tests = [
        Judged(
            t.plan,
            _run_test(t, capacity) + _split(t, m.resumes),
            _histogram_seconds(t),
            t.result is not None,
        )
        for t in run.tests
    ]
    present = {t.name for t in run.tests}
    profile_tests, skipped = _stored_tests(m)
    for name in m.tests:
        if name not in present:  # planned, never started
            spec = name.split("-")[0] if name not in BY_NAME else name
            skipped.setdefault(spec, "planned, never started")
            profile_tests.append(spec)
    return judge(
        variant,
        tests,
        profile_tests,
        skipped,
        capacity,
        m.target.logical_sector,
        False,
        run_wide,
    )


def _histogram_seconds(t: TestData) -> float | None:
    """The response-histogram phase a test recorded (None: none)."""
    h = t.response_histogram
    return None if h is None else max(h.ended - h.started, 1.0)


def _split(t: TestData, resumes: Sequence[Resume]) -> list[Departure]:
    """The test's stage parts a break split: resume by resume, then each part whose
    fio stalled and ran again (``stalled_parts``, tkbench.engine.parts)."""
    mine = [r for r in resumes if r.action == "continue-parts" and r.test == t.name]
    found = [d for r in mine if (d := _resumed_in_parts(r, t)) is not None]
    return found + [_stalled_part(t, k) for k in t.plan.stalled_parts]


def _resumed_in_parts(r: Resume, t: TestData) -> Departure | None:
    """A stage run in parts that an interruption split: the PTS runs it without a
    break; tkbench ran the last part before the break again as a lead-in, so that the
    part after it followed its stimulus directly (docs/resume.md).  None when every
    part was stored before the interruption: no part followed a break."""
    kept = r.parts_kept or 0
    points = t.plan.points
    if not 0 < kept < len(points):
        return None
    before = {1: "part 1", 2: "parts 1 and 2"}.get(kept, f"parts 1 to {kept}")
    if points[kept].role == "prewrite":
        after = f"part {kept + 1}, a pre-write, began after it"
    else:
        after = (
            f"part {kept} ran again after it as a lead-in (its first record stands), "
            f"directly followed by part {kept + 1}"
        )
    return _broken(
        t, f"interrupted and resumed: {before} measured before the interruption; {after}"
    )


def _stalled_part(t: TestData, k: int) -> Departure:
    """Part ``k`` of a stage run in parts, whose fio stalled and was stopped, ran again
    (after the part before it as a lead-in, unless it is a pre-write)."""
    if k > 1 and t.plan.points[k - 1].role != "prewrite":
        again = (
            f"part {k - 1} ran again as a lead-in (its first record stands), directly "
            f"followed by part {k}"
        )
    else:
        again = f"part {k} ran again"
    return _broken(t, f"part {k}'s fio stalled and was stopped; {again}")


def _broken(t: TestData, actual: str) -> Departure:
    """The stage ``t`` did not run without a break: ``actual`` says how."""
    return Departure(
        t.name,
        "stage run without a break",
        "its stimuli one after the other, without an interruption",
        actual,
        t.plan.title or t.name,
    )


def _stored_tests(m: Manifest) -> tuple[list[str], dict[str, str]]:
    """The enabled test sections of the stored profile, and why the plan skipped any."""
    skipped = skipped_notes(m.plan_notes)
    try:
        prof = build(dict(m.profile.resolved), m.profile.source)
    except ProfileError:
        return list(m.tests), skipped
    return [t.name for t in prof.tests], skipped


def _purged(t: TestData, title: str, started: bool) -> list[Departure]:
    plan = t.plan
    if not plan.purge:
        return [purge_departure(t.name, title, "none (the test's purge = false)")]
    if t.purge is not None and not t.purge.pts_compliant:
        how = t.purge.method or t.purge.requested_method or "none"
        why = next((n for n in t.purge.notes if n), "")
        return [purge_departure(t.name, title, how + (f"; {why}" if why else ""))]
    if t.purge is None and started:
        return [purge_departure(t.name, title, "no purge record")]
    return []


def _segments(t: TestData, title: str) -> list[Departure]:
    """Rounds (or a preconditioning) after an idle gap the drive could recover in,
    without a purge before them (a resume or a pause longer than --resume-gap)."""
    purged = t.purge.segment if t.purge is not None else 1
    later = sorted({r.segment for r in t.rounds if r.segment > purged})
    if not later:
        return []
    # a new segment of a test with preconditioning begins with it again (docs/resume.md;
    # precondition-sN.json, which the store does not read back)
    again = t.plan.precondition is not None
    what = "preconditioned again" if again else "its rounds went on"
    return [
        Departure(
            t.name,
            "purge before preconditioning",
            "the preconditioning and the rounds after it start from a purged drive, "
            "without an idle gap",
            f"segment{'s' if len(later) > 1 else ''} {', '.join(map(str, later))}: {what} "
            "without a purge after an idle gap longer than --resume-gap",
            title,
        )
    ]


def _cut_short(t: TestData, title: str) -> list[Departure]:
    pre = t.precondition
    if t.plan.precondition is None:
        return []
    required = f"all {times(COMMON.precondition_multiple)} written"
    if pre is not None and pre.cut_short:
        actual = (
            f"cut short by its time limit of {format_duration(pre.max_duration)} after "
            f"{human_bytes(pre.written_bytes)} of {human_bytes(pre.total_bytes)}"
        )
    elif pre is None and t.rounds:
        actual = "no preconditioning record"
    else:
        return []
    return [Departure(t.name, "preconditioning complete", required, actual, title)]


def _ended(t: TestData, ref: TestRequirement | None, capacity: int, title: str) -> list[Departure]:
    """How the test ended: finished by its stop rule, at a round limit, or not at all."""
    plan = t.plan
    if t.result is None:
        return [
            Departure(t.name, "test run", "run until its stop rule ends it", _unfinished(t), title)
        ]
    if plan.kind == "steady" and t.result.steady_state is False:
        limit = plan.rounds.max
        if ref is None:  # a stage: what follows it needs the drive in steady state
            return [
                Departure(
                    t.name,
                    "steady state",
                    "the stage reaches steady state before the next stage begins",
                    f"stopped by its limit of {limit} rounds without steady state",
                    title,
                )
            ]
        if limit < COMMON.rounds:
            return [
                Departure(
                    t.name,
                    "round limit",
                    f"rounds until steady state; stopping without it only at round "
                    f"{COMMON.rounds} or later",
                    f"stopped by its limit of {limit} rounds without steady state",
                    title,
                )
            ]
    if ref is not None and ref.kind == "saturation" and plan.kind == "saturation":
        words = _wsat_stop(ref, plan, t.rounds, capacity)
        if words:
            return [Departure(t.name, "stop rule", wsat_rule(ref), words, title)]
    return []


def _unfinished(t: TestData) -> str:
    word = kinds.of_plan(t.plan).parts_word
    if word:  # a stage whose parts are units of its own, counted from none on
        return f"not finished ({t.parts} of {len(t.plan.points)} {word} stored)"
    if t.parts:
        return f"not finished ({t.parts} of {len(t.plan.points)} parts stored)"
    n = len(t.rounds)
    return f"not finished ({n} round{'s' if n != 1 else ''} stored)"


def _run_test(t: TestData, capacity: int) -> list[Departure]:
    plan = t.plan
    ref = BY_NAME.get(plan.spec or plan.name)
    if ref is None and plan.procedure not in STAGED:
        return []
    title = plan.title or t.name
    out: list[Departure] = []
    started = bool(t.rounds) or t.result is not None
    if starts_alone(plan):  # a later stage goes on from the one before it
        out += _purged(t, title, started)
        out += _segments(t, title)
    out += _cut_short(t, title)
    out += _ended(t, ref, capacity, title)
    return out


def _wsat_stop(
    ref: TestRequirement, plan: TestPlan, rounds: Sequence[Round], capacity: int
) -> str | None:
    """Whether a finished write-saturation test stopped at the round the PTS rule
    stops at (None) or earlier or later (what happened, in words)."""
    if (plan.stop_written_multiple, plan.max_duration) == (
        ref.stop_written_multiple,
        ref.max_duration,
    ):
        return None  # the engine applied the PTS rule itself
    if not rounds or capacity <= 0:
        return None
    t0 = rounds[0].started
    slack = 1.0  # the engine judges a moment after the round's end
    stop = next(
        (
            i
            for i, r in enumerate(rounds)
            if r.total_written_bytes >= ref.stop_written_multiple * capacity
            or r.ended - t0 >= ref.max_duration - slack
        ),
        None,
    )
    last = rounds[-1]
    done = (
        f"{times(last.total_written_bytes / capacity)} written in "
        f"{format_duration(last.ended - t0)}"
    )
    if stop == len(rounds) - 1:
        return None
    if stop is None:
        return f"stopped after {done}"
    return f"ran on past the PTS stop (round {stop + 1}) to round {len(rounds)}: {done}"


def _run_cache(var: Variant, record: WriteCacheRecord | None) -> Departure | None:
    want = var.write_cache
    if record is None:  # runs made before tkbench set the write cache
        return cache_departure(var, "not set by tkbench (the run has no write-cache record)")
    if record.requested != want:
        words = setting_words(record.requested)
        before = record.sessions[0].before if record.sessions else ""
        if record.requested == "unchanged" and before in ("enabled", "disabled"):
            words = f"{before}, " + words
        return cache_departure(var, words)
    if not record.applies:
        return cache_departure(var, f"not set, as {record.reason}")
    ran = [s for s in record.sessions if s.verified is True]
    if not ran:
        return cache_departure(var, f"{want} asked, never verified")
    if want == "enabled" and any(s.after == ABSENT for s in ran):
        return cache_departure(var, "the drive has no volatile write cache to enable")
    return None
