"""Judging a plan or a run against the SNIA PTS 2.0.2 table (pure).

Twice, with the same table (:mod:`.pts`):

* :func:`judge_plan` -- before anything runs, from the plan (``tkbench plan``);
* :func:`judge_run` -- from what a run recorded: its stored profile's variant,
  ``test.json`` of every test, the purge and preconditioning records (``cut_short``),
  ``result.json`` and ``write-cache.json`` (``tkbench show``, the report).

They differ only where a plan cannot know the outcome: a round limit below 25 or a
preconditioning time limit is a departure of a plan (it may stop the test early),
and of a run only if it did; a write-saturation test's limits other than the PTS's
likewise.  Running on past round 25 without steady state is no departure: "the Test
Operator may either continue running the test until Steady State is reached, or may
stop the test at Round x".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..device.writecache import ABSENT, WriteCacheRecord
from ..errors import ProfileError
from ..plan import Plan, PlannedTest
from ..profile import build
from ..records import Manifest, Resume, Round, TestPlan
from ..store import RunData, TestData
from ..units import format_duration, format_size, human_bytes, parse_size
from . import ptsstages
from .pts import (
    BY_NAME,
    COMMON,
    TESTS,
    VARIANTS,
    Departure,
    Judgement,
    TestRequirement,
    Variant,
    stored_variant,
    wsat_option,
)
from .ptsstages import STAGED, StagedRequirement

# --------------------------------------------------------------------------- words


def _sizes(sizes: Iterable[int]) -> str:
    return ", ".join(format_size(b) if b else "composite (bssplit)" for b in sizes)


def _mixes(mixes: Iterable[int]) -> str:
    return ", ".join(f"{m}/{100 - m}" for m in mixes)


def _load(jobs: int, qd: int) -> str:
    return f"{jobs} thread{'s' if jobs != 1 else ''} x queue depth {qd}"


def _pct(x: float) -> str:
    return f"{x * 100:g} %"


def _times(x: float) -> str:
    return f"{x:.3g}x the user capacity"


# --------------------------------------------------------------------------- judging


# the stages of the tests beyond the basic four that start with a purge
PURGED = ("precondition", "groups")


class _Collect:
    """The departures found so far, for one PTS test (or the run)."""

    def __init__(self) -> None:
        self.items: list[Departure] = []

    def add(
        self, test: str | None, title: str, requirement: str, required: str, actual: str
    ) -> None:
        self.items.append(Departure(test, requirement, required, actual, title))


def _title(plan: TestPlan, ref: TestRequirement) -> str:
    return plan.title or ref.title


def _static(
    out: _Collect,
    ref: TestRequirement,
    variant: Variant,
    plan: TestPlan,
    capacity: int,
    planned: bool,
) -> None:
    """What test.json says (the same for a plan and a run): workload, loops, limits."""
    name, title = plan.name, _title(plan, ref)

    def add(requirement: str, required: str, actual: str) -> None:
        out.add(name, title, requirement, required, actual)

    _workload(add, plan, variant)
    wl = plan.workload
    jobs, qd = ref.load or variant.load
    if (wl.numjobs, wl.iodepth) != (jobs, qd):
        add("outstanding I/O", _load(jobs, qd), _load(wl.numjobs, wl.iodepth))
    patterns = sorted({p.pattern for p in plan.points})
    if patterns != [ref.pattern]:
        add("access pattern", f"{ref.pattern} I/O", " and ".join(patterns) + " I/O")
    runtimes = sorted({p.runtime for p in plan.points} or {plan.point_runtime})
    if runtimes != [COMMON.point_runtime]:
        add(
            "point duration",
            "1 minute per point"
            + (", a round being one point" if ref.kind == "saturation" else ""),
            ", ".join(format_duration(s) for s in runtimes) + " per point",
        )
    # the loop order over the points the PTS has: R/W mix outer, block size inner
    have = [p.key for p in plan.points if p.bs in ref.block_sizes and p.read_pct in ref.mixes]
    want = [(b, m) for m in ref.mixes for b in ref.block_sizes if (b, m) in set(have)]
    if have != want:
        add("loop order", _loop_words(ref.mixes, ref.block_sizes), _loop_actual(have))
    if plan.kind != ref.kind:
        add(
            "stop rule",
            "rounds until steady state" if ref.kind == "steady" else _wsat_rule(ref),
            {"steady": "rounds until steady state", "saturation": "write saturation"}.get(
                plan.kind, f"{plan.kind} test"
            ),
        )
    elif ref.kind == "steady":
        _steady_limits(add, plan, planned)
        # those the test's points can measure (a missing point is a departure of its own)
        keys = {p.key for p in plan.points}
        required = [t for t in ref.tracking if _tracked_key(t) in keys]
        if sorted(plan.tracking) != sorted(required):
            add(
                "tracking variables",
                ", ".join(required) or "none",
                ", ".join(plan.tracking) or "none",
            )
    elif ref.kind == "saturation" and planned:
        limits = (plan.stop_written_multiple, plan.max_duration)
        if limits != (ref.stop_written_multiple, ref.max_duration):
            add(
                "stop rule",
                _wsat_rule(ref),
                f"stops at {plan.stop_written_multiple:g}x the user capacity written or "
                f"after {format_duration(plan.max_duration)}",
            )
    _static_precondition(add, ref, plan, capacity, planned)


def _steady_limits(add: Callable[[str, str, str], None], plan: TestPlan, planned: bool) -> None:
    """The steady-state rule of test.json against the PTS's."""
    r = plan.rounds
    if r.window != COMMON.window:
        add("steady-state window", f"{COMMON.window} rounds", f"{r.window} rounds")
    if r.max_excursion != COMMON.max_excursion:
        add(
            "data excursion limit",
            f"{_pct(COMMON.max_excursion)} of the window mean",
            f"{_pct(r.max_excursion)}",
        )
    if r.max_slope_excursion != COMMON.max_slope_excursion:
        add(
            "slope excursion limit",
            f"{_pct(COMMON.max_slope_excursion)} of the window mean",
            f"{_pct(r.max_slope_excursion)}",
        )
    if planned and r.max < COMMON.rounds:
        add(
            "round limit",
            f"rounds until steady state; stopping without it only at round "
            f"{COMMON.rounds} or later",
            f"at most {r.max} rounds, so the test may stop before steady state",
        )


def _workload(add: Callable[[str, str, str], None], plan: TestPlan, variant: Variant) -> None:
    """Data pattern, direct I/O and ActiveRange: what every PTS test shares."""
    wl = plan.workload
    if wl.data_pattern != COMMON.data_pattern:
        add("data pattern", "random (incompressible) data", f"{wl.data_pattern} data")
    if wl.direct != COMMON.direct:
        add("direct I/O", "direct I/O, bypassing the host's page cache", "buffered I/O")
    if plan.active_range != variant.active_range:
        add("ActiveRange", f"{variant.active_range:g} %", f"{plan.active_range:g} %")


def _staged(
    out: _Collect, ref: StagedRequirement, variant: Variant, plan: TestPlan, planned: bool
) -> None:
    """A stage of one of the tests beyond the basic four (analysis/ptsstages.py)."""

    def add(requirement: str, required: str, actual: str) -> None:
        out.add(plan.name, plan.title or ref.title, requirement, required, actual)

    _workload(add, plan, variant)
    if plan.kind == "steady":
        _steady_limits(add, plan, planned)
    ptsstages.judge(add, ref, variant.load, plan)


def _loop_words(mixes: Sequence[int], sizes: Sequence[int]) -> str:
    return (
        f"R/W mixes ({_mixes(mixes)}) in the outer loop, block sizes ({_sizes(sizes)}) "
        "in the inner loop"
    )


def _loop_actual(points: Sequence[tuple[int, int]]) -> str:
    """The loop order a round's points (block size, read %) follow, in words."""
    mixes = list(dict.fromkeys(m for _, m in points))
    sizes = list(dict.fromkeys(b for b, _ in points))
    mix_outer = [m for _, m in points] == sorted((m for _, m in points), key=mixes.index)
    if mix_outer:
        return _loop_words(mixes, sizes)
    return f"block sizes ({_sizes(sizes)}) in the outer loop, R/W mixes ({_mixes(mixes)}) inside"


def _tracked_key(label: str) -> tuple[int, int]:
    """``iops 64k 65/35`` -> (65536, 65): the point a tracking variable is read from."""
    _, bs, mix = label.split()
    return parse_size(bs), int(mix.split("/")[0])


def _wsat_rule(ref: TestRequirement) -> str:
    return (
        f"continuous 1-minute rounds until {ref.stop_written_multiple:g}x the user capacity "
        f"is written or {format_duration(ref.max_duration)} have passed, whichever comes first"
    )


def _static_precondition(
    add: Callable[[str, str, str], None],
    ref: TestRequirement,
    plan: TestPlan,
    capacity: int,
    planned: bool,
) -> None:
    """Workload-independent preconditioning as test.json plans it."""
    pre = plan.precondition
    if not ref.precondition:
        if pre is not None:
            add(
                "preconditioning",
                "none: the test starts from the purged drive",
                f"{human_bytes(pre.total_bytes)} of preconditioning",
            )
        return
    if pre is None:
        add(
            "preconditioning",
            f"{_times(COMMON.precondition_multiple)} of sequential writes before the rounds",
            "none",
        )
        return
    sizes = plan.block_sizes
    if ref.per_block_size and len(sizes) > 1:
        add(
            "purge and preconditioning per block size",
            "each block size purged and preconditioned on its own, at that block size",
            f"one purge and preconditioning for {_sizes(sizes)}",
        )
    want_bs = sizes[0] if ref.per_block_size and len(sizes) == 1 else COMMON.precondition_bs
    if pre.bs != want_bs:
        add(
            "preconditioning block size",
            f"sequential {format_size(want_bs)} writes",
            f"sequential {format_size(pre.bs)} writes",
        )
    if capacity > 0:
        want = COMMON.precondition_multiple * capacity
        unit = max(pre.bs * max(pre.numjobs, 1), 1)  # the plan rounds up to whole blocks
        if not want <= pre.total_bytes < want + unit:
            add(
                "preconditioning amount",
                f"{_times(COMMON.precondition_multiple)}, {human_bytes(want)}, written "
                "within the ActiveRange",
                f"{_times(pre.total_bytes / capacity)}, {human_bytes(pre.total_bytes)}",
            )
    if planned and pre.max_duration > 0:
        add(
            "preconditioning complete",
            f"all {_times(COMMON.precondition_multiple)} written",
            f"a time limit of {format_duration(pre.max_duration)} "
            "(precondition.max_duration) may stop it earlier",
        )


def _group(
    out: _Collect,
    ref: TestRequirement,
    plans: Sequence[TestPlan],
    skipped: str | None,
    sector: int,
) -> None:
    """What the tests running one PTS test show together: block sizes, R/W mixes."""
    title = plans[0].title if len(plans) == 1 and plans[0].title else ref.title
    if not plans:
        out.add(ref.name, ref.title, "test run", "run", skipped or "not run")
        return
    sizes: list[int] = []
    mixes: list[int] = []
    for p in plans:
        sizes += [b for b in p.block_sizes if b not in sizes]
        mixes += [m for m in p.mixes if m not in mixes]
    if set(sizes) != set(ref.block_sizes):
        # the plan drops the points a drive's logical sector does not divide (4Kn: 512)
        dropped = [b for b in ref.block_sizes if b not in sizes and sector and b % sector]
        why = (
            f" ({_sizes(dropped)} dropped, the drive's logical sector being {sector} bytes)"
            if dropped
            else ""
        )
        out.add(ref.name, title, "block sizes", _sizes(ref.block_sizes), _sizes(sizes) + why)
    if set(mixes) != set(ref.mixes):
        out.add(ref.name, title, "R/W mixes", _mixes(ref.mixes), _mixes(mixes))


def _judge(
    variant: str | None,
    plans: Sequence[TestPlan],
    profile_tests: Sequence[str],
    skipped: Mapping[str, str],
    capacity: int,
    sector: int,
    planned: bool,
    run_wide: Sequence[Departure],
    per_test: Mapping[str, Sequence[Departure]],
) -> Judgement:
    """Apply the table to the tests of a plan or run.

    ``plans``: their test.json records; ``profile_tests``: the profile's test sections
    (a PTS test there without a planned test was skipped: ``skipped`` says why);
    ``run_wide`` and ``per_test`` (by the run's test name): what only a plan or only a
    run can tell (purge, write cache, cut short, stopped early).
    """
    if variant is None or variant not in VARIANTS:
        return Judgement(None, planned=planned)
    var = VARIANTS[variant]
    out = _Collect()
    out.items += run_wide
    by_spec: dict[str, list[TestPlan]] = {}
    for p in plans:
        by_spec.setdefault(p.spec or p.name, []).append(p)
    judged: list[str] = []
    for ref in TESTS:
        mine = by_spec.get(ref.name, [])
        if not mine and ref.name not in profile_tests:
            continue  # not in the profile: the claim does not cover it
        judged.append(ref.name)
        if ref.name == "wsat" and len(mine) == 1:  # one of its optional workloads?
            ref = wsat_option([(p.pattern, p.bs, p.read_pct) for p in mine[0].points]) or ref
        _group(out, ref, mine, skipped.get(ref.name), sector)
        for p in mine:
            _static(out, ref, var, p, capacity, planned)
            out.items += per_test.get(p.name, ())
    for spec, mine in by_spec.items():
        staged = STAGED.get(mine[0].procedure)
        if staged is not None and spec not in BY_NAME:
            judged.append(spec)
            for p in mine:
                _staged(out, staged, var, p, planned)
                out.items += per_test.get(p.name, ())
            continue
        if spec not in BY_NAME:
            for p in mine:
                out.add(
                    p.name,
                    p.title or p.name,
                    "test",
                    "one of the PTS tests " + ", ".join(r.title for r in TESTS),
                    f"{p.title or p.name}, a test PTS 2.0.2 does not define",
                )
    if not judged:
        out.add(None, "", "tests", "at least one of " + ", ".join(r.title for r in TESTS), "none")
    return Judgement(variant, tuple(judged), tuple(_shared(out.items, plans)), planned)


def _shared(items: list[Departure], plans: Sequence[TestPlan]) -> list[Departure]:
    """A departure every test has alike (the purge of a regular file) once, for them all,
    after the run's own."""
    # a later stage of a test beyond the basic four goes on from the stage before it:
    # what every test that starts on its own has alike is said for all
    names = {p.name for p in plans if not p.stage or p.stage in PURGED}
    if len(names) < 2:
        return items

    def what(d: Departure) -> tuple[str, str, str]:
        return (d.requirement, d.required, d.actual)

    common = [
        w
        for w in dict.fromkeys(what(d) for d in items if d.test in names)
        if {d.test for d in items if what(d) == w} >= names
    ]
    own = [d for d in items if d.test is None]
    rest = [d for d in items if d.test is not None and what(d) not in common]
    return [*own, *(Departure(None, *w) for w in common), *rest]


# --------------------------------------------------------------------------- a plan


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
        run_wide.append(_cache(var, _setting_words(wanted)))
    elif write_cache_absent:
        run_wide.append(_cache(var, f"not set, as {write_cache_absent}"))
    per_test: dict[str, list[Departure]] = {}
    for t in plan.tests:
        words = _planned_purge(plan, t)
        if words and not (t.stage and t.stage not in PURGED):
            per_test[t.name] = [_purge(t.name, t.title, words)]
    skipped = _skipped_notes(plan.notes)
    return _judge(
        variant,
        [t.record() for t in plan.tests],
        [s.name for s in prof.tests],
        skipped,
        plan.target.capacity,
        plan.target.logical_sector,
        True,
        run_wide,
        per_test,
    )


def _skipped_notes(notes: Iterable[str]) -> dict[str, str]:
    """``test iops skipped: ...`` notes of a plan, by the test's profile section."""
    out: dict[str, str] = {}
    for n in notes:
        words = n.split()
        if len(words) > 2 and words[0] == "test" and words[2].startswith("skipped"):
            spec = words[1].split("-")[0] if words[1] not in BY_NAME else words[1]
            out[spec] = n.split(" ", 2)[2]
    return out


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


# --------------------------------------------------------------------------- a run


def judge_run(run: RunData, write_cache: WriteCacheRecord | None = None) -> Judgement:
    """The run's standing, from what it recorded.  ``write_cache``: its
    ``write-cache.json`` (:func:`tkbench.cacherecord.load`; None for runs before it)."""
    m = run.manifest
    variant = stored_variant(m)
    if variant is None:
        return Judgement(None)
    var = VARIANTS[variant]
    capacity = m.target.capacity_bytes or m.target.capacity
    stored_setting = _stored(m.profile.resolved, "workload", "write_cache")
    run_wide = [d for d in [_run_cache(var, write_cache, stored_setting)] if d]
    per_test = {t.name: _run_test(t, capacity) for t in run.tests}
    for r in m.resumes:
        if r.action == "continue-parts" and r.test in per_test:
            split = _resumed_in_parts(r, run.test(r.test))
            if split is not None:
                per_test[r.test].append(split)
    present = {t.name for t in run.tests}
    profile_tests, skipped = _stored_tests(m)
    for name in m.tests:
        if name not in present:  # planned, never started
            spec = name.split("-")[0] if name not in BY_NAME else name
            skipped.setdefault(spec, "planned, never started")
            profile_tests.append(spec)
    return _judge(
        variant,
        [t.plan for t in run.tests],
        profile_tests,
        skipped,
        capacity,
        m.target.logical_sector,
        False,
        run_wide,
        per_test,
    )


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
    return Departure(
        t.name,
        "stage run without a break",
        "its stimuli one after the other, without an interruption",
        f"interrupted and resumed: {before} measured before the interruption; {after}",
        t.plan.title or t.name,
    )


def _stored(resolved: Mapping[str, Any], *keys: str) -> Any:
    node: Any = resolved
    for k in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(k)
    return node


def _stored_tests(m: Manifest) -> tuple[list[str], dict[str, str]]:
    """The enabled test sections of the stored profile, and why the plan skipped any."""
    skipped = _skipped_notes(m.plan_notes)
    try:
        prof = build(dict(m.profile.resolved), m.profile.source)
    except ProfileError:
        return list(m.tests), skipped
    return [t.name for t in prof.tests], skipped


def _run_test(t: TestData, capacity: int) -> list[Departure]:
    plan = t.plan
    ref = BY_NAME.get(plan.spec or plan.name)
    title = plan.title or t.name
    out: list[Departure] = []
    if ref is None and plan.procedure not in STAGED:
        return out
    started = bool(t.rounds) or t.result is not None
    if plan.stage and plan.stage not in PURGED:
        return out  # a later stage goes on from the one before it
    if not plan.purge:
        out.append(_purge(t.name, title, "none (the test's purge = false)"))
    elif t.purge is not None and not t.purge.pts_compliant:
        how = t.purge.method or t.purge.requested_method or "none"
        why = next((n for n in t.purge.notes if n), "")
        out.append(_purge(t.name, title, how + (f"; {why}" if why else "")))
    elif t.purge is None and started:
        out.append(_purge(t.name, title, "no purge record"))
    pre = t.precondition
    if ref is None:
        return out
    if ref.precondition and plan.precondition is not None:
        if pre is not None and pre.cut_short:
            out.append(
                Departure(
                    t.name,
                    "preconditioning complete",
                    f"all {_times(COMMON.precondition_multiple)} written",
                    f"cut short by its time limit of {format_duration(pre.max_duration)} after "
                    f"{human_bytes(pre.written_bytes)} of {human_bytes(pre.total_bytes)}",
                    title,
                )
            )
        elif pre is None and t.rounds:
            out.append(
                Departure(
                    t.name,
                    "preconditioning complete",
                    f"all {_times(COMMON.precondition_multiple)} written",
                    "no preconditioning record",
                    title,
                )
            )
    if t.result is None:
        n = len(t.rounds)
        out.append(
            Departure(
                t.name,
                "test run",
                "run until its stop rule ends it",
                f"not finished ({n} round{'s' if n != 1 else ''} stored)",
                title,
            )
        )
    elif ref.kind == "steady" and plan.kind == "steady":
        limit = plan.rounds.max
        if t.result.steady_state is False and limit < COMMON.rounds:
            out.append(
                Departure(
                    t.name,
                    "round limit",
                    f"rounds until steady state; stopping without it only at round "
                    f"{COMMON.rounds} or later",
                    f"stopped by its limit of {limit} rounds without steady state",
                    title,
                )
            )
    elif ref.kind == "saturation" and plan.kind == "saturation":
        words = _wsat_stop(ref, plan, t.rounds, capacity)
        if words:
            out.append(Departure(t.name, "stop rule", _wsat_rule(ref), words, title))
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
        f"{_times(last.total_written_bytes / capacity)} written in "
        f"{format_duration(last.ended - t0)}"
    )
    if stop == len(rounds) - 1:
        return None
    if stop is None:
        return f"stopped after {done}"
    return f"ran on past the PTS stop (round {stop + 1}) to round {len(rounds)}: {done}"


# --------------------------------------------------------------------------- shared


def _purge(test: str, title: str, actual: str) -> Departure:
    return Departure(test, "purge", "a PTS-compliant purge before the test", actual, title)


def _cache(var: Variant, actual: str) -> Departure:
    code = "WCD" if var.write_cache == "disabled" else "WCE"
    return Departure(None, "volatile write cache", f"{var.write_cache}, {code}", actual)


def _setting_words(setting: object) -> str:
    if setting == "unchanged":
        return "left as the drive had it (workload.write_cache = unchanged)"
    if setting in ("disabled", "enabled"):
        return str(setting)
    return "not set by tkbench"


def _run_cache(
    var: Variant, record: WriteCacheRecord | None, stored_setting: object
) -> Departure | None:
    want = var.write_cache
    if record is None:  # runs made before tkbench set the write cache
        return _cache(var, "not set by tkbench (the run has no write-cache record)")
    if record.requested != want:
        words = _setting_words(record.requested)
        before = record.sessions[0].before if record.sessions else ""
        if record.requested == "unchanged" and before in ("enabled", "disabled"):
            words = f"{before}, " + words
        return _cache(var, words)
    if not record.applies:
        return _cache(var, f"not set, as {record.reason}")
    ran = [s for s in record.sessions if s.verified is True]
    if not ran:
        return _cache(var, f"{want} asked, never verified")
    if want == "enabled" and any(s.after == ABSENT for s in ran):
        return _cache(var, "the drive has no volatile write cache to enable")
    return None
