"""A virtual-file test (``nodes`` in a volume profile's test; the bundled ``vfile``,
after the CloudGraph Virtual File benchmark): how many nodes per second a database
kept in one file on this volume reads and writes (pure planning).

The database is one file of ``nodes`` x ``node_size`` bytes (the test's
``file_size``), read and written in pages (``page_size``, the test's block size) by
every operation x thread count x cache state, each one point of one round:

=================  ===========  ========================================================
operation          fio ``rw``   what the threads do
=================  ===========  ========================================================
random-write       randwrite    write pages anywhere in the file
random-read        randread     read pages anywhere in the file
sequential-write   write        write the file front to back, each thread its own slice
sequential-read    read         read the file front to back, each thread its own slice
=================  ===========  ========================================================

The threads are fio jobs (``numjobs``) sharing the one file (the same ``filename``):
one thread is a single client, many threads a busy server.  With several threads
each walks its own contiguous slice (``offset_increment``), so the device sees as
many interleaved streams as there are threads: "sequential" is sequential per
thread, not at the device.  Writes are write-through when the test says so
(``sync = true``: O_SYNC).  The cache states (tkbench.cache) give the minimum (cold:
a server starting; one pass over the file, every page once, so every page touched
is a miss -- ``Point.once``) and the maximum (warm: a server running with the file
cached, for the test's time).
fio lays the file out with the profile's data once, before the first point
(``overwrite``), and it stays for every point of every round.
"""

from __future__ import annotations

from dataclasses import dataclass

from .planned import PlannedTest, Point
from .profile import VFILE_OPERATIONS, Mix, TestSpec
from .units import format_duration, format_size, human_bytes

FILE = "vfile.db"  # the database file, in the run's working directory
ROLE = "vfile"


@dataclass(frozen=True)
class Operation:
    name: str
    title: str
    read: bool
    pattern: str  # random | sequential

    @property
    def direction(self) -> str:
        return "read" if self.read else "write"


OPERATIONS: dict[str, Operation] = {
    o.name: o
    for o in (
        Operation("random-write", "Random write", False, "random"),
        Operation("random-read", "Random read", True, "random"),
        Operation("sequential-write", "Sequential write", False, "sequential"),
        Operation("sequential-read", "Sequential read", True, "sequential"),
    )
}
assert tuple(OPERATIONS) == VFILE_OPERATIONS


def operation_of(pattern: str, read_pct: int) -> Operation:
    """The operation of a stored point, from its pattern and mix."""
    for o in OPERATIONS.values():
        if o.pattern == pattern and (read_pct == 100) == o.read:
            return o
    raise ValueError(f"no virtual-file operation is {pattern} {read_pct}/{100 - read_pct}")


def points(spec: TestSpec) -> tuple[Point, ...]:
    """Every operation (the profile's order) x thread count x cache state."""
    out: list[Point] = []
    for name in spec.operations:
        op = OPERATIONS[name]
        for threads in spec.thread_counts:
            for state in spec.caches:
                out.append(
                    Point(
                        index=len(out),
                        bs=spec.block_sizes[0],
                        mix=Mix(100 if op.read else 0),
                        pattern=op.pattern,
                        numjobs=threads,
                        iodepth=spec.workload.iodepth,
                        runtime=spec.point_runtime,
                        role=ROLE,
                        tag=f"{name} x{threads} {state}",
                        file=FILE,
                        cache=state,
                        # cold: a server starting, every page it touches a miss
                        once=state == "cold",
                    )
                )
    return tuple(out)


def planned_test(spec: TestSpec, active: int, notes: tuple[str, ...] = ()) -> PlannedTest:
    """A virtual-file test: one round (per ``repeat``) of every point on one
    ``active``-byte database file."""
    return PlannedTest.on_own_files(spec, points(spec), active, notes)


def describe(test: PlannedTest) -> list[str]:
    """The virtual file's lines of ``tkbench plan`` (its points follow, one a line)."""
    spec = test.spec
    nodes = test.active_bytes // spec.node_size
    states = " and ".join(spec.caches)
    lines = [
        f"  vfile     {nodes:,} nodes x {human_bytes(spec.node_size)} in one file, {FILE} "
        f"({human_bytes(test.active_bytes)}), pages of {format_size(spec.block_sizes[0])}",
        f"            {len(spec.operations)} operation(s) x thread counts "
        f"{', '.join(map(str, spec.thread_counts))} (fio jobs sharing the file) x {states} "
        f"cache: {len(test.points)} point(s), {format_duration(spec.point_runtime)} each",
        "            writes "
        + ("write-through (O_SYNC)" if spec.sync else "through the page cache (no sync)")
        + "; results in nodes/s (bytes/s / node size) and MB/s",
    ]
    return lines
