"""The virtual-file test's part of a test chapter (tkbench.kinds.vfile): nodes per second
and MB/s per operation and thread count, the cold cache as the minimum and the warm
as the maximum, laid out as CloudGraph publishes its Virtual File results.

:func:`vfile_report` turns :mod:`tkbench.kinds.results.vfile`'s result into what the
template ``vfile.html.j2`` shows."""

from __future__ import annotations

from dataclasses import dataclass

from tkbench.kinds.results.analysed import Analysed
from tkbench.kinds.results.vfile import Cell, Row, VfileResult, is_vfile, vfile_in
from tkbench.report.fmt import sig
from tkbench.units import format_size

__all__ = ["VfileReport", "VfileRow", "is_vfile", "vfile_report"]


@dataclass(frozen=True)
class VfileRow:
    operation: str  # "Random read"
    threads: int
    min_nodes_s: float | None  # cold cache (None: not run)
    max_nodes_s: float | None  # warm cache
    min_mb_s: float | None
    max_mb_s: float | None


@dataclass(frozen=True)
class VfileReport:
    rows: tuple[VfileRow, ...]
    sentence: str  # the chapter's verdict in a customer's words
    database: str  # what the database file was
    writes: str  # how the writes reached the device
    many_threads: int  # the largest thread count (its "sequential" is not sequential)


def _value(c: Cell | None, what: str) -> float | None:
    if c is None:
        return None
    return c.nodes_s if what == "nodes" else c.mb_s


def _range(r: Row) -> str:
    lo, hi = r.min, r.max
    if lo is not None and hi is not None:
        return f"{sig(lo.nodes_s, 3)} (cold) to {sig(hi.nodes_s, 3)} (warm)"
    c = lo or hi
    assert c is not None
    return f"{sig(c.nodes_s, 3)} ({c.cache})"


def model(vf: VfileResult) -> VfileReport:
    rows = tuple(
        VfileRow(
            operation=r.title,
            threads=r.threads,
            min_nodes_s=_value(r.min, "nodes"),
            max_nodes_s=_value(r.max, "nodes"),
            min_mb_s=_value(r.min, "mb"),
            max_mb_s=_value(r.max, "mb"),
        )
        for r in vf.rows
    )
    parts = []
    for threads in dict.fromkeys(r.threads for r in vf.rows):
        said = [
            f"{r.title.lower()}s {_range(r)}"
            for r in vf.rows
            if r.threads == threads and r.operation in ("random-read", "random-write")
        ]
        if said:
            parts.append(f"with {threads} thread{'s' if threads != 1 else ''}, " + ", ".join(said))
    sentence = ""
    if parts:
        sentence = (
            f"A database of {vf.nodes:,} nodes in one file on this volume: "
            + "; ".join(parts)
            + " nodes per second."
        )
    database = (
        f"{vf.nodes:,} nodes of {vf.node_size:,} bytes in one file "
        f"({sig(vf.file_bytes / 1e6)} MB), read and written in pages of "
        f"{format_size(vf.page_size)}"
    )
    writes = (
        "write-through: every write opens the file O_SYNC, so a write returns only once its "
        "page is on the device"
        if vf.write_through
        else "through the page cache, without a sync: the device may receive them later"
    )
    return VfileReport(rows, sentence, database, writes, max(r.threads for r in vf.rows))


def vfile_report(a: Analysed) -> VfileReport | None:
    """The virtual-file part of a test's chapter (None: no such test, or no round)."""
    vf = vfile_in(a)
    return None if vf is None else model(vf)
