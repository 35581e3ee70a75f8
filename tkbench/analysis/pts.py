"""Where a run departs from the SNIA PTS 2.0.2 parameters (pure).

The reference is a table in this module — the parameters a PTS-E or PTS-C report
states for the four basic tests — never a profile file of the installation, so a
newer tkbench with other bundled profiles judges an old run exactly as before.  The
run's side is the profile it ran with, as stored (resolved) in its manifest.
docs/methodology.md says where each number comes from in the specification.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ProfileError
from ..profile import Profile, build
from ..records import Manifest
from ..units import format_duration, format_size

K = 1024


@dataclass(frozen=True)
class TestReference:
    name: str
    title: str
    block_sizes: tuple[int, ...]
    mixes: tuple[int, ...]  # read percentages
    load: tuple[int, int] | None = None  # (jobs, queue depth); None: the variant's
    steady: bool = True
    stop_written_multiple: float = 0.0  # write saturation: capacities written ...
    max_duration: float = 0.0  # ... or seconds


@dataclass(frozen=True)
class Variant:
    name: str  # "PTS-E", "PTS-C"
    load: tuple[int, int]  # (jobs, queue depth) of every test without its own
    active_range: float  # percent of the user capacity
    precondition_multiple: float = 2.0  # workload-independent preconditioning, x capacity
    point_runtime: float = 60.0  # seconds of every point (one-minute rounds in WSAT)
    rounds_max: int = 25
    write_cache: str = "disabled"  # the volatile write cache: PTS-E WCD, PTS-C WCE


TESTS = (
    TestReference(
        "iops",
        "IOPS",
        (1024 * K, 128 * K, 64 * K, 32 * K, 16 * K, 8 * K, 4 * K, 512),
        (100, 95, 65, 50, 35, 5, 0),
    ),
    TestReference("throughput", "Throughput", (1024 * K, 128 * K), (100, 0), load=(1, 32)),
    TestReference("latency", "Latency", (8 * K, 4 * K, 512), (100, 65, 0), load=(1, 1)),
    TestReference(
        "wsat",
        "Write Saturation",
        (4 * K,),
        (0,),
        steady=False,
        stop_written_multiple=4.0,
        max_duration=86400.0,
    ),
)
PTS_E = Variant("PTS-E", (4, 32), 100.0)
PTS_C = Variant("PTS-C", (2, 16), 75.0, write_cache="enabled")


def variant_of(profile: Profile) -> Variant:
    return PTS_C if profile.name == "pts-c" else PTS_E


def departures(manifest: Manifest) -> list[str]:
    """Where the run's stored profile departs from the PTS parameters, in words.

    Compares the parameters a PTS report states: the tests, their block sizes,
    R/W mixes, point durations, round limits, loads, the ActiveRange, the
    preconditioning amount, the write-saturation limits and the volatile write
    cache setting.
    """
    try:
        run = build(dict(manifest.profile.resolved), manifest.profile.source)
    except ProfileError:
        return []
    ref = variant_of(run)
    out: list[str] = []
    if run.precondition.capacity_multiple != ref.precondition_multiple:
        out.append(
            f"preconditioning {run.precondition.capacity_multiple:g}x capacity "
            f"(PTS: {ref.precondition_multiple:g}x)"
        )
    if run.workload.write_cache != ref.write_cache:
        out.append(f"volatile write cache {run.workload.write_cache} (PTS: {ref.write_cache})")
    mine = {t.name: t for t in run.tests}
    for r in TESTS:
        t = mine.get(r.name)
        if t is None:
            out.append(f"no {r.title} test")
            continue
        diffs = []
        if t.block_sizes != r.block_sizes:
            diffs.append("block sizes " + ", ".join(format_size(b) for b in t.block_sizes))
        if tuple(m.read for m in t.mixes) != r.mixes:
            diffs.append("R/W mixes " + ", ".join(m.label for m in t.mixes))
        if t.point_runtime != ref.point_runtime:
            diffs.append(
                f"{format_duration(t.point_runtime)} points "
                f"(PTS: {format_duration(ref.point_runtime)})"
            )
        if t.kind == "steady" and t.rounds.max != ref.rounds_max:
            diffs.append(f"at most {t.rounds.max} rounds (PTS: {ref.rounds_max})")
        wl = t.workload
        jobs, qd = r.load or ref.load
        if (wl.numjobs, wl.iodepth) != (jobs, qd):
            diffs.append(f"{wl.numjobs} jobs x QD {wl.iodepth} (PTS: {jobs} x {qd})")
        if wl.active_range != ref.active_range:
            diffs.append(f"ActiveRange {wl.active_range:g} % (PTS: {ref.active_range:g} %)")
        if t.kind == "saturation" and (t.max_duration, t.stop_written_multiple) != (
            r.max_duration,
            r.stop_written_multiple,
        ):
            diffs.append(
                f"stops at {t.stop_written_multiple:g}x capacity or "
                f"{format_duration(t.max_duration)} (PTS: {r.stop_written_multiple:g}x "
                f"or {format_duration(r.max_duration)})"
            )
        if diffs:
            out.append(f"{r.title}: " + ", ".join(diffs))
    return out
