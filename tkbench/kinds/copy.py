"""A copy test (``kind = "copy"`` in a volume profile; the bundled ``copy``, after the
copy benchmarks of AS SSD and NIOBench): how long the volume takes to copy sets of
files within itself (pure planning; :mod:`tkbench.kinds.copyrun` does the copying).

Three kinds of file set, each ``FILES`` files holding ``SIZE`` bytes in all:

=========  ====================================================================
``iso``    a few large files of equal size side by side (disc images)
``program``  many small files in nested folders, a few larger (an installed
           application: libraries, resources, a long tail of tiny files)
``game``   a mix: one file in ten large, holding most of the bytes, the others
           small, in a handful of folders
=========  ====================================================================

A set's layout (every file's path and size) follows from its kind, its count and
its size alone, so a resumed run copies the very same files.  Every set is written
once per data pattern (``zero``, ``random``, ``compressible-NN``) before the runs;
one round copies every set x pattern once (one point each), and the test runs
``repeat`` rounds.  The sources stay for all rounds, so the volume must hold all of
them plus the largest copy: a test that does not fit has every set shrunk by the
same factor (file counts kept), with a note, never below ``volume.min_file_size``
per set.
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tkbench.analysis.figure import DEVIATION, Figure
from tkbench.kinds.base import Context, KeyRules, TestKeys, TestType
from tkbench.kinds.results.copy import ROLE, TITLES, CopyRows, copies_in, copy_rows, is_copy
from tkbench.kinds.words import num, repeat_text
from tkbench.plan.model import PlannedTest, Point
from tkbench.profile.model import CopySet, FamilySpec, Mix, TestSpec, VolumeSpec
from tkbench.units import format_duration, format_size, human_bytes

if TYPE_CHECKING:
    from tkbench.kinds.results.analysed import Analysed
    from tkbench.rundir.records import TestPlan
    from tkbench.rundir.store import TestData

DIR = "copy"  # the test's directory in the run's working directory
BLOCK = 4096  # a file's allocation is counted in blocks of this size
# rates assumed by the estimate (bytes/s): the copy itself, and writing the sources
COPY_RATE = 200e6
CREATE_RATE = 400e6


@dataclass(frozen=True)
class CopySpec(FamilySpec):
    """A copy test's own keys: every file set x data pattern copied within the volume
    with read/write through one buffer."""

    sets: tuple[CopySet, ...]
    data_patterns: tuple[str, ...]
    copy_buffer: int = 1 << 20  # bytes of each read and write
    verify: bool = True  # compare every copy with its source after the timing


def own(spec: TestSpec) -> CopySpec:
    """A copy test's own keys."""
    if not isinstance(spec.family, CopySpec):
        raise TypeError(f"test {spec.name} is no copy test")
    return spec.family


@dataclass(frozen=True)
class Layout:
    """A file set on disk: its folders (created parents first) and its files
    (relative path, size in bytes)."""

    dirs: tuple[str, ...]
    files: tuple[tuple[str, int], ...]

    @property
    def size(self) -> int:
        return sum(n for _, n in self.files)

    @property
    def allocated(self) -> int:
        """Bytes the set takes on a filesystem of 4 KiB blocks, folders included."""
        blocks = sum(-(-n // BLOCK) for _, n in self.files) + len(self.dirs) + 1
        return blocks * BLOCK


def _split(total: int, weights: list[float]) -> list[int]:
    """``total`` bytes split in proportion to ``weights``, every share at least 1."""
    n = len(weights)
    spare = total - n
    scale = spare / math.fsum(weights)
    sizes = [1 + int(w * scale) for w in weights]
    sizes[max(range(n), key=lambda i: sizes[i])] += total - sum(sizes)
    return sizes


def _folders(rng: random.Random, count: int, depth: int) -> list[str]:
    """``count`` folders in a tree at most ``depth`` deep, parents before children."""
    out: list[str] = []
    levels: dict[str, int] = {}
    for i in range(count):
        parents = [d for d in out if levels[d] < depth]
        parent = rng.choice(parents) if parents and rng.random() < 0.7 else ""
        name = f"{parent}/d{i:03d}" if parent else f"d{i:03d}"
        levels[name] = levels.get(parent, 0) + 1
        out.append(name)
    return out


def layout(s: CopySet) -> Layout:
    """The files and folders of a set (deterministic: the same set, the same layout)."""
    rng = random.Random(f"tkbench-copy-{s.kind}-{s.files}")
    root = s.kind
    if s.kind == "iso":
        sizes = _split(s.size, [1.0] * s.files)
        files = tuple((f"{root}/image-{i + 1}.iso", n) for i, n in enumerate(sizes))
        return Layout((root,), files)
    if s.kind == "program":
        # sizes spread over four orders of magnitude: most files small, a few large
        weights = [math.exp(rng.uniform(0.0, math.log(10000.0))) for _ in range(s.files)]
        folders = _folders(rng, max(1, round(math.sqrt(s.files))), 4)
        suffixes: tuple[str, ...] = (".dll", ".so", ".dat", ".png", ".json", ".txt", ".bin")
    else:  # game: one file in ten holds most of the bytes
        weights = [
            rng.uniform(200.0, 1000.0) if i % 10 == 0 else rng.uniform(0.5, 5.0)
            for i in range(s.files)
        ]
        folders = _folders(rng, max(1, s.files // 20), 2)
        suffixes = (".pak", ".ogg", ".tex", ".cfg", ".lua")
    sizes = _split(s.size, weights)
    dirs = [root, *(f"{root}/{d}" for d in folders)]
    files = tuple(
        (f"{rng.choice(dirs)}/f{i:05d}{rng.choice(suffixes)}", n) for i, n in enumerate(sizes)
    )
    return Layout(tuple(dirs), files)


def needed(spec: TestSpec) -> int:
    """Bytes a copy test takes at most: every set once per data pattern, plus the
    largest copy."""
    cs = own(spec)
    sizes = [layout(s).allocated for s in cs.sets]
    return len(cs.data_patterns) * sum(sizes) + max(sizes)


def fit(spec: TestSpec, usable: int, free: int, vol: VolumeSpec) -> tuple[TestSpec, list[str]]:
    """A copy test fitted to ``usable`` bytes: unchanged, or every set shrunk by one
    factor (file counts kept) with a note.  Raises ValueError (one line, with the
    numbers) when it cannot be fitted."""
    cs = own(spec)
    want = needed(spec)
    if want <= usable:
        return spec, []
    shown = (
        f"test {spec.name} needs {human_bytes(want)} for its file sets "
        f"({len(cs.data_patterns)} data pattern(s) x "
        f"{human_bytes(sum(s.size for s in cs.sets))}, plus the largest copy), but only "
        f"{human_bytes(usable)} may be used ({human_bytes(free)} free, keeping "
        f"{human_bytes(free - usable)} free)"
    )
    if not vol.shrink:
        raise ValueError(f"{shown}; volume.shrink is off")
    factor = usable / want
    for _ in range(20):  # allocation rounds up: shrink a little further until it fits
        sets = tuple(
            dataclasses.replace(s, size=max(s.files, int(s.size * factor))) for s in cs.sets
        )
        fitted = dataclasses.replace(spec, family=dataclasses.replace(own(spec), sets=sets))
        if needed(fitted) <= usable:
            break
        factor *= 0.95
    else:
        raise ValueError(shown)
    small = [s for s in sets if s.size < vol.min_file_size]
    if small:
        raise ValueError(
            f"{shown}; shrunk to fit, set {small[0].kind} would hold "
            f"{human_bytes(small[0].size)}, less than volume.min_file_size "
            f"({human_bytes(vol.min_file_size)})"
        )
    note = f"file sets shrunk to fit the volume ({human_bytes(free)} free): " + ", ".join(
        f"{a.kind} {human_bytes(a.size)} -> {human_bytes(b.size)}"
        for a, b in zip(cs.sets, sets, strict=True)
    )
    return fitted, [note]


def copy_seconds(s: CopySet, verify: bool) -> float:
    """The estimate of one copy (and its check) at :data:`COPY_RATE`."""
    return s.size * (2.0 if verify else 1.0) / COPY_RATE


def points(spec: TestSpec) -> tuple[Point, ...]:
    """One point per file set x data pattern, set by set."""
    cs = own(spec)
    out: list[Point] = []
    for s in cs.sets:
        for data in cs.data_patterns:
            out.append(
                Point(
                    index=len(out),
                    bs=cs.copy_buffer,
                    mix=Mix(50),
                    pattern="sequential",
                    numjobs=1,
                    iodepth=1,
                    runtime=copy_seconds(s, cs.verify),
                    role=ROLE,
                    tag=f"{s.kind} {data}",
                    copy_set=s.kind,
                    data=data,
                    files=s.files,
                    size=s.size,
                )
            )
    return tuple(out)


def planned_test(spec: TestSpec, notes: tuple[str, ...] = ()) -> PlannedTest:
    sources = len(own(spec).data_patterns) * sum(s.size for s in own(spec).sets)
    more = list(notes)
    if own(spec).verify:
        more.append("every copy is read back and compared with its source after its timing")
    if spec.drop_caches:
        more.append(
            "before every copy the kernel's page, dentry and inode caches are dropped "
            "(drop_caches), for the whole system"
        )
    return PlannedTest.on_own_files(
        spec, points(spec), sources, tuple(more), setup_seconds=sources / CREATE_RATE
    )


def describe(test: PlannedTest) -> list[str]:
    """The copy test's lines of ``tkbench plan``."""
    spec = test.spec
    cs = own(spec)
    lines = [
        f"  copy      each set x data pattern ({', '.join(cs.data_patterns)}) copied within "
        f"the volume, read()/write() through one {format_size(cs.copy_buffer)} buffer",
        "            (never a reflink, sendfile or copy offload), timed until every copied "
        "file and folder is fsynced",
        "            before each copy the sources' cached pages are dropped (posix_fadvise)"
        + ("; then the kernel's caches (drop_caches)" if spec.drop_caches else ""),
    ]
    for s in cs.sets:
        lay = layout(s)
        lines.append(
            f"    {s.kind:<8} {s.files} file(s) in {len(lay.dirs)} folder(s), "
            f"{human_bytes(s.size)}: {TITLES[s.kind]}"
        )
    if cs.verify:
        lines.append("  verify    every copy read back and compared with its source (not timed)")
    lines.append(
        f"  sources   {human_bytes(test.active_bytes)} written before the first run, kept for "
        f"all {spec.repeat} run(s); the copy is removed after each run"
    )
    lines.append(
        f"  estimate  at an assumed {COPY_RATE / 1e6:.0f} MB/s copying and "
        f"{CREATE_RATE / 1e6:.0f} MB/s writing the sources: "
        f"{format_duration(test.setup_seconds + spec.repeat * test.round_seconds)}"
    )
    return lines


class Copy(TestType):
    """A copy test: file sets copied within a volume by read() and write(), not fio
    (the engine runs :mod:`.copyrun` in place of fio's rounds)."""

    name = "copy"
    family = CopySpec
    report_part = "copy"  # tkbench.report.parts
    runs_fio = False
    addresses_target = False  # its sources and copies, not the ActiveRange
    takes_cache = False  # its sources start cold, its copies go through the page cache
    no_cache_why = "a copy test does not take a cache state"
    rules = KeyRules(
        marker="kind",
        marker_value="copy",
        own=("sets", "data_patterns"),
        own_why='belongs to a copy test (kind = "copy")',
        scope="volume",
        scope_why='a copy test is a volume benchmark (scope = "volume")',
        needs=("sets",),
        needs_why="a copy test needs its file sets",
        foreign=("block_sizes", "mixes", "file_size", "modes", "procedure", "bssplit", "zones"),
        foreign_why="does not apply to a copy test",
    )

    def fill_keys(self, k: TestKeys) -> None:
        """Its file sets, one of each kind, and data patterns; its one point per set x
        pattern reads and writes ``copy_buffer`` bytes at a time, one file after
        another (block size: the buffer; mix: 50/50, every byte read once and written
        once)."""
        t = k.values
        kinds = [s.kind for s in t["sets"]]
        if len(set(kinds)) != len(kinds):
            raise k.refuse("sets", "each kind of file set at most once")
        t["data_patterns"] = t["data_patterns"] or ("zero", "random")
        t["block_sizes"] = (t["copy_buffer"],)
        t["mixes"] = (Mix(50),)
        t["pattern"] = "sequential"
        # one file at a time through one buffer, through the page cache
        k.workload.update(numjobs=1, iodepth=1, direct=False)
        k.family = CopySpec(t["sets"], t["data_patterns"], t["copy_buffer"], t["verify"])

    def cache_states(self, plan: TestPlan) -> list[str]:
        return []  # its executor handles the cache (tkbench.kinds.copyrun)

    def stored(self, plan: TestPlan) -> bool:
        return is_copy(plan)

    def expand(self, spec: TestSpec, ctx: Context) -> tuple[list[PlannedTest], list[str]]:
        return [planned_test(spec, ctx.notes)], []

    def fit_volume(
        self, spec: TestSpec, usable: int, free: int, vol: VolumeSpec
    ) -> tuple[TestSpec, list[str]] | None:
        return fit(spec, usable, free, vol)  # its sources and one copy, not files per job

    def describe(self, t: PlannedTest) -> list[str] | None:
        return describe(t)

    def figure_names(self, spec: TestSpec) -> set[str] | None:
        bases = {f"{s.kind}.{d}." for s in own(spec).sets for d in own(spec).data_patterns}
        return {b + e for b in bases for e in ("mb_s", DEVIATION)}

    def result(self, test: TestData) -> CopyRows | None:
        rows = copy_rows(test.plan, test.rounds)
        return None if rows is None else CopyRows(tuple(rows))

    def figures(self, a: Analysed) -> list[Figure]:
        """MB/s per file set and data pattern, with every run's."""
        return [
            Figure(a.name, f"{row.copy_set}.{row.data}.mb_s", "MB/s", row.mb_s)
            for row in copies_in(a) or ()
        ]

    def summary(self, a: Analysed) -> dict[str, Any] | None:
        # by file set and data pattern: MB/s and seconds per run
        rows = copies_in(a)
        return {} if rows is None else {"copies": [c.to_dict() for c in rows]}

    def summary_lines(self, a: Analysed) -> list[str]:
        lines = []
        for c in copies_in(a) or ():
            lines.append(f"  {c.copy_set + ' ' + c.data:<16} {repeat_text('MB/s', c.mb_s)}")
            lines.append(f"  {'':<16} seconds per copy: mean {num(c.seconds.mean)}")
        return lines


COPY = Copy()
