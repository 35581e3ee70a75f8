"""Command-line interface: parses arguments, calls the library, maps errors to exit codes.

Exit codes (docs/exit-codes.md): 0 done, 1 acceptance or regression check
failed, 2 bad input, 3 refused by a safety check, 4 device/fio/tool failure,
5 internal error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from . import __version__, clisupport
from . import plan as planmod
from . import profile as profilemod
from .clisupport import SESSION, info
from .errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED_CHECK,
    EXIT_INTERRUPTED,
    InputError,
    Interrupted,
    TkbenchError,
)
from .units import parse_size


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so errors share one path."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(f"{self.prog}: {message}")


def _size_arg(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_profile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile",
        default="quick",
        help=f"profile name ({', '.join(profilemod.available())}) or path to a TOML file; "
        "default: quick",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a profile value, e.g. --set rounds.max=30 "
        "(repeatable; see docs/profiles.md)",
    )


def _add_target_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--target",
        metavar="TARGET",
        help="block device (/dev/nvme0n1), regular file, or NBD URI (nbd+unix:///?socket=PATH)",
    )
    p.add_argument(
        "--size",
        type=_size_arg,
        metavar="SIZE",
        help="size of a regular-file target (created if missing), e.g. 64M",
    )


def _add_history_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--history",
        type=Path,
        metavar="DB",
        help="history database (default $XDG_DATA_HOME/tkbench/history.sqlite, "
        "or $TKBENCH_HISTORY)",
    )
    if p.prog.endswith(" run"):
        p.add_argument("--no-history", action="store_true", help="do not index this run")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="tkbench",
        description="SNIA PTS-style SSD qualification with fio: purge, precondition, "
        "rounds to steady state, PDF report.",
        epilog="Exit codes: 0 done, 1 check failed, 2 bad input, 3 refused by a safety "
        "check, 4 device or fio failure, 5 internal error, 130 interrupted.",
    )
    ap.add_argument("--version", action="version", version=f"tkbench {__version__}")
    _add_verbosity(ap, False)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("plan", help="print the exact plan, job files and duration; touch nothing")
    _add_profile_args(p)
    _add_target_args(p)
    p.add_argument("--no-jobs", action="store_true", help="leave out the fio job files")
    p.add_argument(
        "--assume-mbps",
        type=float,
        default=1000.0,
        help="sequential write rate assumed for the preconditioning estimate (default 1000 MB/s)",
    )
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser(
        "run",
        help="purge, precondition and run rounds to steady state (DESTROYS the target's data)",
        description="Run a profile on a target.  Every completed round is stored in the run "
        "directory before the next starts; --resume continues an interrupted run.",
    )
    _add_profile_args(p)
    _add_target_args(p)
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="run directory to create (default: runs/PROFILE-DATE-TIME)",
    )
    p.add_argument(
        "--yes",
        action="store_true",
        help="confirm destroying a regular file or NBD/emulator target",
    )
    p.add_argument(
        "--confirm",
        metavar="ID",
        help="confirm destroying a block device: its serial, or its kernel name "
        "(e.g. loop3) when it reports none; see 'tkbench devices'",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write over a filesystem, partition-table or RAID signature "
        "(other safety checks still apply)",
    )
    p.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="continue an interrupted run with the profile it was started with",
    )
    p.add_argument(
        "--resume-gap",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="idle time after which a resumed test is preconditioned again (default 300)",
    )
    p.add_argument(
        "--fio-server",
        dest="fio_servers",
        action="append",
        default=[],
        metavar="HOST[,PORT]",
        help="run fio through 'fio --server' on HOST (repeatable)",
    )
    p.add_argument(
        "--json", action="store_true", help="print a machine-readable summary on stdout at the end"
    )
    p.add_argument("--no-report", action="store_true", help="do not write the PDF/HTML report")
    p.add_argument(
        "--junit",
        type=Path,
        metavar="FILE",
        help="write the PASS/FAIL checks (steady state, acceptance criteria, "
        "regressions) as JUnit XML",
    )
    _add_history_args(p)
    p.add_argument(
        "--baseline",
        type=Path,
        metavar="RUN_DIR",
        help="check for regressions against this run instead of the previous run of the same drive",
    )
    p.add_argument(
        "--regression-threshold",
        type=float,
        metavar="PCT",
        help="fail (exit 1) when a headline number is worse than the baseline by "
        "more than PCT %% (default: the profile's acceptance.regression_threshold)",
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "demo",
        help="run the quick profile on the bundled SSD emulator and write its report",
        description="Starts the bundled SSD emulator (no drive needed), runs a profile on it "
        "with progress on screen, stops the emulator and prints where the PDF is.",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("demo-run"),
        metavar="DIR",
        help="run directory to create (default: demo-run)",
    )
    p.add_argument("--profile", default="quick", help="profile to run (default: quick)")
    p.add_argument("--capacity", default="256M", help="emulated capacity (default: 256M)")
    p.add_argument("--seed", type=int, default=7, help="emulator seed (default: 7)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a profile value (repeatable)",
    )
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("show", help="summarise a run directory")
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("history", help="runs indexed in the local history, by drive")
    _add_history_args(p)
    p.add_argument("--model", help="only this drive model")
    p.add_argument("--serial", help="only this serial")
    p.add_argument(
        "--add",
        nargs="+",
        type=Path,
        metavar="RUN_DIR",
        default=[],
        help="index existing run directories first",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("compare", help="compare runs point by point, with deltas in %%")
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--out",
        type=Path,
        metavar="FILE.pdf",
        help="also write a comparison PDF: tables, overlaid convergence and measurement plots",
    )
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "devices",
        help="list block devices, the ID to confirm each with, and why any would be refused",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_devices)

    _register_optional(sub)
    from . import cli_tools

    cli_tools.register(sub)
    for p in set(sub.choices.values()):
        # also accepted after the command, unless it has options of those names
        # (emulate --verbose: nbdkit's debug messages)
        if not {"-v", "--verbose", "-q", "--quiet"} & set(p._option_string_actions):
            _add_verbosity(p, argparse.SUPPRESS)
    return ap


def _add_verbosity(p: argparse.ArgumentParser, default: Any) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default,
        help="show the traceback of an internal error",
    )
    g.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default,
        help="no progress and no informational lines; errors, warnings and failed checks only",
    )


def _register_optional(sub: Any) -> None:
    """Subcommands that live in their own modules."""
    import importlib

    for module in (".emulator.cli", ".report.cli"):
        try:
            mod = importlib.import_module(module, __package__)
        except ImportError:
            continue
        mod.register(sub)


# ----------------------------------------------------------------------------- commands


def cmd_devices(args: argparse.Namespace) -> int:
    from .device import format_devices, list_devices

    rows = list_devices()
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=1))
    else:
        print(format_devices(rows))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from . import jobfile
    from .target import is_nbd, open_target

    prof = profilemod.load(args.profile, args.overrides)
    if args.target is None:
        raise InputError("plan: --target is required")
    if not is_nbd(args.target) and not os.path.exists(args.target):
        if args.size is None:
            raise InputError(f"target {args.target} does not exist; give --size to plan for it")
        info = planmod.TargetInfo(args.target, "file", args.size, 512)
        fio_opts: dict[str, object] = {"ioengine": "libaio", "filename": args.target}
    else:
        target = open_target(args.target, size=args.size)
        info = target.info()
        fio_opts = target.fio_options(prof.workload.ioengine)
    try:
        plan = planmod.build(prof, info)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    print(planmod.describe(plan, args.assume_mbps * 1e6))
    if not args.no_jobs:
        handoff = jobfile.Handoff("RUN_DIR/.scratch/handoff")
        for t in plan.tests:
            opts = dict(fio_opts)
            if t.spec.workload.ioengine != "auto" and "uri" not in opts:
                opts["ioengine"] = t.spec.workload.ioengine
            if t.precondition:
                print(f"\n### {t.name}: preconditioning job file")
                print(jobfile.precondition_jobfile(t, opts), end="")
            print(f"\n### {t.name}: job file of every round")
            print(jobfile.round_jobfile(t, opts, handoff), end="")
    return 0


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """The first SIGTERM or SIGINT stops the run; any further one arrives while tkbench
    stops fio and marks the run interrupted (a few seconds at most) and is ignored, so
    a burst of signals (systemd, a double Ctrl-C) cannot cut that short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Interrupted("terminated by signal")


def cmd_demo(args: argparse.Namespace) -> int:
    from .doctor import require_report_stack
    from .runs import demo

    require_report_stack()
    out, _ = _with_progress(
        lambda progress: demo(
            args.out,
            progress,
            profile=args.profile,
            capacity=args.capacity,
            seed=args.seed,
            overrides=args.overrides,
        )
    )
    pdf = _write_report(out)
    print(f"Demo finished. Run directory: {out}")
    if pdf is not None:
        print(f"Report: {pdf.resolve()}")
        print(f"        {pdf.with_suffix('.html').resolve()}")
    print(f"Summary: {clisupport.command_name()} show {shlex.quote(str(out))}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .runs import RunRequest, start
    from .store import load_run
    from .summary import run_summary

    if not args.no_report:
        from .doctor import require_report_stack

        require_report_stack()  # before anything is touched, not after a day of fio
    req = RunRequest(
        profile=args.profile,
        target=args.target,
        size=args.size,
        out=args.out,
        overrides=args.overrides,
        assume_yes=args.yes,
        confirm_id=args.confirm,
        force=args.force,
        interactive=sys.stdin.isatty(),
        prompt=_prompt if sys.stdin.isatty() else None,
        resume=args.resume,
        fio_servers=args.fio_servers,
        command_line=["tkbench", *sys.argv[1:]],
        resume_gap=args.resume_gap,
    )
    out, _manifest = _with_progress(lambda progress: start(req, progress))
    checks = _checks(args, out)
    if checks.get("history_error"):
        sys.stderr.write(f"tkbench: warning: run not indexed: {checks['history_error']}\n")
    if not args.no_report:
        _write_report(out)
    if args.json:
        summary = run_summary(load_run(out))
        summary["checks"] = checks
        print(json.dumps(summary, indent=1, default=str))
    else:
        info(f"run directory: {out}")
        failed = [c for c in checks["checks"] if not c["passed"]]
        if checks["count"]:
            info(
                f"checks: {'PASS' if not failed else 'FAIL'} "
                f"({checks['count'] - len(failed)} of {checks['count']} passed)"
            )
        for c in failed:
            sys.stderr.write(f"  FAIL {c['name']}: {c['message']}\n")
    return 0 if checks["passed"] else EXIT_FAILED_CHECK


def _checks(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from .runs import finish_checks

    return finish_checks(
        out,
        junit=args.junit,
        history_db=None if args.no_history else (args.history or True),
        baseline=args.baseline,
        threshold=args.regression_threshold,
    )


def _write_report(run_dir: Path) -> Path | None:
    try:
        from .report import build_report
    except ImportError:
        return None
    pdf: Path = build_report(run_dir, run_dir / "report.pdf")
    info(f"report: {pdf}")
    return pdf


def _with_progress(
    body: Callable[[Any], tuple[Path, dict[str, Any]]],
) -> tuple[Path, dict[str, Any]]:
    """Run ``body(progress)`` with the progress display, SIGTERM and SIGINT as an
    interruption (see :func:`_on_signal`)."""
    progress = _progress(sys.stdin.isatty() and sys.stderr.isatty())
    old_term = signal.signal(signal.SIGTERM, _on_signal)
    old_int = signal.signal(signal.SIGINT, _on_signal)
    try:
        return body(progress)
    finally:
        close = getattr(progress, "close", None)
        if close:
            close()
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
            # not signalled; once signalled, the process is on its way out with 130
            # and late signals of the burst stay ignored
            signal.signal(signal.SIGTERM, old_term)
            signal.signal(signal.SIGINT, old_int)


def _prompt(text: str) -> str:
    sys.stderr.write(text)
    sys.stderr.flush()
    return sys.stdin.readline()


def _progress(interactive: bool) -> Any:
    from .engine import NullProgress
    from .ui import LogProgress, RichProgress

    if SESSION.quiet:
        return clisupport.WatchedProgress(NullProgress())
    if interactive and os.environ.get("TERM") != "dumb":
        return clisupport.WatchedProgress(RichProgress())
    return clisupport.WatchedProgress(LogProgress())


def cmd_history(args: argparse.Namespace) -> int:
    from .history import History, format_entries
    from .store import load_run

    history = History(args.history)
    for d in args.add:
        history.add(load_run(d))
    entries = history.entries(model=args.model, serial=args.serial)
    if args.json:
        print(json.dumps([e.to_dict() for e in entries], indent=1))
    else:
        print(format_entries(entries))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from .compare import compare, differences, format_rows
    from .store import load_run

    runs = [load_run(d) for d in args.runs]
    rows = compare(runs)
    diffs = differences(runs)
    if args.json:
        print(
            json.dumps(
                {
                    "runs": [str(r.root) for r in runs],
                    "differences": [d.to_dict() for d in diffs],
                    "rows": [r.to_dict() for r in rows],
                },
                indent=1,
            )
        )
    else:
        print(format_rows(runs, rows, diffs))
    if args.out:
        try:
            from .report import build_comparison
        except ImportError:
            raise InputError("the comparison PDF needs the report package") from None
        info(f"comparison: {build_comparison(runs, args.out)}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from .store import load_run
    from .summary import format_summary, run_summary

    summary = run_summary(load_run(args.run_dir))
    if args.json:
        print(json.dumps(summary, indent=1, default=str))
    else:
        print(format_summary(summary))
    return 0


# ----------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    SESSION.verbose, SESSION.quiet, SESSION.run_dir = False, False, None
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
        SESSION.verbose, SESSION.quiet = bool(args.verbose), bool(args.quiet)
        func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
        if func is None:
            parser.print_help(sys.stderr)
            return EXIT_BAD_INPUT
        code = func(args)
        sys.stdout.flush()  # here, where a closed pipe can still be told apart
        return code
    except TkbenchError as exc:
        sys.stderr.write(f"tkbench: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("tkbench: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError as exc:
        if clisupport.closed_output():
            return 0  # whoever read our output has all they wanted (tkbench ... | head)
        return clisupport.internal_error(exc)
    except Exception as exc:  # a bug in tkbench: one line, its own exit code
        return clisupport.internal_error(exc)


if __name__ == "__main__":
    sys.exit(main())
