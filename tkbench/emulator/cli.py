"""``tkbench emulate`` / ``python -m tkbench.emulator``: serve an emulated SSD over NBD.

:func:`register` adds the ``emulate`` subcommand to a subparsers object;
:func:`run_emulator` is its handler; :func:`main` is the stand-alone entry point.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any, NoReturn

from tkbench.emulator.launcher import DEFAULT_READY_TIMEOUT, DEFAULT_THREADS, Emulator
from tkbench.emulator.ssdmodel import EmulatorConfig, format_size, format_value
from tkbench.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    DeviceError,
    InputError,
    TkbenchError,
)

DESCRIPTION = """\
Serve an emulated SSD over NBD on a Unix socket, in the foreground, until
interrupted (Ctrl-C, SIGINT or SIGTERM stop it and remove the socket).  fio
reaches it with ioengine=nbd and uri=nbd+unix:///?socket=PATH; tkbench with the
target nbd+unix:///?socket=PATH.  One line on stderr says when it is ready.  The
export is named by the emulated drive (tkbench-emu-256MiB-s1: its capacity and
seed, and a digest of other model options), and tkbench records that name as the
drive's serial.

The drive is fast when fresh, slows down under sustained random writes as
garbage collection sets in, recovers partly when idle, and is fresh again after
a trim of its whole range (a purge).  Needs the Debian packages nbdkit and
nbdkit-plugin-python.  docs/emulator.md describes the model and every option."""

EPILOG = """\
example:
  python -m tkbench.emulator --socket /tmp/ssd.sock --capacity 256M --seed 1 &
  fio --name=w --ioengine=nbd --uri='nbd+unix:///?socket=/tmp/ssd.sock' \\
      --rw=randwrite --bs=4k --iodepth=8 --numjobs=2 --runtime=10 --time_based
  kill %1"""

_GROUPS = {
    "model": "drive model",
    "data": "data",
    "fault": "fault injection (clocks start at the first client connection)",
}


class _OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line (no usage dump), exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """All options of the emulator; values stay strings, checked by run_emulator."""
    server = parser.add_argument_group("server")
    server.add_argument(
        "--socket",
        required=True,
        metavar="PATH",
        help="Unix socket to serve on (created; removed on exit; a stale one is replaced)",
    )
    server.add_argument(
        "--threads",
        type=int,
        default=DEFAULT_THREADS,
        metavar="N",
        help=f"nbdkit threads per connection, i.e. requests in flight (default {DEFAULT_THREADS})",
    )
    server.add_argument(
        "--ready-timeout",
        type=float,
        default=DEFAULT_READY_TIMEOUT,
        metavar="SECONDS",
        help="give up if nbdkit is not serving after this long "
        f"(default {DEFAULT_READY_TIMEOUT:g})",
    )
    server.add_argument(
        "--verbose", action="store_true", help="nbdkit debug messages (model summary at exit)"
    )
    groups = {key: parser.add_argument_group(title) for key, title in _GROUPS.items()}
    for f in EmulatorConfig.option_fields():
        meta = f.metadata
        help_text = str(meta["help"]).replace("%", "%%")
        if meta["kind"] == "bool":
            # store_data is the only boolean: on by default, --no-data turns it off
            groups[meta["group"]].add_argument(
                "--no-data",
                dest=f.name,
                action="store_const",
                const="0",
                default=None,
                help="discard written data and read zeros, for capacities larger than "
                "memory (default: keep it, so reads return what was written; memory "
                "grows with the data written)",
            )
            continue
        default = "off" if f.default is None else _show(f.default, meta["kind"])
        groups[meta["group"]].add_argument(
            _flag(f.name),
            dest=f.name,
            default=None,
            metavar=meta["metavar"] or _metavar(meta["kind"]),
            help=f"{help_text} (default {default})",
        )


def _show(value: Any, kind: str) -> str:
    if kind == "size":
        return format_size(int(value)).replace(" ", "")
    return format_value(value)


def _metavar(kind: str) -> str:
    return {"int": "N", "size": "SIZE"}.get(kind, "X")


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``emulate`` subcommand to an argparse subparsers object."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "emulate",
        help="serve an emulated SSD over NBD for fio (no drive needed)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=run_emulator)
    return parser


def config_from_args(args: argparse.Namespace) -> EmulatorConfig:
    """The configuration named by parsed arguments; InputError with one line."""
    values = {
        f.name: getattr(args, f.name)
        for f in EmulatorConfig.option_fields()
        if getattr(args, f.name, None) is not None
    }
    try:
        return EmulatorConfig.create(**values)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def run_emulator(args: argparse.Namespace) -> int:
    """Serve until interrupted; 0 when stopped by a signal or an injected disconnect."""
    cfg = config_from_args(args)
    if args.threads < 1 or args.threads > 1024:
        raise InputError(f"--threads must be between 1 and 1024, not {args.threads}")
    if not args.ready_timeout > 0:
        raise InputError("--ready-timeout must be positive")
    emu = Emulator(args.socket, cfg, threads=args.threads, verbose=args.verbose, capture_log=False)
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()
        emu.terminate()

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        try:
            emu.start(args.ready_timeout)
        except DeviceError:
            if stopping.is_set():
                return EXIT_OK
            raise
        if stopping.is_set():
            return EXIT_OK
        _say(f"serving {format_size(cfg.capacity)} on {emu.uri} ({cfg.describe()})")
        rc = emu.wait()
        if stopping.is_set():
            _say("stopped")
            return EXIT_OK
        if rc == 0 and cfg.disconnect_after is not None:
            _say(f"server exited (injected disconnect after {cfg.disconnect_after:g} s)")
            return EXIT_OK
        raise DeviceError(f"nbdkit exited unexpectedly with code {rc}")
    finally:
        emu.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _say(message: str) -> None:
    print(f"tkbench emulator: {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tkbench.emulator``: exit code 0, 2 (bad options) or 4 (nbdkit failed)."""
    parser = _OneLineParser(
        prog="python -m tkbench.emulator",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_emulator(args)
    except TkbenchError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
