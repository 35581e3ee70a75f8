"""``tkbench capture``: record a block device's I/O into a workload file, and
``tkbench capture show FILE``: print one.  The work is done by :mod:`tkbench.workload`,
which the two commands import when they run (it reads traces with numpy, which
``--help`` and the other commands need not load)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tkbench.cli.options import Parser, path_arg, text_arg
from tkbench.cli.support import SESSION, info, say, warn
from tkbench.cli.terminal import printable
from tkbench.errors import InputError
from tkbench.outputs.files import check_output
from tkbench.units import format_duration, format_size, human_bytes

if TYPE_CHECKING:
    from tkbench.workload.capture import Progress
    from tkbench.workload.tkw import Workload

# the JSON of ``capture show --json``; a new key is no new version, a changed one is
SHOW_SCHEMA = 1
STREAM_KEYS = ("rw", "bs", "pattern", "share_ios", "share_bytes", "ios", "bytes")
BAR_WIDTH = 30


def register(sub: Any) -> None:
    p = sub.add_parser(
        "capture",
        help="record a block device's I/O with blktrace into a workload file (.tkw); "
        "'capture show FILE' prints one",
        description="Records the block I/O of DEV for the given time with blktrace (root; "
        "mounts debugfs if needed) and writes a workload file: offsets, sizes, directions "
        "and times of every I/O (never data) and their reduction: I/O streams with their "
        "shares, read percentage, IOPS and MB/s over time, queue depth, inter-arrival "
        "times, LBA heat.  'tkbench capture show FILE' prints it.  See docs/replay.md.",
    )
    p.add_argument("--device", type=text_arg, metavar="DEV", help="the block device to trace")
    p.add_argument(
        "--duration", type=text_arg, metavar="D", help="how long: 30s, 10m, 1h (whole seconds)"
    )
    p.add_argument(
        "--out",
        type=path_arg,
        metavar="FILE.tkw",
        help="the workload file to write (a new file, or your own to replace)",
    )
    p.set_defaults(func=cmd_capture)
    actions = p.add_subparsers(dest="capture_action", metavar="[ACTION]", parser_class=Parser)
    q = actions.add_parser(
        "show",
        help="print a workload file: its streams, mix, rates, queue depth and LBA heat",
        description="Prints the reduction of a workload file made by 'tkbench capture'.  "
        "--json gives it whole: streams [{rw, bs, pattern, share_ios, share_bytes, ios, "
        "bytes}] (shares in percent of the reads' and writes' I/Os and bytes), read_pct, "
        "random_pct, iops, mbps, capacity_bytes, queue_depth, interarrival_us, latency_us, "
        "heat, timeline, with a schema version.",
    )
    q.add_argument("file", type=path_arg, metavar="FILE.tkw")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=cmd_capture_show)


def cmd_capture(args: argparse.Namespace) -> int:
    missing = [f"--{k}" for k in ("device", "duration", "out") if getattr(args, k) is None]
    if missing:
        raise InputError(f"capture needs {', '.join(missing)} (or: tkbench capture show FILE)")
    from tkbench.workload import capture as capturemod
    from tkbench.workload import tkw

    dev = capturemod.device(args.device)
    seconds = capturemod.duration(args.duration)
    out: Path = args.out
    check_output(out, tkw.WHAT)
    info(f"capturing the block I/O of {dev.path} for {format_duration(seconds)}")
    with _bar(seconds) as progress:
        workload = capturemod.capture(dev.path, seconds, progress)
    tkw.write(out, workload)
    red = workload.reduction
    dropped = workload.info.dropped_events
    if dropped:
        warn(f"blktrace dropped {dropped} events: the trace misses some I/Os")
    if not red.ios:
        warn(f"no reads or writes on {dev.path} during the capture")
    info(
        f"workload: {out} ({red.ios:,} I/Os, {red.read_pct:.1f} % reads, "
        f"{red.iops:,.1f} IOPS, {len(red.streams)} streams)"
    )
    return 0


@contextlib.contextmanager
def _bar(seconds: float) -> Iterator[Progress | None]:
    """A progress bar redrawn in place on a terminal (none under -q or elsewhere)."""
    if SESSION.quiet or not sys.stderr.isatty() or os.environ.get("TERM") == "dumb":
        yield None
        return

    def progress(elapsed: float, total: float, traced: int) -> None:
        done = min(1.0, elapsed / total) if total else 1.0
        filled = round(BAR_WIDTH * done)
        sys.stderr.write(
            f"\rcapture [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {100 * done:3.0f} %  "
            f"{format_duration(max(0.0, total - elapsed))} left, trace {human_bytes(traced)}\x1b[K"
        )
        sys.stderr.flush()

    try:
        yield progress
    finally:
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()


def show_json(workload: Workload, path: Path) -> dict[str, Any]:
    """The document of ``capture show --json``."""
    red = workload.header["reduction"]  # as the file holds it
    head = workload.info
    return {
        "schema": SHOW_SCHEMA,
        "file": str(path),
        "format": head.format,
        "device": workload.header["device"],  # as the file holds it
        "captured_at": head.captured_at,
        "duration_s": head.duration_s,
        "dropped_events": head.dropped_events,
        **red,
        "streams": [{k: s[k] for k in STREAM_KEYS} for s in red["streams"]],
    }


def cmd_capture_show(args: argparse.Namespace) -> int:
    from tkbench.workload import tkw

    workload = tkw.load(args.file)
    if args.json:
        print(json.dumps(show_json(workload, args.file), indent=1))
        return 0
    say(format_workload(workload))
    return 0


def format_workload(workload: Workload) -> str:
    red = workload.reduction
    dev = workload.info.device
    qd, gap = red.queue_depth, red.interarrival_us
    lines = [
        f"device      {printable(dev.path or 'None')} "
        f"({human_bytes(dev.capacity_bytes)}), captured "
        f"{printable(str(workload.info.captured_at))} for "
        f"{format_duration(red.duration_s)}",
        f"I/Os        {red.ios:,} ({human_bytes(red.bytes)}); {red.trims:,} trims",
        f"mix         {red.read_pct:.1f} % reads ({red.read_bytes_pct:.1f} % of bytes), "
        f"{red.random_pct:.1f} % random",
        f"rate        {red.iops:,.1f} IOPS, {red.mbps:,.2f} MB/s",
    ]
    if qd.samples:
        lines.append(f"queue depth mean {qd.mean:g}, p99 {qd.p99:g}, max {qd.max:g}")
    if gap.samples:
        lines.append(f"inter-arrival p50 {gap.p50:g} us, p99 {gap.p99:g} us")
    lines.append(f"LBA heat    {_heat_line(red.heat)}")
    lines += ["", f"{'stream':<24}{'% I/Os':>9}{'% bytes':>9}{'I/Os':>12}"]
    for s in red.streams:
        name = f"{s.rw} {format_size(s.bs)} {s.pattern}"
        lines.append(f"{name:<24}{s.share_ios:>9.2f}{s.share_bytes:>9.2f}{s.ios:>12,}")
    return "\n".join(lines)


def _heat_line(heat: Sequence[int]) -> str:
    total = sum(heat)
    if not total:
        return "no reads or writes"
    top = sorted(heat, reverse=True)[: max(1, len(heat) // 10)]
    return f"the hottest 10 % of the capacity holds {100 * sum(top) / total:.1f} % of the I/Os"
