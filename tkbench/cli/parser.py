"""The argument parser of every ``tkbench`` command (argparse, raising instead of exiting).

Plain options may be given once only (:class:`.options.Once`); numbers are range-checked and
paths checked for emptiness while parsing, so bad input fails before anything runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tkbench import __version__
from tkbench import profile as profilemod
from tkbench.cli import capture as capture_cli
from tkbench.cli import tools
from tkbench.cli.commands import (
    cmd_compare,
    cmd_dashboard,
    cmd_demo,
    cmd_devices,
    cmd_history,
    cmd_history_import,
    cmd_history_prune,
    cmd_plan,
    cmd_run,
    cmd_show,
)
from tkbench.cli.fleet import report_jobs
from tkbench.cli.options import (
    Many,
    Parser,
    date_arg,
    history_arg,
    number,
    path_arg,
    rig_arg,
    size_arg,
    text_arg,
)


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
    p.add_argument(
        "--workload",
        type=path_arg,
        metavar="FILE.tkw",
        help="the captured workload a replay profile (rwsw) runs: a file made by "
        "'tkbench capture' (docs/replay.md)",
    )
    p.add_argument(
        "--tests",
        metavar="NAME,...",
        help="run only these tests of the profile, in the profile's order "
        "(iops, throughput, latency, wsat, hir, xsr, cbw, dirth)",
    )


def _add_target_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--target",
        type=text_arg,
        action=Many,
        metavar="TARGET",
        help="block device (/dev/nvme0n1), regular file, NBD URI (nbd+unix:///?socket=PATH), "
        "or a directory on a mounted filesystem for volume profiles (ars, bulk-sweep, copy, "
        "vfile); repeat it for "
        "several drives in parallel, one independent run each (docs/automation.md)",
    )
    p.add_argument(
        "--size",
        type=size_arg,
        metavar="SIZE",
        help="size of a regular-file target (created if missing), e.g. 64M; "
        "with several targets, of each regular file",
    )


def _add_history_args(p: argparse.ArgumentParser, default: Any = None) -> None:
    p.add_argument(
        "--history",
        type=history_arg,
        default=default,
        metavar="DB",
        help="history: an SQLite file or a postgresql://USER@HOST/DB URL (default "
        "$TKBENCH_HISTORY, else /var/lib/tkbench/history.sqlite for root, "
        "$XDG_DATA_HOME/tkbench/history.sqlite for others)",
    )
    if p.prog.endswith(" run"):
        p.add_argument("--no-history", action="store_true", help="do not index this run")


def _add_rig_arg(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("--rig", type=rig_arg, metavar="NAME", help=help_text)


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(
        prog="tkbench",
        description="SNIA PTS-style SSD qualification with fio: purge, precondition, "
        "rounds to steady state, PDF report.",
        epilog="Exit codes: 0 done, 1 check failed, 2 bad input, 3 refused by a safety "
        "check, 4 device or fio failure, 5 internal error, 130 interrupted.",
    )
    ap.add_argument("--version", action="version", version=f"tkbench {__version__}")
    _add_verbosity(ap, False)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    p = sub.add_parser(
        "plan",
        help="print the exact plan, job files, duration and SNIA PTS conformance; touch nothing",
        description="Prints what 'tkbench run' would do with the same options, without "
        "touching the target: each test's points, rounds and stop rule, the fio job files "
        "(--no-jobs leaves them out), the estimated duration, the drive's write cache "
        "setting and the profile judged against SNIA PTS 2.0.2 (every departure listed; a "
        "replay's departures from SNIA RWSW too).  --json gives the same as one document "
        "(docs/automation.md).",
    )
    _add_profile_args(p)
    _add_target_args(p)
    p.add_argument("--no-jobs", action="store_true", help="leave out the fio job files")
    p.add_argument(
        "--json",
        action="store_true",
        help="the whole plan as JSON for scripts: tests, phases, every point, "
        "preconditioning, write cache, PTS conformance, estimate (and the job files "
        "unless --no-jobs)",
    )
    p.add_argument(
        "--assume-mbps",
        type=number(0, 1e7, low_open=True, unit=" MB/s"),
        default=1000.0,
        help="sequential write rate assumed for the preconditioning estimate (default 1000 MB/s)",
    )
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser(
        "run",
        help="purge, precondition and run rounds to steady state (DESTROYS the target's data)",
        description="Run a profile on a target.  Every completed round is stored in the run "
        "directory before its results are used; --resume continues an interrupted run.  With "
        "several --target, one independent run per target, in parallel, below --out; the "
        "exit code is the worst of theirs (130 > 5 > 4 > 3 > 2 > 1 > 0).",
    )
    _add_profile_args(p)
    _add_target_args(p)
    p.add_argument(
        "--out",
        type=path_arg,
        metavar="DIR",
        help="run directory to create (default: runs/PROFILE-TARGET-DATE-TIME); with "
        "several targets, the fleet directory holding one run directory per drive "
        "(default: runs/fleet-PROFILE-DATE-TIME)",
    )
    p.add_argument(
        "--yes",
        action="store_true",
        help="confirm destroying a regular file or NBD/emulator target",
    )
    p.add_argument(
        "--confirm",
        metavar="ID",
        action=Many,
        help="confirm destroying a block device: its serial, or its kernel name "
        "(e.g. loop3) when it reports none; see 'tkbench devices'; with several "
        "targets once per block device, each going to the device it names",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write over a filesystem, partition-table or RAID signature "
        "(other safety checks still apply)",
    )
    p.add_argument(
        "--resume",
        type=path_arg,
        metavar="RUN_DIR",
        help="continue an interrupted run with the profile it was started with; a fleet "
        "directory: every unfinished run of it",
    )
    p.add_argument(
        "--resume-gap",
        type=number(0, 30 * 86400, unit=" s"),
        default=1.0,  # engine.IDLE_GAP_MIN (not imported: --help stays quick)
        metavar="SECONDS",
        help="idle time after a test's last round after which its rounds do not simply "
        "continue: a steady-state test is preconditioned again and begins a new segment, "
        "write saturation restarts (default 1: more than the ~0.5 s tkbench leaves "
        "between rounds itself; see docs/resume.md)",
    )
    p.add_argument(
        "--fio-server",
        dest="fio_servers",
        action="append",
        default=[],
        metavar="HOST[,PORT]",
        help="run fio through 'fio --server' on HOST (repeatable; each host's numbers are kept); "
        "a fio server runs any job sent to it, shell hooks included, as its user (root): "
        "trusted lab networks only (docs/methodology.md)",
    )
    p.add_argument(
        "--json", action="store_true", help="print a machine-readable summary on stdout at the end"
    )
    p.add_argument("--no-report", action="store_true", help="do not write the PDF/HTML report")
    p.add_argument(
        "--report-jobs",
        type=report_jobs,
        metavar="N",
        help="with several targets: at most N of the runs render their reports at once, "
        "the others wait their turn (default: the CPU cores, at most 4; each report "
        "takes 150-300 MB while it renders)",
    )
    p.add_argument(
        "--junit",
        type=path_arg,
        metavar="FILE",
        help="write the PASS/FAIL checks (steady state, acceptance criteria, "
        "regressions) as JUnit XML",
    )
    _add_history_args(p)
    _add_rig_arg(p, "the rig name this run is indexed under in the history (default $TKBENCH_RIG)")
    p.add_argument(
        "--baseline",
        type=path_arg,
        metavar="RUN_DIR",
        help="check for regressions against this run instead of the previous run of the same drive",
    )
    p.add_argument(
        "--regression-threshold",
        type=number(0, 1000, unit=" %"),
        metavar="PCT",
        help="fail (exit 1) when a headline number is worse than the baseline by "
        "more than PCT %% (a volume benchmark's figure: and by more than its runs' "
        "noise; 0 turns the check off; default: the profile's "
        "acceptance.regression_threshold)",
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
        type=path_arg,
        default=Path("demo-run"),
        metavar="DIR",
        help="run directory to create (default: demo-run)",
    )
    p.add_argument(
        "--profile",
        default="quick",
        help="profile to run (default: quick, with the demo's further reductions: "
        "docs/profiles.md)",
    )
    p.add_argument("--capacity", help="emulated capacity (default: 64M)")
    p.add_argument("--seed", type=int, default=7, help="emulator seed (default: 7)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a profile value (repeatable)",
    )
    p.add_argument(
        "--tests",
        metavar="NAME,...",
        help="run only these tests of the profile, in the profile's order "
        "(iops, throughput, latency, wsat, hir, xsr, cbw, dirth)",
    )
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "show",
        help="summarise a run directory with its SNIA PTS conformance or departures, "
        "or a fleet directory (one entry per drive)",
    )
    p.add_argument("run_dir", type=path_arg, metavar="RUN_DIR")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "history",
        help="runs indexed in the history, by drive; import and prune entries",
        description="Lists the runs in the history by drive (model, serial), with headline "
        "numbers.  'tkbench history import RUN_DIR...' indexes run directories, "
        "'tkbench history prune' drops entries whose run directories are gone.",
    )
    _add_history_args(p)
    p.add_argument("--model", help="only this drive model")
    p.add_argument("--serial", help="only this serial")
    p.add_argument(
        "--since",
        type=date_arg,
        metavar="DATE",
        help="only runs started then or later: YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS] (local "
        "time) or with a UTC offset (2026-11-27T08:00+02:00)",
    )
    p.add_argument(
        "--add",
        nargs="+",
        type=path_arg,
        metavar="RUN_DIR",
        default=[],
        help="index run directories first (as 'history import' does)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_history)
    actions = p.add_subparsers(dest="history_action", metavar="[ACTION]", parser_class=Parser)
    q = actions.add_parser(
        "import",
        help="index run directories (e.g. copied from other rigs); importing again changes nothing",
        description="Indexes run directories in the history.  A run is one entry: found "
        "again by its run UUID (a run made before run ids by its resolved directory), "
        "its entry is replaced, keeping its checks and rig.",
    )
    q.add_argument("run_dirs", nargs="+", type=path_arg, metavar="RUN_DIR")
    _add_history_args(q, argparse.SUPPRESS)
    _add_rig_arg(q, "the rig the runs were made on (default: none; TKBENCH_RIG is not used)")
    q.set_defaults(func=cmd_history_import)
    q = actions.add_parser(
        "prune",
        help="drop entries whose run directories are gone (asks; --yes without a terminal)",
        description="Drops the entries indexed on this host whose run directories no longer "
        "exist.  Entries indexed on other hosts are left alone.  On a terminal it lists them "
        "and asks; otherwise --yes is required.",
    )
    _add_history_args(q, argparse.SUPPRESS)
    q.add_argument("--yes", action="store_true", help="drop them without asking")
    q.set_defaults(func=cmd_history_prune)

    p = sub.add_parser(
        "compare",
        help="compare runs point by point, with deltas in %%",
        description="Puts the same points of two or more run directories side by side: "
        "each metric of each run, its delta in % from the first run, and the conditions "
        "that differ (queue depth, runtime, stop rule, block sizes, purge, preconditioning, ...).  "
        "--out also writes a PDF with "
        "the tables and overlaid convergence and measurement plots; --json gives the "
        "comparison as one document.",
    )
    p.add_argument("runs", nargs="+", type=path_arg, metavar="RUN_DIR")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--out",
        type=path_arg,
        metavar="FILE.pdf",
        help="also write a comparison PDF: tables, overlaid convergence and measurement plots",
    )
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "dashboard",
        help="write a static web site of the history: trends per drive, regressions, failures",
        description="Writes a static site into DIR (open DIR/index.html, or serve DIR with "
        "any web server): an index of every drive with its latest run, and one page per "
        "drive model and firmware with each headline number over time per serial, "
        "regressions and acceptance failures marked, each point linked to its run's report, "
        "and the older runs on pages of their own.  "
        "Only the dashboard's own files in DIR are written or replaced.",
    )
    _add_history_args(p)
    p.add_argument(
        "--out",
        type=path_arg,
        required=True,
        metavar="DIR",
        help="the site's directory (made if missing; other files in it are left alone)",
    )
    p.add_argument(
        "--threshold",
        type=number(0, 1000, unit=" %"),
        default=10.0,
        metavar="PCT",
        help="mark a headline number worse than in the previous complete run of the same "
        "drive and profile by more than PCT %% as a regression (default 10; 0 marks none)",
    )
    p.set_defaults(func=cmd_dashboard)

    p = sub.add_parser(
        "devices",
        help="list block devices, the ID to confirm each with, and why any would be refused",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_devices)

    _register_optional(sub)
    tools.register(sub)
    capture_cli.register(sub)
    for each in _all_subparsers(sub):
        # also accepted after the command, unless it has options of those names
        # (emulate --verbose: nbdkit's debug messages)
        if not {"-v", "--verbose", "-q", "--quiet"} & set(each._option_string_actions):
            _add_verbosity(each, argparse.SUPPRESS)
    return ap


def _all_subparsers(sub: Any) -> list[argparse.ArgumentParser]:
    """Every command's parser, and those of their actions (``history import``)."""
    out = []
    for p in dict.fromkeys(sub.choices.values()):
        out.append(p)
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                out += _all_subparsers(a)
    return out


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
    """Subcommands defined beside the code they drive."""
    from tkbench.cli import report
    from tkbench.emulator import cli as emulator_cli

    emulator_cli.register(sub)
    report.register(sub)
