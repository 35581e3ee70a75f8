"""``run``, ``plan`` and ``show`` with several targets: a fleet (:mod:`tkbench.fleet`).

``cmd_run``, ``cmd_plan`` and ``cmd_show`` ask :func:`dispatch_run`,
:func:`dispatch_plan` and :func:`dispatch_show` first; each returns ``None`` when the
command is about one run (and leaves ``args.target``/``args.confirm`` single-valued,
as the single-run code expects), else the command's exit code.  ``cmd_plan`` hands
:func:`dispatch_plan` itself, to print each drive's plan: this module imports nothing
from :mod:`.commands`, which imports it.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from tkbench import fleet as fleetmod
from tkbench.cli.options import given, rig_name
from tkbench.cli.support import SESSION, command_name, info, one_line, say, warn
from tkbench.errors import EXIT_DEVICE, InputError, RunDirError, TkbenchError
from tkbench.fleet.progress import STATUS_ENV
from tkbench.fleet.reports import ReportSlots, default_jobs

if TYPE_CHECKING:
    from tkbench.cli.ui import FleetDisplay


def _single(args: argparse.Namespace, dest: str) -> list[str]:
    values = getattr(args, dest, None)
    if values is None:
        return []
    return [values] if isinstance(values, str) else list(values)


def _one(args: argparse.Namespace) -> None:
    """One target: ``args.target`` and ``args.confirm`` as single values again; two
    different ``--confirm`` IDs for one target are refused as they always were."""
    targets = _single(args, "target")
    args.target = targets[0] if targets else None
    if "confirm" in vars(args):
        confirms = _single(args, "confirm")
        if len(confirms) > 1:
            raise InputError(
                f"--confirm given twice with different values ({confirms[0]} and {confirms[1]})"
            )
        args.confirm = confirms[0] if confirms else None


# ------------------------------------------------------------------ run


def dispatch_run(args: argparse.Namespace) -> int | None:
    fleetmod.bind_to_parent()  # a child of a fleet stops when the fleet does
    targets = _single(args, "target")
    if args.resume is not None and fleetmod.is_fleet(args.resume):
        if targets:
            raise InputError(
                "--resume of a fleet continues its own targets; --target cannot be given"
            )
        return _resume(args)
    if len(targets) < 2:
        _one(args)
        return None
    return _start(args, targets)


def _refuse_for_fleet(args: argparse.Namespace) -> None:
    if args.junit is not None:
        raise InputError(
            "--junit names one file: with several targets each run's checks are in its "
            "checks.json and in 'tkbench show DIR --json'"
        )
    if args.overrides and args.resume is not None:
        raise InputError(
            "--resume continues a run with the profile it was started with; "
            "--set cannot be given with it"
        )


def _preflight(args: argparse.Namespace) -> None:
    """What every run would check the same way, once, before anything starts."""
    from tkbench.engine.runs import check_outputs

    if args.rig is None and os.environ.get("TKBENCH_RIG", "").strip():
        args.rig = rig_name(os.environ["TKBENCH_RIG"], "TKBENCH_RIG")
    check_outputs(
        history_db=None if args.no_history else (args.history or True), baseline=args.baseline
    )
    if not args.no_report:
        from tkbench.cli.doctor import require_report_stack

        require_report_stack()


def _common(args: argparse.Namespace) -> list[str]:
    """The options every child run gets as the fleet was given them."""
    out: list[str] = []
    if args.no_report:
        out.append("--no-report")
    if args.no_history:
        out.append("--no-history")
    elif args.history:
        out += ["--history", str(args.history)]
    if args.rig:
        out += ["--rig", args.rig]
    if args.baseline is not None:
        out += ["--baseline", str(args.baseline)]
    if args.regression_threshold is not None:
        out += ["--regression-threshold", repr(args.regression_threshold)]
    out += ["--resume-gap", repr(args.resume_gap)]
    for s in args.fio_servers:
        out += ["--fio-server", s]
    if SESSION.quiet:
        out.append("-q")
    if SESSION.verbose:
        out.append("-v")
    return out


def _consent(args: argparse.Namespace) -> list[str]:
    """--yes and --force as given: each run's own guards decide what they allow."""
    return [*(["--yes"] if args.yes else []), *(["--force"] if args.force else [])]


def _start(args: argparse.Namespace, targets: list[str]) -> int:
    from tkbench.rundir.store import RunStore

    _refuse_for_fleet(args)
    if args.resume is not None:
        raise InputError(f"--resume {args.resume}: not a fleet directory (no fleet.json)")
    out: Path = args.out or Path("runs") / (
        f"fleet-{Path(args.profile).stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    RunStore.check_new(out)
    _preflight(args)
    drives = fleetmod.plan_drives(
        targets,
        _single(args, "confirm"),
        profile=args.profile,
        size=args.size,
        overrides=args.overrides,
    )
    out.mkdir(parents=True, exist_ok=True)
    record = fleetmod.new_record(args.profile, drives, ["tkbench", *sys.argv[1:]])
    common = _common(args)
    jobs = []
    for d, entry in zip(drives, record.runs, strict=True):
        argv = ["run", "--profile", args.profile, "--target", d.spec, "--out", str(out / d.name)]
        if args.size is not None and fleetmod.sized(d.spec):
            argv += ["--size", str(args.size)]
        for o in args.overrides:
            argv += ["--set", o]
        argv += _consent(args)
        if d.confirm is not None:
            argv += ["--confirm", d.confirm]
        jobs.append((entry, fleetmod.child_command([*argv, *common])))
    info(f"fleet: {len(drives)} runs in {out}: " + ", ".join(d.name for d in drives))
    return _finish(args, out, record, jobs)


def _resume(args: argparse.Namespace) -> int:
    root: Path = args.resume
    _refuse_for_fleet(args)
    if args.out is not None and args.out.resolve() != root.resolve():
        raise InputError(f"--out {args.out} differs from --resume {root}")
    if given(args, "profile"):
        raise InputError("--resume of a fleet keeps the profile it was started with")
    record = fleetmod.FleetRecord.load(root)
    todo = fleetmod.unfinished(root, record)
    if not todo:
        raise RunDirError(
            f"{root}: every run of the fleet is complete or never started; nothing to resume"
        )
    # what was reached twice when the fleet started may be now (a loop device set up
    # over one of its files since): no run starts then
    fleetmod.check_together([r.target for r in todo], None, space=False)
    _preflight(args)
    confirms = _match_confirms([r.target for r in todo], _single(args, "confirm"))
    common = _common(args)
    jobs = []
    for r in todo:
        argv = ["run", "--resume", str(root / r.run_dir), *_consent(args)]
        if confirms.get(r.target):
            argv += ["--confirm", confirms[r.target]]
        jobs.append((r, fleetmod.child_command([*argv, *common])))
    record.resumes.append(time.time())
    record.ended = record.exit_code = None
    info(
        f"fleet: resuming {len(todo)} of {len(record.runs)} runs: "
        + ", ".join(r.name for r in todo)
    )
    return _finish(args, root, record, jobs)


def _match_confirms(specs: list[str], confirms: list[str]) -> dict[str, str]:
    """``--confirm`` IDs of a resumed fleet, each to the block device it names."""
    from tkbench.targets import open_target

    ids: dict[str, str] = {}
    for spec in specs:
        with contextlib.suppress(TkbenchError):
            cid = getattr(getattr(open_target(spec), "device", None), "confirm_id", None)
            if cid:
                ids[spec] = cid
    out: dict[str, str] = {}
    for c in confirms:
        named = [s for s, cid in ids.items() if cid == c.strip()]
        if not named:
            raise InputError(f"--confirm {c} names none of the block devices to resume")
        out[named[0]] = c.strip()
    return out


def _finish(
    args: argparse.Namespace,
    root: Path,
    record: fleetmod.FleetRecord,
    jobs: list[tuple[fleetmod.RunEntry, list[str]]],
) -> int:
    display = _display([entry.name for entry, _ in jobs])
    # at most --report-jobs of the runs render their reports at once (fleet.reports)
    slots = None if args.no_report else ReportSlots(args.report_jobs or default_jobs())
    env = {**os.environ, **(slots.env() if slots is not None else {})}
    if display is None:
        fleet = fleetmod.Fleet(root, record, _emitter(), env=env)
    else:  # the children report fio's live figures every few seconds, for the display
        env[STATUS_ENV] = "1"

        def on_end(e: fleetmod.RunEntry) -> None:
            code = e.exit_code if e.exit_code is not None else fleetmod.EXIT_INTERRUPTED
            display.ended(e.name, code, fleetmod.outcome(code))

        fleet = fleetmod.Fleet(root, record, display.line, env=env, on_end=on_end)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if not fleet.interrupted:
            sys.stderr.write(f"tkbench: {signal.Signals(signum).name}: stopping every run\n")
        fleet.forward(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        with display if display is not None else contextlib.nullcontext():
            code = fleet.run(jobs)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if slots is not None:
            slots.close()
    if not args.no_report:
        code = _comparison(root, record, code)
    from tkbench.fleet.summary import fleet_summary, format_fleet  # the test types, only now

    summary = fleet_summary(root)
    if args.json:
        print(json.dumps(summary, indent=1, default=str))
    else:
        info(format_fleet(summary))
    if fleetmod.unfinished(root, record):
        info(f"resume every unfinished run: {command_name()} run --resume {shlex.quote(str(root))}")
    return code


def _display(names: list[str]) -> FleetDisplay | None:
    """On a terminal (and not -q, not TERM=dumb): the live display of every drive;
    else None, and the drives' lines go out tagged (:func:`_emitter`)."""
    if SESSION.quiet or os.environ.get("TERM") == "dumb" or not sys.stderr.isatty():
        return None
    from tkbench.cli.ui import FleetDisplay

    return FleetDisplay(names)


def _emitter() -> Callable[[str, str], None]:
    def emit(name: str, line: str) -> None:
        try:
            sys.stderr.write(f"[{one_line(name)}] {one_line(line)}\n")
            sys.stderr.flush()
        except (BrokenPipeError, ValueError):
            pass  # the runs go on without a reader of their lines

    return emit


def _comparison(root: Path, record: fleetmod.FleetRecord, code: int) -> int:
    """``DIR/comparison.pdf`` of the completed runs, when there are two or more.  A
    comparison that cannot be written makes the exit code at least 4."""
    from tkbench.rundir.store import load_run

    runs = []
    for r in record.runs:
        with contextlib.suppress(TkbenchError):
            if (root / r.run_dir / "manifest.json").is_file():
                run = load_run(root / r.run_dir)
                if run.manifest.status == "complete":
                    runs.append(run)
    if len(runs) < 2:
        return code
    try:
        from tkbench.report import build_comparison

        info(f"comparison: {build_comparison(runs, root / 'comparison.pdf')}")
    except TkbenchError as exc:
        warn(f"no fleet comparison: {exc}")
        return fleetmod.worst([code, EXIT_DEVICE])
    return code


# ------------------------------------------------------------------ plan and show


def dispatch_plan(
    args: argparse.Namespace, plan_one: Callable[[argparse.Namespace], int]
) -> int | None:
    """``plan_one(args)`` prints the plan of one target (``tkbench plan``'s own)."""
    targets = _single(args, "target")
    if len(targets) < 2:
        _one(args)
        return None
    from tkbench.engine.runs import RunRequest, prepare

    fleetmod.check_together(targets, args.size)
    jobs = []
    docs: list[dict[str, Any]] = []
    for i, spec in enumerate(targets, 1):
        one = copy.copy(args)
        one.target = spec
        one.size = args.size if fleetmod.sized(spec) else None
        plan, _ = prepare(
            RunRequest(profile=args.profile, target=spec, size=one.size, overrides=args.overrides)
        )
        jobs.append(fleetmod.fio_jobs(plan))
        if args.json:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                plan_one(one)
            docs.append({"target": spec, "plan": json.loads(buf.getvalue())})
        else:
            say(f"{'=' * 8} drive {i} of {len(targets)}: {spec} {'=' * 8}")
            plan_one(one)
            say()
    warnings = fleetmod.sharing_warnings(targets)
    over = fleetmod.oversubscription(jobs, fleetmod.cpu_cores())
    if over:
        warnings.insert(0, over)
    if args.json:
        print(json.dumps({"drives": docs, "warnings": warnings}, indent=1))
    for w in warnings:
        warn(w)
    return 0


def dispatch_show(args: argparse.Namespace) -> int | None:
    if not fleetmod.is_fleet(args.run_dir) or (args.run_dir / "manifest.json").exists():
        return None
    from tkbench.fleet.summary import fleet_summary, format_fleet  # the test types, only now

    summary = fleet_summary(args.run_dir)
    if args.json:
        print(json.dumps(summary, indent=1, default=str))
    else:
        say(format_fleet(summary))
    return 0


def report_jobs(text: str) -> int:
    """``--report-jobs N``: a whole number, at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range: give 1 or more")
    return value
