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

from .planned import PlannedTest, Point
from .profile import SWEEP_MODES, Mix, TestSpec
from .units import format_duration, format_size, human_bytes

FILE = "bulk-sweep.dat"  # the test file, in the run's working directory
ROLE = "sweep"


@dataclass(frozen=True)
class Mode:
    name: str
    title: str
    read: bool
    direct: bool
    fadvise: str  # fio fadvise_hint

    @property
    def direction(self) -> str:
        return "read" if self.read else "write"


MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode("unbuffered-read", "Unbuffered read", True, True, "0"),
        Mode("unbuffered-write", "Unbuffered write", False, True, "0"),
        Mode("unbuffered-seq-read", "Unbuffered sequential read", True, True, "sequential"),
        Mode("unbuffered-seq-write", "Unbuffered sequential write", False, True, "sequential"),
        Mode("buffered-seq-read", "Buffered sequential read", True, False, "sequential"),
    )
}
assert tuple(MODES) == SWEEP_MODES


def mode_of(label: str) -> Mode:
    """The mode of a stored sweep point, from its label (``"128k 100/0 x4 MODE"``)."""
    name = label.rsplit(" ", 1)[-1]
    try:
        return MODES[name]
    except KeyError:
        raise ValueError(f"sweep point {label!r} names no mode") from None


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
    run, _ = combinations(spec.block_sizes, spec.buffer_counts, spec.max_buffer_space)
    out: list[Point] = []
    for name in spec.modes:
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
    _, skipped = combinations(spec.block_sizes, spec.buffer_counts, spec.max_buffer_space)
    more = list(notes)
    if skipped:
        more.append(
            f"{len(skipped)} buffer size x count combination(s) skipped, their buffers taking "
            f"more than {format_size(spec.max_buffer_space)}: "
            + ", ".join(f"{format_size(s)} x {c}" for s, c in skipped)
        )
    return PlannedTest.on_own_files(spec, points(spec, spec.workload.direct), active, tuple(more))


def describe(test: PlannedTest) -> list[str]:
    """The sweep's lines of ``tkbench plan`` (instead of one line per point)."""
    spec = test.spec
    run, _ = combinations(spec.block_sizes, spec.buffer_counts, spec.max_buffer_space)
    lines = [
        f"  sweep     buffer sizes {', '.join(format_size(b) for b in spec.block_sizes)}",
        f"            x buffer counts (I/Os in flight) {', '.join(map(str, spec.buffer_counts))}"
        f": {len(run)} combination(s) within {format_size(spec.max_buffer_space)} of buffers",
        f"            x {len(spec.modes)} mode(s), {format_duration(spec.point_runtime)} each, "
        f"front to back through {FILE} ({human_bytes(test.active_bytes)}), no page of it "
        "cached at each start",
    ]
    for name in spec.modes:
        m = MODES[name]
        how = "O_DIRECT" if m.direct else "through the page cache"
        hint = "sequential-access hint" if m.fadvise == "sequential" else "no access hint"
        lines.append(f"    {name:<22} {m.direction}s, {how}, {hint}")
    return lines
