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
from typing import TYPE_CHECKING, Any

from tkbench.analysis.figure import DEVIATION, Figure
from tkbench.analysis.repeat import repeatability
from tkbench.kinds.base import Context, KeyRules, TestKeys, TestType
from tkbench.kinds.results.vfile import (
    OPERATIONS,
    ROLE,
    VfileResult,
    is_vfile,
    vfile_in,
    vfile_of,
)
from tkbench.kinds.words import num as _num
from tkbench.plan.model import PlannedTest, Point
from tkbench.profile.model import VFILE_OPERATIONS, FamilySpec, Mix, TestSpec
from tkbench.units import format_duration, format_size, human_bytes

if TYPE_CHECKING:
    from tkbench.kinds.results.analysed import Analysed
    from tkbench.rundir.records import TestPlan
    from tkbench.rundir.store import TestData

FILE = "vfile.db"  # the database file, in the run's working directory

assert tuple(OPERATIONS) == VFILE_OPERATIONS


@dataclass(frozen=True)
class VfileSpec(FamilySpec):
    """A virtual-file test's own keys: a database file of ``nodes`` nodes of
    ``node_size`` bytes, read and written in pages (the test's block size) by every
    operation x thread count x cache state."""

    nodes: int
    node_size: int = 512
    operations: tuple[str, ...] = ()
    thread_counts: tuple[int, ...] = ()
    caches: tuple[str, ...] = ()


def own(spec: TestSpec) -> VfileSpec:
    """A virtual-file test's own keys."""
    if not isinstance(spec.family, VfileSpec):
        raise TypeError(f"test {spec.name} is no virtual-file test")
    return spec.family


def points(spec: TestSpec) -> tuple[Point, ...]:
    """Every operation (the profile's order) x thread count x cache state."""
    vf = own(spec)
    out: list[Point] = []
    for name in vf.operations:
        op = OPERATIONS[name]
        for threads in vf.thread_counts:
            for state in vf.caches:
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
    return PlannedTest.on_own_files(
        spec,
        points(spec),
        active,
        notes,
        node_size=own(spec).node_size,
        stonewall=True,  # points of up to 128 threads each: tkbench.fio.jobfile.render_round
    )


def describe(test: PlannedTest) -> list[str]:
    """The virtual file's lines of ``tkbench plan`` (its points follow, one a line)."""
    spec = test.spec
    vf = own(spec)
    nodes = test.active_bytes // vf.node_size
    states = " and ".join(vf.caches)
    lines = [
        f"  vfile     {nodes:,} nodes x {human_bytes(vf.node_size)} in one file, {FILE} "
        f"({human_bytes(test.active_bytes)}), pages of {format_size(spec.block_sizes[0])}",
        f"            {len(vf.operations)} operation(s) x thread counts "
        f"{', '.join(map(str, vf.thread_counts))} (fio jobs sharing the file) x {states} "
        f"cache: {len(test.points)} point(s), {format_duration(spec.point_runtime)} each",
        "            writes "
        + ("write-through (O_SYNC)" if spec.sync else "through the page cache (no sync)")
        + "; results in nodes/s (bytes/s / node size) and MB/s",
    ]
    return lines


class Vfile(TestType):
    """A virtual-file test: its cells are operation x threads x cache state on one
    shared database file."""

    name = "vfile"
    family = VfileSpec
    report_part = "vfile"  # tkbench.report.parts
    files_per_job = False
    own_tables = True
    loads_per_point = True
    rules = KeyRules(
        marker="nodes",
        own=("node_size", "page_size", "operations", "thread_counts", "caches"),
        own_why="belongs to a virtual-file test: set nodes too",
        scope="volume",
        scope_why='a virtual-file test is a volume benchmark (scope = "volume")',
        conflicts=("procedure", "bssplit", "zones", "modes"),
        conflict_kinds=("copy",),
        conflicts_why=(
            "a virtual-file test has no procedure, bssplit, zones or modes and is no copy test"
        ),
        foreign=("block_sizes", "mixes", "file_size", "cache"),
        foreign_why=(
            "a virtual-file test sets it from nodes, node_size, page_size, operations and caches"
        ),
    )

    def fill_keys(self, k: TestKeys) -> None:
        """One database file of nodes x node size, its pages read and written by every
        operation x thread count x cache state; the file size, block size and mixes
        follow from its keys."""
        t = k.values
        size = t["nodes"] * t["node_size"]
        need = t["page_size"] * max(t["thread_counts"])
        if size < need:
            raise k.refuse(
                "nodes",
                f"{t['nodes']} x {format_size(t['node_size'])} = {format_size(size)} is smaller "
                f"than a page ({format_size(t['page_size'])}) for each of "
                f"{max(t['thread_counts'])} threads",
            )
        t["file_size"] = size
        t["block_sizes"] = (t["page_size"],)
        k.workload["numjobs"] = max(t["thread_counts"])  # the most at once (each point its own)
        reads = [op.endswith("-read") for op in t["operations"]]
        t["mixes"] = tuple(Mix(r) for r in (100, 0) if (r == 100) in reads)
        k.family = VfileSpec(
            t["nodes"], t["node_size"], t["operations"], t["thread_counts"], t["caches"]
        )

    def leave_keys(self, k: TestKeys) -> None:
        # its keys' defaults are a virtual file's: another test has no cache states
        k.values["operations"] = k.values["thread_counts"] = k.values["caches"] = ()

    def stored(self, plan: TestPlan) -> bool:
        return is_vfile(plan)

    def expand(self, spec: TestSpec, ctx: Context) -> tuple[list[PlannedTest], list[str]]:
        return [planned_test(spec, ctx.active, ctx.notes)], []

    def load_words(self, t: PlannedTest) -> tuple[str, str]:
        # each point its own thread count
        return "/".join(map(str, own(t.spec).thread_counts)), f"{t.spec.workload.iodepth}"

    def detail_lines(self, t: PlannedTest) -> list[str]:
        return describe(t)

    def figure_names(self, spec: TestSpec) -> set[str] | None:
        caches = own(spec).caches or (spec.cache,)
        bases = {
            f"{op}.{n}.{c}."
            for op in own(spec).operations
            for n in own(spec).thread_counts
            for c in caches
        }
        return {b + e for b in bases for e in ("nodes_s", DEVIATION)}

    def result(self, test: TestData) -> VfileResult | None:
        return vfile_of(test.plan, test.rounds)

    def figures(self, a: Analysed) -> list[Figure]:
        """nodes/s per operation, threads and cache state, with every run's."""
        vfile = vfile_in(a)
        out: list[Figure] = []
        for cell in vfile.cells if vfile is not None else ():
            runs = repeatability([b / cell.node_size for b in cell.runs])
            name = f"{cell.operation}.{cell.threads}.{cell.cache}.nodes_s"
            direction = OPERATIONS[cell.operation].direction
            out.append(Figure(a.name, name, "nodes/s", runs, direction=direction))
        return out

    def summary(self, a: Analysed) -> dict[str, Any] | None:
        # its cells: by operation, threads and cache state
        vfile = vfile_in(a)
        return {} if vfile is None else {"vfile": vfile.to_dict()}

    def summary_lines(self, a: Analysed) -> list[str]:
        vfile = vfile_in(a)
        return _summary_lines(vfile) if vfile is not None else []


def _summary_lines(vf: VfileResult) -> list[str]:
    """A virtual-file test for people: nodes/s (and MB/s) per operation and thread
    count, cold (min) and warm (max)."""
    lines = [
        f"  {vf.nodes:,} nodes of {vf.node_size} bytes, pages of "
        f"{format_size(vf.page_size)}; nodes/s (MB/s)"
    ]
    for r in vf.rows:
        cells = [
            f"{state} {_num(c.nodes_s)} ({_num(c.mb_s)})"
            for state in ("cold", "warm")
            if (c := r.cells.get(state)) is not None
        ]
        lines.append(f"  {r.title + ', ' + str(r.threads) + ' thr.':<30} " + "; ".join(cells))
    return lines


VFILE = Vfile()
