"""Profile + target -> the exact list of tests, phases and workload points (pure)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from tkbench import cache, kinds
from tkbench.analysis.stoprules import kind_named
from tkbench.kinds.basic import HISTOGRAM_BS, histogram_point
from tkbench.plan.model import (
    PlannedTest,
    Point,
    Precondition,
    precondition_bytes,
    workload_independent,
)
from tkbench.profile.model import Acceptance, Profile
from tkbench.rundir.records.base import dump
from tkbench.targets.base import TargetInfo
from tkbench.units import format_duration, format_size, human_bytes, size_label

# planning helpers that lived here, kept importable from tkbench.plan.build
__all__ = ["HISTOGRAM_BS", "Point", "histogram_point", "precondition_bytes"]
__all__ += ["Plan", "build", "describe", "pattern_text", "to_json", "workload_independent"]
__all__ += ["PlannedTest", "Precondition", "TargetInfo", "volume_profile", "volume_usable"]
__all__ += ["active_range_bytes"]


@dataclass(frozen=True)
class Plan:
    profile: Profile
    target: TargetInfo
    active_bytes: int
    tests: tuple[PlannedTest, ...]
    notes: tuple[str, ...] = field(default=())

    def estimate(self, precondition_rate: float = 1e9) -> tuple[float, float]:
        """Lower and upper bound of the run time in seconds.

        Rounds are counted from the steady-state window (lower) to the round
        limit (upper); preconditioning assumes ``precondition_rate`` bytes/s.
        """
        lo = hi = 0.0
        for t in self.tests:
            pre = t.precondition.total_bytes / precondition_rate if t.precondition else 0.0
            lo += pre + t.min_rounds * t.round_seconds + t.extra_seconds
            hi += pre + t.max_rounds * t.round_seconds + t.extra_seconds
        return lo, hi

    def describe(self, precondition_rate: float = 1e9) -> str:
        """The plan as ``tkbench plan`` prints it (:func:`describe`)."""
        return describe(self, precondition_rate)

    def to_json(self, precondition_rate: float = 1e9) -> dict[str, Any]:
        """The plan as ``tkbench plan --json`` prints it (:func:`to_json`)."""
        return to_json(self, precondition_rate)


def active_range_bytes(capacity: int, percent: float, align: int) -> int:
    """The ActiveRange in bytes, aligned down to ``align``."""
    raw = int(capacity * percent / 100.0)
    return raw - raw % align


def build(profile: Profile, target: TargetInfo) -> Plan:
    """Expand a profile for a target into the exact plan."""
    if target.capacity <= 0:
        raise ValueError("target capacity must be positive")
    volume_notes: dict[str, tuple[str, ...]] = {}
    if profile.scope == "volume":
        profile, volume_notes = volume_profile(profile, target)
    notes: list[str] = []
    sector = target.logical_sector
    largest = max(bs for t in profile.tests for bs in t.block_sizes)
    align = max(largest, profile.precondition.bs, sector, 1024 * 1024)
    tests: list[PlannedTest] = []
    active_all = 0
    for spec in profile.tests:
        typ = kinds.of_spec(spec)
        active = 0
        if typ.addresses_target:
            active = active_range_bytes(target.capacity, spec.workload.active_range, align)
            if spec.file_size:  # a volume benchmark: each job's own test file
                active = spec.file_size
            if active <= 0:
                raise ValueError(
                    f"test {spec.name}: the ActiveRange of {human_bytes(target.capacity)} "
                    f"at {spec.workload.active_range:g} % is smaller than {format_size(align)}"
                )
            active_all = max(active_all, active)
        ctx = kinds.Context(
            profile, target.capacity, sector, active, volume_notes.get(spec.name, ())
        )
        planned, skipped = typ.expand(spec, ctx)
        tests.extend(planned)
        notes.extend(skipped)
    if not tests:
        raise ValueError("no test of the profile can run on this target")
    return Plan(profile, target, active_all, tuple(tests), tuple(notes))


def volume_usable(free: int, reserve: int) -> int:
    """The bytes a volume benchmark's files may take of ``free`` bytes: what is left
    after ``reserve`` or a tenth of the free space, whichever is larger."""
    return max(0, free - max(reserve, free // 10))


def volume_profile(
    profile: Profile, target: TargetInfo
) -> tuple[Profile, dict[str, tuple[str, ...]]]:
    """A volume profile fitted to its volume: direct I/O where the filesystem takes it
    (else buffered, when the profile allows it), every test's files within the usable
    free space (shrunk when allowed, never below ``volume.min_file_size``).  Files of
    one test are removed before the next starts, so each test must fit on its own.
    Returns the fitted profile and the notes per test.  Raises ValueError (one line,
    with the numbers) when it cannot run."""
    vol = profile.volume
    usable = volume_usable(target.free, vol.reserve)
    specs = []
    all_notes: dict[str, tuple[str, ...]] = {}
    for spec in profile.tests:
        typ = kinds.of_spec(spec)
        own = typ.fit_volume(spec, usable, target.free, vol)
        if own is not None:  # the type's own rule (a copy test's sources and one copy)
            specs.append(own[0])
            all_notes[spec.name] = tuple(own[1])
            continue
        wl = spec.workload
        notes: list[str] = []
        if wl.direct and not target.direct_io:
            if not vol.allow_buffered:
                raise ValueError(
                    f"{target.spec}: its filesystem does not support direct I/O (O_DIRECT), "
                    f"which test {spec.name} asks for; pass --set workload.direct=false or "
                    "--set volume.allow_buffered=true to run buffered"
                )
            wl = dataclasses.replace(wl, direct=False)
            notes.append("buffered I/O: the filesystem does not support O_DIRECT")
        # one file per job, or one the jobs share (a sweep's, a virtual file's)
        jobs = wl.numjobs if typ.files_per_job else 1
        size = spec.file_size
        bs = max(spec.block_sizes)
        if jobs * size > usable:
            fitted = usable // jobs
            fitted -= fitted % max(bs, 1 << 20)
            if not vol.shrink or fitted < max(vol.min_file_size, bs):
                raise ValueError(
                    f"{target.spec}: test {spec.name} needs {jobs} x {human_bytes(size)} = "
                    f"{human_bytes(jobs * size)} of test files, but only "
                    f"{human_bytes(usable)} may be used ({human_bytes(target.free)} free, "
                    f"keeping {human_bytes(target.free - usable)} free)"
                    + ("" if vol.shrink else "; volume.shrink is off")
                )
            notes.append(
                f"test file shrunk from {human_bytes(size)} to {human_bytes(fitted)} per job "
                f"to fit the volume ({human_bytes(target.free)} free)"
            )
            size = fitted
        specs.append(dataclasses.replace(spec, workload=wl, file_size=size))
        all_notes[spec.name] = tuple(notes)
    return dataclasses.replace(profile, tests=tuple(specs)), all_notes


def describe(plan: Plan, precondition_rate: float = 1e9) -> str:
    """A human-readable description of the plan, as ``tkbench plan`` prints it."""
    p = plan.profile
    lines = [
        f"Profile   {p.name}: {p.description}",
        f"Target    {plan.target.spec} ({plan.target.kind}, "
        f"{human_bytes(plan.target.capacity)}, {plan.target.logical_sector}-byte sectors)",
        f"Purge     {p.purge.method}"
        + (" (blkdiscard/trim fallback allowed)" if p.purge.allow_fallback else ""),
    ]
    for t in plan.tests:
        s = t.spec
        wl = s.workload
        lines.append("")
        lines.append(f"Test {t.name}: {t.title} [{s.kind}]")
        typ = kinds.of_spec(s)
        own = typ.describe(t)
        if own is not None:  # the type's own lines (a copy test's)
            lines += own
            lines.append(f"  stop      {kind_named(s.kind).stop_text(t.round_spec)}")
            lines += [f"  note      {note}" for note in t.notes]
            continue
        jobs, depth = typ.load_words(t)
        lines.append(
            f"  load      {jobs} job(s) x queue depth {depth}, ActiveRange "
            f"{wl.active_range:g} %, {pattern_text(wl.data_pattern, wl.compress_percentage)} "
            f"data, direct={'yes' if wl.direct else 'no'}"
        )
        if s.file_size:
            sync = f", fsync after every {s.fsync} write(s)" if s.fsync else ""
            sync += ", write-through (O_SYNC)" if s.sync else ""
            lines.append(
                f"  files     {wl.numjobs if typ.files_per_job else 1} x "
                f"{human_bytes(t.active_bytes)} in the working "
                f"directory, {wl.ioengine} engine{sync}" + (", end_fsync" if s.end_fsync else "")
            )
        states = list(dict.fromkeys(pt.cache or "as-is" for pt in t.points))
        if p.scope == "volume" or states != ["as-is"]:
            lines += [f"  cache     {cache.describe(st, s.drop_caches)}" for st in states]
        lines.append(f"  purge     {'yes' if t.purge else 'no'}")
        if t.precondition:
            pc = t.precondition
            how = (
                "one job wrapping at its end"
                if pc.numjobs == 1
                else f"{pc.numjobs} jobs, each wrapping within its own slice of it"
            )
            lines.append(
                f"  precond.  {human_bytes(pc.total_bytes)} of {format_size(pc.bs)} sequential "
                f"writes ({p.precondition.capacity_multiple:g}x the user capacity) within the "
                f"ActiveRange, {how}"
            )
        else:
            lines.append("  precond.  none")
        lines.append(
            f"  round     {len(t.points)} point(s) back to back, "
            f"{format_duration(t.round_seconds)} per round"
        )
        lines += typ.detail_lines(t)
        for pt in t.points:
            if not typ.lists_point(pt):
                continue
            load = f"T{pt.numjobs}/Q{pt.iodepth}"
            extra = [x for x in (pt.tag, "not measured" if pt.role == "prewrite" else "") if x]
            if pt.idle:
                extra.append(f"{format_duration(pt.busy)} I/O, {format_duration(pt.idle)} idle")
            lines.append(
                f"    {pt.job_name:<22} {pt.rw:<9} bs={size_label(pt.bs):<6} "
                f"R/W {pt.mix.label:<7} {load:<8} {format_duration(pt.runtime)}"
                + (f"  ({'; '.join(extra)})" if extra else "")
            )
        if s.bssplit:
            lines.append(f"  sizes     {t.points[0].bssplit} (bytes/% of I/Os)")
        if s.zones:
            lines.append(f"  zones     {t.points[0].zones} (% of accesses/% of the ActiveRange)")
        if t.sample:
            lines.append(
                f"  sampled   IOPS, MB/s and mean response time every {format_duration(t.sample)}"
            )
        if t.derive_from:
            lines.append(
                f"  chosen    when the stage starts, from {t.derive_from}'s measurement window: "
                f"MaxIOPS (highest IOPS with a mean response time within "
                f"{t.response_ceiling * 1e3:g} ms), MidIOPS, MinIOPS"
            )
        lines.append(f"  stop      {kind_named(s.kind).stop_text(t.round_spec)}")
        if t.histogram_point is not None:
            hp = t.histogram_point
            lines.append(
                f"  histogram {format_duration(hp.runtime)} of {format_size(hp.bs)} random writes "
                f"at {hp.numjobs} job(s) x queue depth {hp.iodepth} after the rounds, "
                "with fio's full latency histogram"
            )
        for note in t.notes:
            lines.append(f"  note      {note}")
    for note in plan.notes:
        lines.append(f"Note: {note}")
    lines += _acceptance_lines(plan.profile.acceptance)
    lo, hi = plan.estimate(precondition_rate)
    lines.append("")
    lines.append(
        f"Estimated duration: {format_duration(lo)} to {format_duration(hi)} "
        f"(preconditioning at an assumed {precondition_rate / 1e6:.0f} MB/s)"
    )
    return "\n".join(lines)


def pattern_text(pattern: str, compress_percentage: int = 0) -> str:
    """A data pattern in words ("compressible 50 %": it compresses by half)."""
    return f"{pattern} {compress_percentage} %" if pattern == "compressible" else pattern


def _acceptance_checks(ac: Acceptance) -> list[str]:
    """The PASS/FAIL checks the run will apply (exit 1 when one fails)."""
    checks = [c.label for c in ac.criteria]
    if ac.steady_state:
        checks.insert(0, "every steady-state test reaches steady state")
    if ac.regression_threshold:
        checks.append(
            f"no headline number {ac.regression_threshold:g} % worse than the baseline run"
        )
    return checks


def _acceptance_lines(ac: Acceptance) -> list[str]:
    checks = _acceptance_checks(ac)
    if not checks:
        return []
    return ["", "Acceptance (the run exits 1 when one fails):", *(f"  {c}" for c in checks)]


def to_json(plan: Plan, precondition_rate: float = 1e9) -> dict[str, Any]:
    """The whole plan as plain data, as ``tkbench plan --json`` prints it (for scripts):
    what :func:`describe` tells people, with every number exact (bytes, seconds)."""
    p = plan.profile
    tests: list[dict[str, Any]] = []
    for t in plan.tests:
        phases = [
            name
            for name, present in (
                ("purge", t.purge),
                ("precondition", t.precondition is not None),
                ("rounds", True),
                ("response_histogram", t.histogram_point is not None),
            )
            if present
        ]
        tests.append(
            {
                # as test.json will record it, but the engine fio resolves on the target
                **{k: v for k, v in dump(t.record()).items() if k != "ioengine_used"},
                "phases": phases,
                "round_seconds": t.round_seconds,
                "min_rounds": t.min_rounds,
                "max_rounds": t.max_rounds,
                "response_histogram": None
                if t.histogram_point is None
                else dump(t.histogram_point.record()),
            }
        )
    lo, hi = plan.estimate(precondition_rate)
    return {
        "profile": {"name": p.name, "description": p.description, "source": p.source},
        "target": {
            "spec": plan.target.spec,
            "kind": plan.target.kind,
            "capacity_bytes": plan.target.capacity,
            "logical_sector": plan.target.logical_sector,
        },
        "purge": {"method": p.purge.method, "allow_fallback": p.purge.allow_fallback},
        "active_bytes": plan.active_bytes,
        "tests": tests,
        "notes": list(plan.notes),
        "acceptance": _acceptance_checks(p.acceptance),
        "estimate": {
            "min_seconds": lo,
            "max_seconds": hi,
            "precondition_bytes_per_second": precondition_rate,
        },
    }
