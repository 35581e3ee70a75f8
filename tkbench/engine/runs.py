"""Start or resume a run: target checks, confirmation, lock, store, engine."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tkbench import cache, kinds
from tkbench import profile as profilemod
from tkbench.device.safety import Guarded
from tkbench.engine import (
    IDLE_GAP_MIN,
    Engine,
    EngineOptions,
    Progress,
    check_resumable,
    new_manifest,
    targetproof,
)
from tkbench.errors import InputError, Interrupted, RunDirError, SafetyError, TkbenchError
from tkbench.fio.runner import ClientFio, FioRunner, LocalFio
from tkbench.kinds.replay import REPLAY
from tkbench.kinds.replay import own as replay_own
from tkbench.kinds.results.run import analyse_run
from tkbench.plan import build as planmod
from tkbench.profile.build import build as build_profile
from tkbench.profile.build import load as load_profile
from tkbench.rundir.records import Checks, Manifest, TargetRecord
from tkbench.rundir.records.base import dump
from tkbench.rundir.store import RunStore, TestData, load_run
from tkbench.targets import open_target
from tkbench.targets.base import Target
from tkbench.targets.file import check_direct_io
from tkbench.units import timestamp
from tkbench.workload import tkw


@dataclass
class RunRequest:
    profile: str = "quick"
    profile_given: bool = False  # --profile on the command line (checked on --resume)
    target: str | None = None
    size: int | None = None
    out: Path | None = None
    overrides: list[str] = field(default_factory=list)
    assume_yes: bool = False
    confirm_id: str | None = None
    force: bool = False
    interactive: bool = False
    prompt: Callable[[str], str] | None = None
    resume: Path | None = None
    fio_servers: list[str] = field(default_factory=list)
    command_line: list[str] = field(default_factory=list)
    resume_gap: float = IDLE_GAP_MIN
    stop: Callable[[], bool] = field(default=lambda: False)


def default_out(profile_name: str, target: str, root: Path = Path("runs")) -> Path:
    """``runs/PROFILE-TARGET-DATE-TIME``: distinct for runs started together on other drives."""
    name = Path(target.split("socket=")[-1]).name or "target"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return root / f"{profile_name}-{safe}-{time.strftime('%Y%m%d-%H%M%S')}"


def make_runner(servers: list[str]) -> FioRunner:
    return ClientFio(servers) if servers else LocalFio()


def workload_overrides(
    profile: str, overrides: Sequence[str], workload: Path | None, resuming: bool = False
) -> list[str]:
    """``--set`` overrides that hand ``--workload FILE.tkw`` to every replay test of the
    profile (so a resumed run finds it in its stored profile); one line when it is
    given with a profile that replays nothing, missing for one that does, or not a
    workload file this tkbench reads."""
    out = list(overrides)
    if resuming:
        if workload is not None:
            raise InputError(
                "--resume continues a run with the workload it was started with; "
                "--workload cannot be given with it"
            )
        return out
    prof = load_profile(profile, out)
    replays = [t for t in prof.tests if kinds.of_spec(t) is REPLAY]
    if workload is None:
        if any(not replay_own(t).capture for t in replays):
            raise InputError(
                f"profile {prof.name} replays a captured workload: give --workload FILE.tkw "
                "(made by tkbench capture)"
            )
        return out
    if not replays:
        raise InputError(
            f"--workload is for a profile that replays a captured workload (rwsw), not {prof.name}"
        )
    tkw.load(workload)  # a missing, damaged or newer file: one line, before anything
    path = json.dumps(str(workload.resolve()))
    return [*out, *(f"tests.{t.name}.capture={path}" for t in replays)]


def prepare(req: RunRequest) -> tuple[planmod.Plan, Target]:
    """Profile + target -> plan, without touching the target: a regular file that does
    not exist yet is planned at ``req.size`` and not created (what ``tkbench plan``
    shows is what ``run`` would do)."""
    prof = load_profile(req.profile, req.overrides)
    if req.target is None:
        raise InputError("--target is required (a block device, a file or an NBD URI)")
    target = open_target(req.target, size=req.size, create=True)
    check_scope(prof, target)
    return _plan(prof, target), target


def check_scope(prof: profilemod.Profile, target: Target) -> None:
    """A device profile (it purges and overwrites a whole drive) never runs on a
    directory; a volume profile (its own files in a directory) never on a drive."""
    if target.kind == "volume" and prof.scope != "volume":
        raise SafetyError(
            f"refusing profile {prof.name} on the directory {target.spec}: it is a device "
            "profile that overwrites a whole drive; a directory takes volume profiles only "
            "(e.g. ars)"
        )
    if prof.scope == "volume" and target.kind != "volume":
        raise InputError(
            f"profile {prof.name} is a volume benchmark: give --target a directory on a "
            f"mounted filesystem, not {target.spec}"
        )


def _plan(prof: profilemod.Profile, target: Target) -> planmod.Plan:
    try:
        return planmod.build(prof, target.info())
    except ValueError as exc:
        raise InputError(str(exc)) from None


def start(req: RunRequest, progress: Progress | None = None) -> tuple[Path, Manifest]:
    """A new run.  Returns the run directory and its final manifest."""
    if req.resume is not None:
        return resume(req, progress)
    plan, target = prepare(req)
    runner = make_runner(req.fio_servers)
    _check_remote(target, runner)
    check_drop_caches(plan, runner.hosts)
    assert req.target is not None
    out = req.out or default_out(plan.profile.name, req.target)
    RunStore.check_new(out)
    with target.lock():
        guarded = _guard(target, req, plan)
        # fio is needed from here on (bad input and refusals are told without it)
        fio_version = runner.version()
        # a missing regular file is created only once the guards passed, and removed
        # again when the run cannot start on it
        with target.materialized():
            if target.kind == "file" and any(t.spec.workload.direct for t in plan.tests):
                check_direct_io(target.path)
            store = RunStore.create(
                out, new_manifest(plan, target, fio_version, req.command_line, runner.hosts)
            )
        store.log(f"run started: profile {plan.profile.name} on {target.describe()}")
        _log_guarded(guarded, store)
        return out, _execute(req, plan, target, runner, store, progress, guarded)


def _log_to(target: Target, store: RunStore) -> None:
    if hasattr(target, "log"):
        target.log = store.log


def resume(req: RunRequest, progress: Progress | None = None) -> tuple[Path, Manifest]:
    """Continue an interrupted run in ``req.resume`` with the profile it was started with
    (or, for a run stopped after its last round, return it for its checks)."""
    assert req.resume is not None
    root = req.resume
    data = load_run(root)
    m = data.manifest
    # stopped between its last round and its checks: those, the report and the
    # history are left to do, and the caller does them (nothing is written here)
    finish_only = m.status == "complete" and data.checks is None
    if not finish_only:
        check_resumable(data)
    if not m.profile.resolved or not m.target.spec:
        raise RunDirError(f"{root}: manifest lacks the profile or target needed to resume")
    prof = build_profile(dict(m.profile.resolved), m.profile.source)
    tspec = m.target.spec
    if req.target is not None and req.target != tspec:
        raise InputError(f"--target {req.target} differs from the run's target {tspec}")
    stored = m.profile
    if req.profile_given and req.profile not in (stored.name, stored.source):
        raise InputError(
            f"--profile {req.profile} differs from the run's profile {stored.name}: "
            "a resumed run keeps the profile it was started with"
        )
    if req.size is not None and req.size != m.target.capacity_bytes:
        raise InputError("--size differs from the size the run was started with")
    if finish_only:
        RunStore.open(root).log("run resumed: its tests were complete; its checks follow")
        return root, m
    _prove_inputs(data.tests, prof)
    runner = make_runner(list(m.fio_servers) or req.fio_servers)
    runner.version()
    target = open_target(tspec, create=False)
    # the node first: it names what differs (path, inode, generation), where a file's
    # serial (its path on its filesystem) would only say that the serials differ
    proof = targetproof.prove_node(m.target, target)
    _same_target(m.target, target)
    check_scope(prof, target)
    plan = _plan(prof, target)
    check_drop_caches(plan, runner.hosts)
    with target.lock():
        # the run's tkbench is gone (we hold its lock); fio and hand-off processes it
        # started may still be writing: stop them before checking the target
        stopped = stop_leftovers(root)
        store = RunStore.open(root)
        proof += targetproof.prove_data(store, m.target, target)
        guarded = _guard(target, req, plan)
        if stopped:
            store.log(f"stopped {len(stopped)} process(es) left by the interrupted run")
        store.update_manifest(status="running", ended=None, error=None)
        store.log("run resumed")
        for line in proof:
            store.log(f"target: {line}")
        _log_guarded(guarded, store)
        return root, _execute(req, plan, target, runner, store, progress, guarded)


def _prove_inputs(tests: Sequence[TestData], prof: profilemod.Profile) -> None:
    """Each stored test's own inputs (a replay's workload file) as they were when it was
    planned, before the resume plans again from them (SafetyError otherwise)."""
    specs = {s.name: s for s in prof.tests}
    for t in tests:
        spec = specs.get(t.plan.spec)
        if spec is not None:
            kinds.of_plan(t.plan).prove_resume(t.plan, spec)


def stop_leftovers(root: Path, proc_root: Path = Path("/proc"), wait: float = 10.0) -> list[int]:
    """Kill the processes a killed run left behind: fio runs in a scratch directory
    below the run directory (as do its job processes and the hand-off helpers they
    start), so a process whose working directory is there belongs to this run.  A
    tkbench killed with SIGKILL cannot stop them; they would go on writing the target
    beside the resumed run.  Returns the pids stopped."""
    import os
    import signal

    scratch_dir = Path(root).absolute() / ".scratch"
    if scratch_dir.is_symlink() or not scratch_dir.is_dir():
        return []  # tkbench makes a real directory; anything else is not its run's
    names = {os.fsencode(str(scratch_dir)), os.fsencode(str(scratch_dir.resolve()))}
    scratch = str(scratch_dir.resolve()) + os.sep
    found: list[int] = []
    for entry in proc_root.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        # fio (its job file), the hand-off and the shell fio starts it with all name
        # the scratch directory on their command line; a process merely standing there
        # is left alone
        named = any(n in a for a in argv for n in names)
        if (cwd + os.sep).startswith(scratch) and named:
            found.append(int(entry.name))
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any((proc_root / str(p)).exists() for p in found):
        time.sleep(0.05)
    return found


def _execute(
    req: RunRequest,
    plan: planmod.Plan,
    target: Target,
    runner: FioRunner,
    store: RunStore,
    progress: Progress | None,
    guarded: Guarded,
) -> Manifest:
    kept: list[bool] = []

    def keep_mark() -> None:
        # the data the run leaves is tkbench's, however the run ended -- if it wrote
        # this host's target, and was not forced over someone's data (a remnant of
        # theirs never becomes tkbench's)
        if kept or not engine.wrote or guarded.forced or runner.hosts:
            return
        kept.append(True)
        try:
            why = target.keep_mark(
                str(store.root.absolute()),
                timestamp(),
                ended=engine.ended_digest,
                extent=sorted(engine.extent),
            )
        except Exception as exc:  # never the run's outcome: it is told, not raised
            why = str(exc)
        if why:
            store.log(f"no mark of the data left on the target: {why}")

    # the mark is kept before the manifest says complete (a signal after that loses
    # only the checks and the report, which a resume then makes)
    options = EngineOptions(resume_gap=req.resume_gap, stop=req.stop, before_complete=keep_mark)
    _log_to(target, store)
    # what the target needs while the run runs (a volume's working directory) goes
    # however the run ends
    engine = Engine(plan, target, runner, store, progress, options)
    try:
        with target.workspace(store.root):
            return engine.run()
    finally:
        keep_mark()


def _log_guarded(guarded: Guarded, store: RunStore) -> None:
    """The run log says what the check let through and why."""
    for note in guarded.notes:
        store.log(f"safety check: {note}")
    for forced in guarded.forced:
        store.log(f"safety check overridden by --force: {forced}")


def _check_remote(target: Target, runner: FioRunner) -> None:
    """With fio servers, fio writes the server's path while tkbench would identify,
    guard, lock and purge this host's: refuse that for block devices."""
    if runner.hosts and target.kind == "block":
        raise InputError(
            "--fio-server cannot be used with a block device: tkbench would check and purge "
            "this host's device while fio writes the server's; run tkbench on the drive's host"
        )


def check_drop_caches(plan: planmod.Plan, hosts: Sequence[str] = (), euid: int = -1) -> None:
    """``drop_caches`` writes root's /proc/sys/vm/drop_caches -- a cold fio test's from
    the hand-off between points (tkbench.cache), a copy test's before every copy
    (tkbench.kinds.copyrun): refused unless tkbench runs as root, and for a fio test
    unless fio runs here (a copy test runs here whatever the fio servers)."""
    specs = [t.spec for t in plan.tests if t.spec.drop_caches]
    fio_spec = next((s for s in specs if kinds.of_spec(s).runs_fio), None)
    if hosts and fio_spec is not None:
        raise InputError(
            f"test {fio_spec.name}: drop_caches = true drops this host's page cache between "
            "points, which --fio-server cannot do; run tkbench on the volume's host"
        )
    if specs and (os.geteuid() if euid < 0 else euid) != 0:
        name = specs[0].name
        raise InputError(
            f"test {name}: drop_caches = true writes {cache.DROP_CACHES}, which only root "
            f"may do: run tkbench as root, or --set tests.{name}.drop_caches=false"
        )


def _guard(target: Target, req: RunRequest, plan: planmod.Plan) -> Guarded:
    """Safety checks, then the operator's confirmation (under the device lock)."""
    target.check_purge(plan.profile.purge.method)
    target.check_write_cache(plan.profile.workload.write_cache)
    guarded = target.check(force=req.force)
    target.confirm(
        confirm_id=req.confirm_id,
        assume_yes=req.assume_yes,
        interactive=req.interactive,
        prompt=req.prompt,
    )
    return guarded


def _same_target(stored: TargetRecord, target: Target) -> None:
    cap = stored.capacity_bytes
    if cap <= 0:
        raise RunDirError("the run's manifest has no valid target capacity")
    if cap != target.capacity:
        raise InputError(
            f"target {target.spec} now has {target.capacity} bytes, the run was started on "
            f"{cap}: not the same device"
        )
    old_serial = stored.device.serial
    new_serial = target.facts.serial
    if (
        old_serial
        and new_serial
        and old_serial != new_serial
        and "unknown"
        not in (
            old_serial,
            new_serial,
        )
    ):
        raise InputError(
            f"target {target.spec} has serial {new_serial}, the run was started on {old_serial}"
        )


def check_outputs(
    *,
    junit: Path | None = None,
    history_db: str | Path | bool | None = True,
    baseline: Path | None = None,
    target: str | None = None,
    run_dir: Path | None = None,
) -> None:
    """Refuse, before a run starts, what :func:`finish_checks` could only fail on after
    it: an unwritable JUnit file, an unusable history, a baseline that is no run; and
    a JUnit file that would overwrite the target, a run's records or the baseline.
    Reads only; creates nothing."""
    from tkbench.history import open_history
    from tkbench.rundir.store import check_output_file

    if junit is not None:
        check_output_file(junit, "--junit")
        _check_junit_place(junit, target, run_dir, baseline)
    if history_db:
        open_history(None if history_db is True else history_db).check_usable()
    if baseline is not None:
        if not baseline.is_dir():
            raise InputError(f"--baseline {baseline}: no such run directory")
        load_run(baseline)


def _check_junit_place(
    junit: Path, target: str | None, run_dir: Path | None, baseline: Path | None
) -> None:
    where = junit.absolute()
    if target is not None and (
        where == Path(target).absolute() or (junit.exists() and _same(junit, Path(target)))
    ):
        raise InputError(f"--junit {junit} is the target: it would be overwritten")
    for root, what in ((run_dir, "the run directory"), (baseline, "the baseline run")):
        if root is None:
            continue
        inside = where.is_relative_to(root.absolute())
        record = where.name in RUN_FILES or where.suffix == ".json" or "tests" in where.parts
        if inside and (root is baseline or record):
            raise InputError(f"--junit {junit} would overwrite a file of {what}")


# the files a run directory holds at its top (a JUnit file may sit beside them)
RUN_FILES = ("manifest.json", "checks.json", "events.log", "report.pdf", "report.html")


def _same(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def finish_checks(
    out: Path,
    *,
    junit: Path | None = None,
    history_db: str | Path | bool | None = True,
    baseline: Path | None = None,
    threshold: float | None = None,
    rig: str | None = None,
) -> ChecksDone:
    """Evaluate, store (checks.json), export (JUnit) and index the checks of a run.

    ``history_db``: a path or URL, True for the default database, None/False for none;
    ``rig``: the rig name the run is indexed under.
    ``threshold`` (percent) overrides the profile's regression threshold.
    """
    from tkbench.analysis import headline
    from tkbench.history import open_history
    from tkbench.outputs import checks as checkmod

    run = load_run(out)
    analysed = analyse_run(run)  # every check reads the same results, computed once
    m = run.manifest
    prof = build_profile(dict(m.profile.resolved), m.profile.source)
    acc = prof.acceptance
    found = checkmod.steady_checks(analysed) if acc.steady_state else []
    found += checkmod.criterion_checks(analysed, acc)
    limit = threshold if threshold is not None else acc.regression_threshold
    history = None
    if history_db:
        history = open_history(None if history_db is True else history_db)
    baseline_name = None
    warnings: list[str] = []  # the history's failures: the run itself stands
    if limit > 0:
        base: dict[str, float] | None = None
        base_figures: dict[str, checkmod.FigureRuns] = {}
        if baseline is not None:
            base_run = load_run(baseline)
            base, baseline_name = headline(base_run), str(baseline)
            base_figures = checkmod.run_figure_runs(base_run)
        elif history is not None:
            try:
                prev = history.previous(run)
            except TkbenchError as exc:
                warnings.append(f"no regression baseline from the history: {exc}")
                prev = None
            if prev is not None:
                base, baseline_name = prev.headline, prev.run_dir
                base_figures = prev.figure_runs()
        if base is not None and baseline_name is not None:
            found += checkmod.regression_checks(analysed.headline, base, limit, baseline_name)
            found += checkmod.volume_regression_checks(
                checkmod.run_figure_runs(analysed), base_figures, limit, baseline_name
            )
    data = checkmod.save(out, found, baseline_name)
    if junit:
        checkmod.write_junit(junit, run, found)
    if history is not None:
        try:
            history.add(run, data, rig=rig, analysed=analysed)
        except TkbenchError as exc:  # the run itself is complete: a warning, not a failure
            warnings.append(f"run not indexed: {exc}")
    return ChecksDone(data, "; ".join(warnings) or None)


@dataclass(frozen=True)
class ChecksDone:
    """The checks of a finished run, and what went wrong with the history (if anything):
    why the run could not be indexed, or had no baseline from it."""

    checks: Checks
    history_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = dump(self.checks)
        if self.history_error:
            out["history_error"] = self.history_error
        return out


# The demo's own reductions of the quick profile, so that ``make demo`` ends within
# minutes: every test still runs and is reported, on a 64 MiB emulated drive, with
# half-second points, a 3-round steady-state window and fewer rounds, 5-second XSR
# groups, three HIR bursts and 2 x 2 CBW/DIRTH grids with shorter pre-writes and
# operating points; the report's title says so, and page 1 lists each departure from
# PTS-E like any ``--set``.  A key the user sets with ``--set`` is the user's;
# another ``--profile`` gets none of these.
DEMO_PROFILE = "quick"
DEMO_CAPACITY = "64M"  # the emulated drive: preconditioning and WSAT's 4 fills scale with it
DEMO_REDUCTIONS: tuple[str, ...] = (
    "report.title=tkbench demo (quick profile, reduced further to run in minutes)",
    "description=the quick profile reduced further for the demo: half-second points, "
    "3-round windows, shorter stages (each departure from PTS-E is listed)",
    "rounds.window=3",
    "tests.iops.point_runtime=0.5s",
    "tests.iops.rounds.max=8",
    "tests.throughput.point_runtime=0.5s",
    "tests.latency.point_runtime=0.5s",
    "tests.wsat.max_duration=30s",
    "tests.hir.point_runtime=0.5s",
    "tests.hir.rounds.max=8",
    "tests.hir.bursts=3",
    'tests.xsr.groups=["128k sequential 5s", "4k random 5s", "128k sequential 5s"]',
    *(
        f"tests.{name}.{key}"
        for name in ("cbw", "dirth")
        for key in (
            "threads=[4, 1]",
            "iodepths=[8, 1]",
            "point_runtime=0.5s",
            "rounds.max=4",
            "prewrite=0.5s",
            "operating_prewrite=1s",
            "operating_runtime=1s",
        )
    ),
)


def demo_overrides(profile: str, overrides: Sequence[str]) -> list[str]:
    """The demo's reductions (for its own profile) the user's ``--set`` leaves, then
    the user's own."""
    if profile != DEMO_PROFILE:
        return list(overrides)
    mine = {profilemod.parse_override(o)[0] for o in overrides}
    kept = [o for o in DEMO_REDUCTIONS if profilemod.parse_override(o)[0] not in mine]
    return [*kept, *overrides]


def demo(
    out: Path,
    progress: Progress | None = None,
    *,
    profile: str = DEMO_PROFILE,
    capacity: str | None = None,
    seed: int = 7,
    overrides: list[str] | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> tuple[Path, Manifest]:
    """The demo: the bundled SSD emulator, a run on it, the emulator stopped again."""
    import tempfile

    from tkbench.emulator import start_emulator

    RunStore.check_new(out)
    with (
        tempfile.TemporaryDirectory(prefix="tkbench-demo-") as tmp,
        start_emulator(Path(tmp) / "ssd.sock", capacity or DEMO_CAPACITY, seed=seed) as emu,
    ):
        req = RunRequest(
            profile=profile,
            target=emu.uri,
            out=out,
            overrides=demo_overrides(profile, overrides or []),
            assume_yes=True,
            command_line=["tkbench", "demo", "--out", str(out)],
            stop=stop,
        )
        try:
            return start(req, progress)
        except Interrupted:
            # the emulated drive lived in this process: there is nothing to resume on
            raise Interrupted(
                f"demo interrupted; its emulated drive is gone, so {out} cannot be resumed: "
                "start the demo again with another --out"
            ) from None
