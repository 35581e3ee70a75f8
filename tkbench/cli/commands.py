"""The commands over library functions: ``plan``, ``run``, ``demo``, ``show``, ``history``,
``compare``, ``dashboard`` and ``devices``.  Each takes the parsed arguments, calls the library and
formats its answer for people (or JSON for scripts); errors are raised, never printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from tkbench.cli import support
from tkbench.cli.fleet import dispatch_plan, dispatch_run, dispatch_show
from tkbench.cli.options import given, rig_name
from tkbench.cli.support import SESSION, info, one_line, say, warn
from tkbench.cli.terminal import printable
from tkbench.errors import EXIT_FAILED_CHECK, InputError, Interrupted
from tkbench.fleet.reports import report_turn

if TYPE_CHECKING:
    from tkbench.engine.runs import ChecksDone
    from tkbench.history import Entry, History, Indexed
    from tkbench.plan.build import Plan
    from tkbench.rundir.records import Manifest


def cmd_devices(args: argparse.Namespace) -> int:
    from tkbench.device import format_devices, list_devices

    rows = list_devices()
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=1))
    else:
        say(format_devices(rows))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from tkbench.conformance import judge_plan, rwsw
    from tkbench.engine.runs import RunRequest, prepare, workload_overrides
    from tkbench.fio import jobfile

    args.overrides = workload_overrides(args.profile, args.overrides, args.workload)
    args.workload = None  # handed to the profile's replay tests as overrides
    if (several := dispatch_plan(args, cmd_plan)) is not None:
        return several
    plan, target = prepare(
        RunRequest(
            profile=args.profile, target=args.target, size=args.size, overrides=args.overrides
        )
    )
    # the plan shows where a run keeps its markers (handoff.private_dir), not a real path
    handoff = jobfile.Handoff("XDG_RUNTIME_DIR/tkbench-handoff-RUN/handoff")
    pts = judge_plan(plan, target.write_cache_absent())
    planned = [(t.record(), None) for t in plan.tests]
    replayed = rwsw.lines(planned, planned=True)
    if args.json:
        data = plan.to_json(args.assume_mbps * 1e6)
        if not args.no_jobs:
            for t, entry in zip(plan.tests, data["tests"], strict=True):
                opts = target.fio_options(t.spec.workload.ioengine)
                pre = jobfile.precondition_jobfile(t, opts) if t.precondition else None
                entry["jobfiles"] = {
                    "precondition": pre,
                    "first_round": jobfile.round_jobfile(t, opts, handoff),
                }
        data["write_cache"] = target.write_cache_plan(plan.profile.workload.write_cache)
        data["pts"] = pts.to_dict()
        if replayed:
            data["rwsw"] = [d.to_dict() for d in rwsw.departures(planned, planned=True)]
        print(json.dumps(data, indent=1))
        return 0
    say(_with_write_cache(plan.describe(args.assume_mbps * 1e6), plan, target))
    say("\n" + "\n".join(pts.lines()))
    if replayed:
        say("\n" + "\n".join(replayed))
    if not args.no_jobs:
        for t in plan.tests:
            opts = target.fio_options(t.spec.workload.ioengine)
            if t.precondition:
                say(f"\n### {t.name}: preconditioning job file")
                say(jobfile.precondition_jobfile(t, opts).removesuffix("\n"))
            which = (
                "the first round (later rounds: each sequential point starts where it stopped)"
                if any(pt.pattern == "sequential" for pt in t.points)
                else "every round"
            )
            say(f"\n### {t.name}: job file of {which}")
            say(jobfile.round_jobfile(t, opts, handoff).removesuffix("\n"))
    return 0


def _with_write_cache(text: str, plan: Plan, target: Any) -> str:
    """The plan's description with what the run does to the write cache, after its
    purge line (at the end should that line ever be missing)."""
    what = target.write_cache_plan(plan.profile.workload.write_cache)
    line = f"Cache     volatile write cache {what}"
    lines = text.split("\n")
    at = next((i + 1 for i, ln in enumerate(lines) if ln.startswith("Purge")), len(lines))
    return "\n".join([*lines[:at], line, *lines[at:]])


def _warn_write_cache(run_dir: Path | None) -> None:
    """A run that left the drive's write cache as tkbench set it says so, with the
    command that puts it back (after a complete, failed or interrupted run alike)."""
    from tkbench.device.writecache import restore_warning
    from tkbench.errors import TkbenchError
    from tkbench.rundir.writecache import load

    if run_dir is None:
        return
    try:
        warning = restore_warning(load(run_dir))
    except (TkbenchError, OSError):
        return
    if warning:
        warn(warning)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """The first SIGTERM or SIGINT stops the run; any further one arrives while tkbench
    stops fio and marks the run interrupted (a few seconds at most) and is ignored, so
    a burst of signals (systemd, a double Ctrl-C) cannot cut that short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Interrupted("terminated by signal")


def cmd_demo(args: argparse.Namespace) -> int:
    from tkbench.cli.doctor import require_report_stack
    from tkbench.engine.runs import demo

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
    say(f"Demo finished. Run directory: {out}")
    say(f"Report: {pdf.resolve()}")
    say(f"        {pdf.with_suffix('.html').resolve()}")
    say(f"Summary: {support.command_name()} show {shlex.quote(str(out))}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from tkbench.engine.runs import RunRequest, check_outputs, start, workload_overrides
    from tkbench.outputs.show import run_summary
    from tkbench.rundir.store import load_run

    args.overrides = workload_overrides(
        args.profile, args.overrides, args.workload, args.resume is not None
    )
    args.workload = None  # handed to the profile's replay tests as overrides
    if (several := dispatch_run(args)) is not None:
        return several
    if args.resume is not None:
        if args.overrides:
            raise InputError(
                "--resume continues a run with the profile it was started with; "
                "--set cannot be given with it"
            )
        if args.out is not None and args.out.resolve() != args.resume.resolve():
            raise InputError(f"--out {args.out} differs from --resume {args.resume}")
    if args.out is None and args.resume is None:
        _check_default_out(args.profile, args.overrides)
    if args.rig is None and os.environ.get("TKBENCH_RIG", "").strip():
        args.rig = rig_name(os.environ["TKBENCH_RIG"], "TKBENCH_RIG")
    if args.junit is not None:
        from tkbench.outputs.files import check_output

        check_output(args.junit, "--junit")  # the rule of every output path (FIFOs too)
    check_outputs(
        junit=args.junit,
        history_db=None if args.no_history else (args.history or True),
        baseline=args.baseline,
        target=args.target,
        run_dir=args.out or args.resume,
    )
    if not args.no_report:
        from tkbench.cli.doctor import require_report_stack

        require_report_stack()  # before anything is touched, not after a day of fio
    req = RunRequest(
        profile=args.profile,
        profile_given=given(args, "profile"),
        target=args.target,
        size=args.size,
        out=args.out,
        overrides=args.overrides,
        assume_yes=args.yes,
        confirm_id=args.confirm,
        force=args.force,
        interactive=_tty(sys.stdin),
        prompt=_prompt if _tty(sys.stdin) else None,
        resume=args.resume,
        fio_servers=args.fio_servers,
        command_line=["tkbench", *sys.argv[1:]],
        resume_gap=args.resume_gap,
    )
    try:
        out, _manifest = _with_progress(lambda progress: start(req, progress))
    finally:
        _warn_write_cache(SESSION.run_dir)
    done = _checks(args, out)
    checks = done.checks
    if done.history_error:
        warn(done.history_error)
    if not args.no_report:
        # a run of a fleet waits for one of the fleet's report slots (fleet.reports)
        with report_turn(_waiting_for_report):
            _write_report(out)
    if args.json:
        summary = run_summary(load_run(out))
        summary["checks"] = done.to_json()
        print(json.dumps(summary, indent=1, default=str))
    else:
        info(f"run directory: {out}")
        failed = [c for c in checks.checks if not c.passed]
        if checks.count:
            info(
                f"checks: {'PASS' if not failed else 'FAIL'} "
                f"({checks.count - len(failed)} of {checks.count} passed)"
            )
        for c in failed:
            sys.stderr.write(f"  FAIL {one_line(c.name)}: {one_line(c.message)}\n")
    return 0 if checks.passed else EXIT_FAILED_CHECK


def _check_default_out(profile: str, overrides: list[str]) -> None:
    """Without ``--out`` the run directory is ``runs/PROFILE-TARGET-DATE-TIME``: a
    profile name that is no plain file name (``/``, ``..``, a leading dot, control
    characters) would put it elsewhere than in ``runs/``, or hide it; refused."""
    from tkbench.profile.build import load as load_profile

    name = load_profile(profile, overrides).name
    if (
        "/" in name
        or "\\" in name
        or ".." in name
        or name.startswith(".")
        or not name.isprintable()
    ):
        raise InputError(
            f"profile name {name!r} cannot begin the default run directory "
            "runs/PROFILE-TARGET-DATE-TIME (it has '/', '..', a leading dot or control "
            "characters): give --out DIR"
        )


def _checks(args: argparse.Namespace, out: Path) -> ChecksDone:
    from tkbench.engine.runs import finish_checks

    return finish_checks(
        out,
        junit=args.junit,
        history_db=None if args.no_history else (args.history or True),
        baseline=args.baseline,
        threshold=args.regression_threshold,
        rig=args.rig,
    )


def _waiting_for_report(slots: int) -> None:
    info(f"report: waiting for one of the fleet's {slots} report slot(s)")


def _write_report(run_dir: Path) -> Path:
    from tkbench.report import build_report

    pdf: Path = build_report(run_dir, run_dir / "report.pdf")
    info(f"report: {pdf}")
    return pdf


def _with_progress(
    body: Callable[[Any], tuple[Path, Manifest]],
) -> tuple[Path, Manifest]:
    """Run ``body(progress)`` with the progress display, SIGTERM and SIGINT as an
    interruption (see :func:`_on_signal`)."""
    progress = _progress(_tty(sys.stdin) and _tty(sys.stderr))
    old_term = signal.signal(signal.SIGTERM, _on_signal)
    old_int = signal.signal(signal.SIGINT, _on_signal)
    # a closed terminal or ssh session ends the run like SIGTERM: marked interrupted,
    # resumable (nohup or a systemd unit keep a run going instead)
    old_hup = signal.signal(signal.SIGHUP, _on_signal)
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
            signal.signal(signal.SIGHUP, old_hup)


def _tty(stream: Any) -> bool:
    """A terminal (a closed stdin, ``<&-``, is None: no terminal)."""
    return stream is not None and stream.isatty()


def _prompt(text: str) -> str:
    sys.stderr.write(text)
    sys.stderr.flush()
    return sys.stdin.readline()


def _progress(interactive: bool) -> Any:
    from tkbench.cli.ui import LogProgress, RichProgress, WatchedProgress
    from tkbench.engine.options import NullProgress
    from tkbench.fio.runner import STATUS_INTERVAL
    from tkbench.fleet.progress import STATUS_ENV

    if SESSION.quiet:
        return WatchedProgress(NullProgress())
    if interactive and os.environ.get("TERM") != "dumb":
        return WatchedProgress(RichProgress())
    # fio's live figures: a line a minute in logs, every report with -v or for the
    # terminal display of the fleet that started this run
    every = STATUS_INTERVAL if SESSION.verbose else 60.0
    if os.environ.pop(STATUS_ENV, None) is not None:
        every = STATUS_INTERVAL
    return WatchedProgress(LogProgress(status_every=every))


def cmd_history(args: argparse.Namespace) -> int:
    from tkbench.history import json_chunks, listing_lines

    history = _history_for(args, listing=not args.add)
    if args.add:
        _import(history, args.add, rig=None)
    # written as the entries are read: a history of any size, one entry in memory
    entries = _Counted(history.each(model=args.model, serial=args.serial, since=args.since))
    if args.json:
        for chunk in json_chunks(entries):
            sys.stdout.write(chunk)
        sys.stdout.write("\n")
    else:
        lines: list[str] = []
        for line in listing_lines(entries):
            lines.append(line)
            if len(lines) >= 1000:
                say("\n".join(lines))
                lines = []
        if lines or not entries.seen:
            say("\n".join(lines) if lines else "no runs in the history")
    if not entries.seen and args.history is None and not os.environ.get("TKBENCH_HISTORY"):
        _hint_system_history()
    return 0


class _Counted:
    """Entries passed on as they come, counted."""

    def __init__(self, inner: Iterable[Entry]) -> None:
        self.inner, self.seen = inner, 0

    def __iter__(self) -> Iterator[Entry]:
        for e in self.inner:
            self.seen += 1
            yield e


def cmd_history_import(args: argparse.Namespace) -> int:
    history = _history_for(args, listing=False)
    done = _import(history, args.run_dirs, rig=args.rig)
    new = sum(d.new for d in done)
    say(
        f"{_count(len(done), 'run', 'runs')} indexed in {history.location}: "
        f"{new} new, {len(done) - new} already there"
    )
    return 0


def cmd_history_prune(args: argparse.Namespace) -> int:
    from tkbench.history import format_entries

    asking = not args.yes
    if asking and not _tty(sys.stdin):
        raise InputError("history prune: no terminal to ask on; give --yes to drop the entries")
    history = _history_for(args, listing=True)
    stale = history.stale()
    if stale.elsewhere:
        info(f"{_count(stale.elsewhere, 'entry', 'entries')} indexed on other hosts left alone")
    if not stale.gone:
        say(f"nothing to prune in {history.location}: every run directory is there")
        return 0
    what = _count(len(stale.gone), "entry", "entries")
    if asking:
        sys.stderr.write(printable(format_entries(stale.gone), lines=True) + "\n")
        answer = _prompt(f"drop these {what}, whose run directories are gone? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            say("nothing dropped")
            return 0
    dropped = history.remove(e.run_dir for e in stale.gone)
    say(f"dropped {_count(dropped, 'entry', 'entries')} from {history.location}")
    return 0


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _history_for(args: argparse.Namespace, *, listing: bool) -> History:
    """The history of ``--history`` (or the default).  ``listing``: it must exist when
    named (a listing never creates one, and a wrong path is an error, not "no runs")."""
    from tkbench.history import open_history

    location = getattr(args, "history", None)
    history = open_history(location)
    if listing and location is not None and not history.exists():
        raise InputError(f"history database {history.location} does not exist")
    return history


def _import(history: History, run_dirs: list[Path], rig: str | None) -> list[Indexed]:
    from tkbench.history import entry_for
    from tkbench.rundir.store import load_run

    # every one read before any is indexed, one run in memory at a time: what is kept
    # is its entry (kilobytes), not the run (up to tens of megabytes for a PTS-E run)
    entries = [entry_for(load_run(d), None, rig) for d in run_dirs]
    done = history.put(entries)
    for d, path in zip(done, run_dirs, strict=True):
        info(f"{'indexed' if d.new else 'indexed again'}: {path}")
    return done


def _hint_system_history() -> None:
    """A user's own history is empty, root's runs are in the system-wide one: say so."""
    from tkbench.history import SYSTEM_PATH

    if os.geteuid() != 0 and SYSTEM_PATH.exists():
        info(
            f"root's runs are in {SYSTEM_PATH}: "
            f"{support.command_name()} history --history {SYSTEM_PATH}"
        )


def cmd_compare(args: argparse.Namespace) -> int:
    from tkbench.outputs.compare import compare, differences, format_rows
    from tkbench.rundir.store import load_run

    if args.out is not None:
        from tkbench.outputs.files import check_output

        check_output(args.out, "comparison")
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
        say(format_rows(runs, rows, diffs))
    if args.out:
        from tkbench.report import build_comparison

        info(f"comparison: {build_comparison(runs, args.out)}")
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    from tkbench.dashboard import build_site
    from tkbench.dashboard.site import check_out_dir

    check_out_dir(args.out)  # before connecting to a history
    built = build_site(_history_for(args, listing=True), args.out, threshold=args.threshold)
    info(
        f"dashboard: {_count(built.runs, 'run', 'runs')} of "
        f"{_count(built.drives, 'drive', 'drives')} on {_count(built.pages, 'page', 'pages')}"
        + (f"; {_count(built.removed, 'old page', 'old pages')} removed" if built.removed else "")
    )
    say(str(built.index))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from tkbench.outputs.show import format_summary, shown
    from tkbench.rundir.store import load_run

    if (several := dispatch_show(args)) is not None:
        return several
    summary = shown(load_run(args.run_dir))
    if args.json:
        print(json.dumps(summary.document, indent=1, default=str))
    else:
        say(format_summary(summary))
    return 0
