"""A bulk-I/O sweep (``modes`` in a volume profile's test; the bundled ``bulk-sweep``,
after the CCSIO Benchmark): which buffer size and number of buffers in flight read
and write a very large file fastest on this volume (pure planning).

Every combination of buffer size (the test's ``block_sizes``) x buffer count (fio
``iodepth`` of one job with an asynchronous engine) x mode is one point of one
round, reading or writing one shared test file front to back for
``point_runtime`` (time-based: a fast volume wraps to the file's start).  fio lays
the file out once, before the first point, and every point drops the file's
cached pages when it opens it (``invalidate``), so no point starts with any of it
in the page cache.  Combinations whose buffers take more than
``max_buffer_space`` (size x count) are skipped, with a note.

=======================  =========  ==========  ======================
mode                     direction  O_DIRECT    fio ``fadvise_hint``
=======================  =========  ==========  ======================
unbuffered-read          read       yes         ``0`` (no hint)
unbuffered-write         write      yes         ``0``
unbuffered-seq-read      read       yes         ``sequential``
unbuffered-seq-write     write      yes         ``sequential``
buffered-seq-read        read       no          ``sequential``
=======================  =========  ==========  ======================

fio's own default (``fadvise_hint=1``) advises sequential access for every
sequential job, so the modes without the hint turn it off explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tkbench.analysis.figure import DEVIATION, Figure
from tkbench.analysis.repeat import repeatability
from tkbench.kinds.base import Context, KeyRules, TestKeys, TestType
from tkbench.kinds.results.sweep import (
    MODES,
    ROLE,
    Best,
    SweepResult,
    is_sweep,
    sweep_in,
    sweep_of,
)
from tkbench.kinds.words import num as _num
from tkbench.plan.model import PlannedTest, Point
from tkbench.profile.model import SWEEP_MODES, FamilySpec, Mix, TestSpec
from tkbench.units import format_duration, format_size, human_bytes

if TYPE_CHECKING:
    from tkbench.kinds.results.analysed import Analysed
    from tkbench.rundir.records import TestPlan
    from tkbench.rundir.store import TestData

FILE = "bulk-sweep.dat"  # the test file, in the run's working directory

assert tuple(MODES) == SWEEP_MODES


@dataclass(frozen=True)
class SweepSpec(FamilySpec):
    """A sweep's own keys: every buffer size (the test's block sizes) x buffer count
    (I/Os in flight) x mode, on one shared test file."""

    modes: tuple[str, ...]
    buffer_counts: tuple[int, ...]
    max_buffer_space: int = 64 << 20  # bytes: size x count above this is skipped


def own(spec: TestSpec) -> SweepSpec:
    """A sweep test's own keys."""
    if not isinstance(spec.family, SweepSpec):
        raise TypeError(f"test {spec.name} is no bulk-I/O sweep")
    return spec.family


def combinations(
    sizes: tuple[int, ...], counts: tuple[int, ...], max_space: int
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(size, count) pairs in size order then count order: those that run, and those
    skipped because their buffers take more than ``max_space`` bytes."""
    run: list[tuple[int, int]] = []
    skipped: list[tuple[int, int]] = []
    for size in sizes:
        for count in counts:
            (run if size * count <= max_space else skipped).append((size, count))
    return run, skipped


def points(spec: TestSpec, direct_ok: bool = True) -> tuple[Point, ...]:
    """The points of a sweep test, mode by mode (the profile's order), each mode's
    combinations by buffer size then count.  ``direct_ok``: false when the volume
    runs buffered (no O_DIRECT: every mode goes through the page cache)."""
    sw = own(spec)
    run, _ = combinations(spec.block_sizes, sw.buffer_counts, sw.max_buffer_space)
    out: list[Point] = []
    for name in sw.modes:
        m = MODES[name]
        for size, count in run:
            out.append(
                Point(
                    index=len(out),
                    bs=size,
                    mix=Mix(100 if m.read else 0),
                    pattern="sequential",
                    numjobs=1,
                    iodepth=count,
                    runtime=spec.point_runtime,
                    role=ROLE,
                    tag=f"x{count} {m.name}",
                    direct=m.direct and direct_ok,
                    fadvise=m.fadvise,
                    file=FILE,
                    cache="cold",  # none of the file cached at each start (tkbench.cache)
                )
            )
    return tuple(out)


def planned_test(spec: TestSpec, active: int, notes: tuple[str, ...] = ()) -> PlannedTest:
    """A sweep test: one round (per ``repeat``) of every point on one ``active``-byte file."""
    sw = own(spec)
    _, skipped = combinations(spec.block_sizes, sw.buffer_counts, sw.max_buffer_space)
    more = list(notes)
    if skipped:
        more.append(
            f"{len(skipped)} buffer size x count combination(s) skipped, their buffers taking "
            f"more than {format_size(sw.max_buffer_space)}: "
            + ", ".join(f"{format_size(s)} x {c}" for s, c in skipped)
        )
    return PlannedTest.on_own_files(spec, points(spec, spec.workload.direct), active, tuple(more))


def describe(test: PlannedTest) -> list[str]:
    """The sweep's lines of ``tkbench plan`` (instead of one line per point)."""
    spec = test.spec
    sw = own(spec)
    run, _ = combinations(spec.block_sizes, sw.buffer_counts, sw.max_buffer_space)
    lines = [
        f"  sweep     buffer sizes {', '.join(format_size(b) for b in spec.block_sizes)}",
        f"            x buffer counts (I/Os in flight) {', '.join(map(str, sw.buffer_counts))}"
        f": {len(run)} combination(s) within {format_size(sw.max_buffer_space)} of buffers",
        f"            x {len(sw.modes)} mode(s), {format_duration(spec.point_runtime)} each, "
        f"front to back through {FILE} ({human_bytes(test.active_bytes)}), no page of it "
        "cached at each start",
    ]
    for name in sw.modes:
        m = MODES[name]
        how = "O_DIRECT" if m.direct else "through the page cache"
        hint = "sequential-access hint" if m.fadvise == "sequential" else "no access hint"
        lines.append(f"    {name:<22} {m.direction}s, {how}, {hint}")
    return lines


class Sweep(TestType):
    """A bulk-I/O sweep: its cells are buffer size x count x mode on one shared file."""

    name = "sweep"
    family = SweepSpec
    report_part = "sweep"  # tkbench.report.parts
    files_per_job = False
    own_tables = True
    loads_per_point = True
    takes_cache = False
    no_cache_why = "a bulk-I/O sweep is always cold"
    unstated_cache = "cold"  # its points ran cold before they stated it
    repeats_until = False
    rules = KeyRules(
        marker="modes",
        own=("buffer_sizes", "buffer_counts"),
        own_why="belongs to a bulk-I/O sweep: set modes too",
        scope="volume",
        scope_why='a bulk-I/O sweep is a volume benchmark (scope = "volume")',
        conflicts=("procedure", "bssplit", "zones"),
        conflicts_why="a bulk-I/O sweep has no procedure, bssplit or zones",
        needs=("buffer_sizes", "buffer_counts"),
        needs_why="a bulk-I/O sweep needs it",
        foreign=("block_sizes", "mixes"),
        foreign_why="a bulk-I/O sweep sets it from buffer_sizes and modes",
    )

    def fill_keys(self, k: TestKeys) -> None:
        """Its buffer sizes become the test's block sizes and its modes its mixes; it
        reads and writes a volume's shared test file front to back, in one job."""
        t = k.values
        if t["pattern"] != "sequential":
            raise k.refuse("pattern", "a bulk-I/O sweep reads and writes front to back")
        if k.workload["numjobs"] != 1:
            raise k.refuse("workload.numjobs", "a bulk-I/O sweep runs one job (numjobs = 1)")
        t["block_sizes"] = t["buffer_sizes"]
        reads = [m.endswith("-read") for m in t["modes"]]
        t["mixes"] = tuple(Mix(r) for r in (100, 0) if (r == 100) in reads)
        if min(t["buffer_sizes"]) * min(t["buffer_counts"]) > t["max_buffer_space"]:
            raise k.refuse(
                "max_buffer_space",
                f"{format_size(t['max_buffer_space'])} skips every buffer size x count",
            )
        k.family = SweepSpec(t["modes"], t["buffer_counts"], t["max_buffer_space"])

    def stored(self, plan: TestPlan) -> bool:
        return is_sweep(plan)

    def expand(self, spec: TestSpec, ctx: Context) -> tuple[list[PlannedTest], list[str]]:
        return [planned_test(spec, ctx.active, ctx.notes)], []

    def load_words(self, t: PlannedTest) -> tuple[str, str]:
        return f"{t.spec.workload.numjobs}", "the buffer counts below"

    def detail_lines(self, t: PlannedTest) -> list[str]:
        return describe(t)

    def lists_point(self, pt: Point) -> bool:
        return pt.role != ROLE

    def figure_names(self, spec: TestSpec) -> set[str] | None:
        bases = {f"best_{MODES[m].direction}_" for m in own(spec).modes if m in MODES}
        return {b + e for b in bases for e in ("mb_s", DEVIATION)}

    def result(self, test: TestData) -> SweepResult | None:
        return sweep_of(test.plan, test.rounds)

    def figures(self, a: Analysed) -> list[Figure]:
        """The best combination of each direction, with every run's MB/s."""
        sweep = sweep_in(a)
        out: list[Figure] = []
        for direction in ("read", "write"):
            best = sweep.best.get(direction) if sweep is not None else None
            if best is None:
                continue
            c = best.cell
            detail = {"mode": c.mode, "buffer_size": c.buffer_size, "buffer_count": c.buffer_count}
            runs = repeatability(c.runs or (c.mb_s,))
            name = f"best_{direction}_mb_s"
            out.append(Figure(a.name, name, "MB/s", runs, detail, direction))
        return out

    def summary(self, a: Analysed) -> dict[str, Any] | None:
        # its cells: by mode, size and count, not by point key
        sweep = sweep_in(a)
        return {} if sweep is None else {"sweep": sweep.to_dict()}

    def summary_lines(self, a: Analysed) -> list[str]:
        sweep = sweep_in(a)
        return _summary_lines(sweep) if sweep is not None else []


def _summary_lines(sw: SweepResult) -> list[str]:
    """A bulk-I/O sweep for people: the best combination per direction and per mode,
    against one 128 KiB buffer (show --json has every cell)."""

    def best(label: str, b: Best) -> str:
        c = b.cell
        text = (
            f"  {label:<34} {_num(c.mb_s)} MB/s with {c.buffer_count} x "
            f"{format_size(c.buffer_size)}"
        )
        if b.gain_pct is not None and b.default is not None:
            text += f", {b.gain_pct:+.0f} % against 1 x 128k ({_num(b.default.mb_s)})"
        return text

    lines = [best(f"best {d} ({b.cell.mode})", b) for d, b in sw.best.items()]
    return lines + [best(m.mode, m.best) for m in sw.modes]


SWEEP = Sweep()
