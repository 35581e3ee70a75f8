"""Several drives on one host, in parallel: one independent ``tkbench run`` per target.

Design: the parent starts one child ``tkbench run`` process per target, with that one
target and ``--out DIR/NAME``.  Each child keeps every guarantee a single run has (its
own lock, guards, confirmation, purge, write-cache session, steady-state loop, signal
handling, resume and exit code), and a child that crashes cannot take the others down.
The parent only checks the command line once, names the run directories, hands each
block device the ``--confirm`` ID that names it, tags the children's lines with the
drive, forwards SIGINT/SIGTERM/SIGHUP to them, waits for all, and keeps
``DIR/fleet.json`` (:class:`FleetRecord`).  A child started by a fleet ends its run as
interrupted when the parent dies, even by SIGKILL (:func:`bind_to_parent`).

Library code: nothing here prints; lines go to the ``emit`` callback the CLI passes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tkbench.errors import (
    EXIT_BAD_INPUT,
    EXIT_DEVICE,
    EXIT_FAILED_CHECK,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REFUSED,
    InputError,
    RunDirError,
    TkbenchError,
)

FLEET_FILE = "fleet.json"
FORMAT = "tkbench-fleet"
VERSION = 1
PARENT_ENV = "TKBENCH_FLEET_PARENT"

# worst first: the fleet's exit code is the worst of its runs' (docs/exit-codes.md)
_SEVERITY = {
    EXIT_INTERRUPTED: 7,
    EXIT_INTERNAL: 6,
    EXIT_DEVICE: 5,
    EXIT_REFUSED: 4,
    EXIT_BAD_INPUT: 3,
    EXIT_FAILED_CHECK: 2,
    EXIT_OK: 0,
}
OUTCOMES = {
    EXIT_OK: "complete",
    EXIT_FAILED_CHECK: "checks failed",
    EXIT_BAD_INPUT: "bad input",
    EXIT_REFUSED: "refused",
    EXIT_DEVICE: "device or fio failure",
    EXIT_INTERNAL: "internal error",
    EXIT_INTERRUPTED: "interrupted",
}


def exit_code_of(returncode: int) -> int:
    """A child's exit status as a tkbench exit code: a child killed by a signal (the
    OOM killer, kill -9) never said what happened, which counts as an internal error."""
    return returncode if returncode in _SEVERITY else EXIT_INTERNAL


def worst(codes: Sequence[int]) -> int:
    """The fleet's exit code: 130 > 5 > 4 > 3 > 2 > 1 > 0 (0 for no runs)."""
    return max((exit_code_of(c) for c in codes), key=lambda c: _SEVERITY[c], default=EXIT_OK)


def outcome(code: int | None) -> str:
    if code is None:
        return "not finished"
    if code not in _SEVERITY:
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"
    return OUTCOMES[code]


# ------------------------------------------------------------------ the drives


@dataclass(frozen=True)
class Drive:
    """One target of a fleet: its ``--target``, the run directory's name below the
    fleet directory, and the ``--confirm`` ID handed to its run (block devices)."""

    spec: str
    name: str
    kind: str  # file, block, nbd; "unknown" when it could not be opened (the run says why)
    confirm: str | None = None
    confirm_id: str | None = None  # the ID the device is confirmed with (serial or name)


def _safe(text: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in text).strip("._")
    return safe or "target"


def run_name(spec: str, kind: str, identity: dict[str, Any]) -> str:
    """``MODEL-SERIAL`` for a block device (its kernel name when it reports neither),
    the file's name for a file, the socket's name for an NBD URI."""
    if kind == "block":
        model = str(identity.get("model") or "").strip()
        serial = str(identity.get("serial") or "").strip()
        parts = [p for p in (model, serial) if p and p != "unknown"]
        if parts:
            return _safe("-".join(parts))
        return _safe(Path(os.path.realpath(spec)).name)
    return _safe(Path(spec.split("socket=")[-1].split("&")[0]).name)


def _unique(names: list[str]) -> list[str]:
    """The names, a later one of the same name suffixed ``-2``, ``-3``...: one run
    directory per drive."""
    out: list[str] = []
    for n in names:
        cand, k = n, 1
        while cand in out:
            k += 1
            cand = f"{n}-{k}"
        out.append(cand)
    return out


# what a target reaches: a key (a file, a new file's name in its directory, a block
# device) -> whether it reaches all of it, and how (empty: directly)
_Reach = dict[tuple[Any, ...], tuple[bool, str]]


def _sys_block(rdev: int, sys_root: Path) -> Path | None:
    """The sysfs directory of the block device ``rdev`` (None: none)."""
    p = sys_root / "dev" / "block" / f"{os.major(rdev)}:{os.minor(rdev)}"
    try:
        return Path(os.path.realpath(p)) if p.exists() else None
    except OSError:
        return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _devno(text: str) -> int | None:
    major, _, minor = text.partition(":")
    return os.makedev(int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


def _then(how: str, step: str) -> str:
    return f"{how}, and {step}" if how else step


def _block_reach(rdev: int, whole: bool, how: str, sys_root: Path, depth: int = 0) -> _Reach:
    """A block device, and beneath it: the whole disk of a partition (partly), the
    backing file of a loop device (and what that file is on)."""
    sysdir = _sys_block(rdev, sys_root)
    name = sysdir.name if sysdir is not None else f"{os.major(rdev)}:{os.minor(rdev)}"
    reach: _Reach = {("blk", rdev): (whole, how)}
    if sysdir is None or depth > 8:
        return reach
    if (sysdir / "partition").exists():
        parent = _devno(_read(sysdir.parent / "dev"))
        if parent is not None:
            why = _then(how, f"/dev/{name} is a partition of /dev/{sysdir.parent.name}")
            reach.update(_block_reach(parent, False, why, sys_root, depth + 1))
    backing = _read(sysdir / "loop" / "backing_file")
    if backing:
        try:
            st = os.stat(backing)
        except OSError:
            return reach
        ranged = _read(sysdir / "loop" / "offset") not in ("", "0") or _read(
            sysdir / "loop" / "sizelimit"
        ) not in ("", "0")
        why = _then(how, f"/dev/{name} is backed by {backing}")
        reach.update(_file_reach(st, backing, whole and not ranged, why, sys_root, depth + 1))
    return reach


def _on_device(dev: int, path: str, how: str, sys_root: Path, depth: int) -> _Reach:
    """The block device (if any) whose filesystem holds ``path``, reached partly."""
    sysdir = _sys_block(dev, sys_root)
    if sysdir is None:
        return {}
    why = _then(how, f"{path} is on a filesystem of /dev/{sysdir.name}")
    return _block_reach(dev, False, why, sys_root, depth + 1)


def _file_reach(
    st: os.stat_result, path: str, whole: bool, how: str, sys_root: Path, depth: int
) -> _Reach:
    """A file (its device and inode: every link and bind mount of it) and, partly, the
    block device its filesystem is on."""
    reach: _Reach = {("ino", st.st_dev, st.st_ino): (whole, how)}
    reach.update(_on_device(st.st_dev, path, how, sys_root, depth))
    return reach


def reach(spec: str, sys_root: Path = Path("/sys")) -> _Reach:
    """What the target ``spec`` reads and writes, however it is named (a link, a hard
    link, a bind mount, a loop device, a partition)."""
    from tkbench.target import is_nbd

    if is_nbd(spec):
        return {("nbd", spec): (True, "")}
    try:
        st = os.stat(spec)
    except FileNotFoundError:
        # a new file: its name in its directory, whatever path (or link) leads there
        real = os.path.realpath(spec)
        try:
            pst = os.stat(os.path.dirname(real))
        except OSError:
            return {("path", real): (True, "")}
        out: _Reach = {("new", pst.st_dev, pst.st_ino, os.path.basename(real)): (True, "")}
        out.update(_on_device(pst.st_dev, spec, "", sys_root, 0))
        return out
    except OSError:
        return {("path", os.path.abspath(spec)): (True, "")}
    if stat.S_ISBLK(st.st_mode):
        return _block_reach(st.st_rdev, True, "", sys_root)
    return _file_reach(st, spec, True, "", sys_root, 0)


def _same_place(specs: Sequence[str], sys_root: Path = Path("/sys")) -> None:
    """Two targets reaching one file or device (a link, a second path, a bind mount, a
    loop device and its backing file, a partition and its disk) would be two runs on
    one drive: bad input, before anything starts.  Two partitions of one disk are
    two targets."""
    seen: list[tuple[str, _Reach]] = []
    for spec in specs:
        mine = reach(spec, sys_root)
        for other, theirs in seen:
            both = [
                (k, [h for h in (theirs[k][1], mine[k][1]) if h])
                for k in mine.keys() & theirs.keys()
                if mine[k][0] or theirs[k][0]  # two parts of one disk are two targets
            ]
            if not both:
                continue
            # the most direct way they meet (a partition's disk before that disk's file)
            key, hows = min(both, key=lambda kh: sum(len(h) for h in kh[1]))
            raise InputError(
                f"--target {spec} and --target {other} are the same target "
                f"({'; '.join(hows) or _twice(key, spec)})"
            )
        seen.append((spec, mine))


def _twice(key: tuple[Any, ...], spec: str) -> str:
    """How two targets reach one thing directly."""
    if key[0] == "new":
        return f"both name the new file {os.path.realpath(spec)}"
    if key[0] == "ino":
        return "one file: the same device and inode, through a link, a hard link or a bind mount"
    return f"both name the device {os.path.realpath(spec)}"


def _check_space(specs: Sequence[str], size: int | None) -> None:
    """The fleet's file targets on one filesystem must fit its free space together (each
    run checks only its own): a new file's ``--size``, an existing file's blocks not
    yet allocated."""
    from tkbench.units import human_bytes
    from tkbench.volume import _mount

    need: dict[int, list[tuple[str, int]]] = {}
    where: dict[int, str] = {}
    for spec in specs:
        if not _sized(spec):
            continue
        try:
            st = os.stat(spec)
        except FileNotFoundError:
            if size is None:
                continue
            parent = os.path.dirname(os.path.realpath(spec))
            try:
                dev = os.stat(parent).st_dev
            except OSError:
                continue
            need.setdefault(dev, []).append((spec, size))
            where.setdefault(dev, parent)
            continue
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            missing = max(0, st.st_size - st.st_blocks * 512)
            need.setdefault(st.st_dev, []).append((spec, missing))
            where.setdefault(st.st_dev, spec)
    for dev, files in need.items():
        total = sum(n for _, n in files)
        if len(files) < 2:
            continue  # one file: its run checks it (and says so in its own words)
        try:
            fs = os.statvfs(where[dev])
        except OSError:
            continue
        free = fs.f_bavail * fs.f_frsize
        if total > free:
            mount = _mount(dev)["mount_point"]
            parts = ", ".join(f"{s} {human_bytes(n)}" for s, n in files)
            raise InputError(
                f"the fleet's files on the filesystem at {mount} "
                f"({os.major(dev)}:{os.minor(dev)}) need {human_bytes(total)} together "
                f"({parts}), but it has {human_bytes(free)} free"
            )


def check_together(specs: Sequence[str], size: int | None, *, space: bool = True) -> None:
    """What no single run can see, checked before any run of a fleet starts: one file
    or device reached twice, and files that fit their filesystem one by one but not
    together (``space``)."""
    _same_place(specs)
    if space:
        _check_space(specs, size)


def plan_drives(
    targets: Sequence[str],
    confirms: Sequence[str],
    *,
    profile: str,
    size: int | None,
    overrides: Sequence[str],
) -> list[Drive]:
    """Check every target as ``tkbench plan`` does (the profile, ``--set``, each
    target's spec: bad input ends the whole command, nothing written), name the run
    directories and match each ``--confirm`` ID to the one block device it names.
    A target that is refused here (neither file nor device) is still a drive: its
    run refuses it with its own message and exit code, the others go on."""
    from tkbench.errors import SafetyError
    from tkbench.runs import RunRequest, prepare

    if len(targets) < 2:
        raise InputError("a fleet needs two or more --target")
    check_together(targets, size)
    found: list[tuple[str, str, dict[str, Any], str | None]] = []
    for spec in targets:
        try:
            _, target = prepare(
                RunRequest(
                    profile=profile,
                    target=spec,
                    size=size if _sized(spec) else None,
                    overrides=list(overrides),
                )
            )
        except SafetyError:
            found.append((spec, "unknown", {}, None))
            continue
        cid = getattr(getattr(target, "device", None), "confirm_id", None)
        found.append((spec, target.kind, dict(target.identity), cid))
    by_id: dict[str, str] = {}
    for c in confirms:
        c = c.strip()
        named = [spec for spec, kind, _, cid in found if kind == "block" and cid == c]
        if not named:
            ids = ", ".join(cid for _, k, _, cid in found if k == "block" and cid) or "none"
            raise InputError(
                f"--confirm {c} names none of the block devices among the targets "
                f"(their IDs: {ids}; see 'tkbench devices')"
            )
        by_id[named[0]] = c
    names = _unique([run_name(spec, kind, ident) for spec, kind, ident, _ in found])
    return [
        Drive(spec=spec, name=name, kind=kind, confirm=by_id.get(spec), confirm_id=cid)
        for (spec, kind, _, cid), name in zip(found, names, strict=True)
    ]


def _sized(spec: str) -> bool:
    """--size applies to the regular-file targets of a fleet (block devices and NBD
    exports have their own size)."""
    from tkbench.target import is_nbd

    if is_nbd(spec):
        return False
    try:
        return not stat.S_ISBLK(os.stat(spec).st_mode)
    except OSError:
        return True


# ------------------------------------------------------------------ fleet.json


@dataclass
class RunEntry:
    name: str
    target: str
    run_dir: str  # relative to the fleet directory
    kind: str = "unknown"
    started: float | None = None
    ended: float | None = None
    exit_code: int | None = None
    error: str | None = None  # the run's last error line, if it gave one

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "target": self.target,
            "run_dir": self.run_dir,
            "kind": self.kind,
            "started": self.started,
            "ended": self.ended,
            "exit_code": self.exit_code,
            "outcome": outcome(self.exit_code),
            "error": self.error,
        }


@dataclass
class FleetRecord:
    """``DIR/fleet.json``: the fleet's own record; every run's facts stay in its run
    directory.  Format history: 1 — first version."""

    profile: str
    runs: list[RunEntry]
    command_line: list[str] = field(default_factory=list)
    host: str = ""
    started: float = 0.0
    ended: float | None = None
    exit_code: int | None = None
    resumes: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "profile": self.profile,
            "command_line": self.command_line,
            "host": self.host,
            "started": self.started,
            "ended": self.ended,
            "exit_code": self.exit_code,
            "resumes": self.resumes,
            "runs": [r.to_dict() for r in self.runs],
        }

    def save(self, root: Path) -> None:
        """Atomically: a reader sees the old record or the new one, never half."""
        path = Path(root) / FLEET_FILE
        tmp = path.with_name(f".{FLEET_FILE}.{os.getpid()}.tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, indent=1)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    @classmethod
    def load(cls, root: Path) -> FleetRecord:
        path = Path(root) / FLEET_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunDirError(f"{root}: no {FLEET_FILE}: not a fleet directory") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RunDirError(f"{path}: unreadable: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise RunDirError(f"{path}: not a tkbench fleet record")
        if not isinstance(data.get("version"), int) or data["version"] > VERSION:
            raise RunDirError(f"{path}: written by a newer tkbench (version {data.get('version')})")
        try:
            runs = [
                RunEntry(
                    name=str(r["name"]),
                    target=str(r["target"]),
                    run_dir=str(r["run_dir"]),
                    kind=str(r.get("kind", "unknown")),
                    started=r.get("started"),
                    ended=r.get("ended"),
                    exit_code=r.get("exit_code"),
                    error=r.get("error"),
                )
                for r in data["runs"]
            ]
            for r in runs:
                if Path(r.run_dir).is_absolute() or ".." in Path(r.run_dir).parts:
                    raise ValueError(f"run_dir {r.run_dir!r} is outside the fleet directory")
            return cls(
                profile=str(data["profile"]),
                runs=runs,
                command_line=[str(a) for a in data.get("command_line", [])],
                host=str(data.get("host", "")),
                started=float(data.get("started") or 0.0),
                ended=data.get("ended"),
                exit_code=data.get("exit_code"),
                resumes=[float(t) for t in data.get("resumes", [])],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RunDirError(f"{path}: bad field: {exc}") from None


def is_fleet(root: Path) -> bool:
    return (Path(root) / FLEET_FILE).is_file()


# ------------------------------------------------------------------ running


def child_command(args: Sequence[str]) -> list[str]:
    """The child: this very tkbench, whatever the working directory holds.  ``python
    -m tkbench`` would look in the working directory first and import a folder named
    ``tkbench`` there instead; ``-P`` leaves it off the module path, and the
    directory this package was imported from goes first."""
    root = str(Path(__file__).resolve().parent.parent.parent)
    code = f"import sys; sys.path.insert(0, {root!r}); from tkbench.cli import main; "
    code += "sys.exit(main())"
    return [sys.executable, "-P", "-c", code, *args]


@dataclass
class Child:
    entry: RunEntry
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    readers: list[threading.Thread] = field(default_factory=list)


class Fleet:
    """Runs the children, tags their lines, forwards signals, keeps ``fleet.json``."""

    def __init__(
        self,
        root: Path,
        record: FleetRecord,
        emit: Callable[[str, str], None],
        env: dict[str, str] | None = None,
        on_end: Callable[[RunEntry], None] | None = None,
    ) -> None:
        self.root = Path(root)
        self.record = record
        self.emit = emit
        self.env = env
        self.on_end = on_end  # called with a run's entry once its exit code is recorded
        self.children: list[Child] = []
        self.interrupted = False
        self._lock = threading.Lock()

    def forward(self, signum: int) -> None:
        """The first SIGINT/SIGTERM/SIGHUP goes to every running child; each stops its
        fio and marks its run interrupted.  Later ones are not passed on (a child
        ignores them anyway, and the parent goes on waiting)."""
        if self.interrupted:
            return
        self.interrupted = True
        for c in self.children:
            if c.proc is not None and c.proc.poll() is None:
                with contextlib.suppress(OSError):
                    c.proc.send_signal(signum)

    def _read(self, child: Child, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith("tkbench: error: "):
                child.entry.error = line[len("tkbench: error: ") :]
            with self._lock:
                self.emit(child.entry.name, line)
        stream.close()

    def run(self, jobs: Sequence[tuple[RunEntry, list[str]]]) -> int:
        """Start every child, wait for all; the worst exit code (with this run's
        untouched entries' codes)."""
        env = dict(os.environ if self.env is None else self.env)
        env[PARENT_ENV] = str(os.getpid())
        self.record.save(self.root)
        for entry, argv in jobs:
            child = Child(entry, argv)
            self.children.append(child)
            if self.interrupted:  # a signal while the others started: this one never runs
                entry.exit_code, entry.error = EXIT_INTERRUPTED, "not started: interrupted"
                continue
            entry.started, entry.ended, entry.exit_code, entry.error = time.time(), None, None, None
            # its own session: a Ctrl-C on the terminal reaches the parent only, which
            # passes it on once (a child gets one signal, never two at different times);
            # no stdin: a fleet never prompts (a block device needs its --confirm)
            child.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
            for s in (child.proc.stdout, child.proc.stderr):
                assert s is not None
                t = threading.Thread(target=self._read, args=(child, s), daemon=True)
                t.start()
                child.readers.append(t)
        self.record.save(self.root)
        pending = [c for c in self.children if c.proc is not None]
        while pending:
            for c in list(pending):
                assert c.proc is not None
                rc = c.proc.poll()
                if rc is None:
                    continue
                for t in c.readers:
                    t.join(timeout=5)
                c.entry.ended, c.entry.exit_code = time.time(), rc
                if rc not in _SEVERITY and c.entry.error is None:
                    c.entry.error = outcome(rc)
                pending.remove(c)
                self.record.save(self.root)
                if self.on_end is not None:
                    self.on_end(c.entry)
            if pending:
                time.sleep(0.1)
        # a run with no exit code recorded (its fleet was killed) ended unfinished
        codes = [EXIT_INTERRUPTED if r.exit_code is None else r.exit_code for r in self.record.runs]
        code = EXIT_INTERRUPTED if self.interrupted else worst(codes)
        self.record.ended, self.record.exit_code = time.time(), code
        self.record.save(self.root)
        return code


def new_record(profile: str, drives: Sequence[Drive], command_line: list[str]) -> FleetRecord:
    return FleetRecord(
        profile=profile,
        runs=[RunEntry(name=d.name, target=d.spec, run_dir=d.name, kind=d.kind) for d in drives],
        command_line=command_line,
        host=socket.gethostname(),
        started=time.time(),
    )


def unfinished(root: Path, record: FleetRecord) -> list[RunEntry]:
    """The runs ``--resume DIR`` continues: those whose run directory holds a run that
    is not complete.  A run refused before it had a directory has nothing to resume
    (start it again on its own once the cause is gone)."""
    from tkbench.store import load_run

    out = []
    for r in record.runs:
        d = Path(root) / r.run_dir
        if not (d / "manifest.json").is_file():
            continue
        try:
            status = load_run(d).manifest.status
        except TkbenchError:
            out.append(r)  # let its resume say what is wrong with it
            continue
        if status != "complete":
            out.append(r)
    return out


def bind_to_parent() -> None:
    """In a child of a fleet: end like SIGTERM (the run marked interrupted, resumable)
    when the parent dies, even by SIGKILL, rather than run on unwatched.  Linux only
    (prctl PR_SET_PDEATHSIG); elsewhere a no-op."""
    parent = os.environ.pop(PARENT_ENV, None)
    if not parent or not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    if str(os.getppid()) != parent:  # the parent died before prctl took effect
        from tkbench.errors import Interrupted

        raise Interrupted("the fleet that started this run is gone")


# ------------------------------------------------------------------ summary


def fleet_summary(root: Path) -> dict[str, Any]:
    """One entry per drive: what its run did, its headline numbers, steady state per
    test and its checks (``tkbench show DIR --json``)."""
    from tkbench.analysis import headline
    from tkbench.store import load_run
    from tkbench.summary import run_summary

    root = Path(root)
    rec = FleetRecord.load(root)
    drives = []
    for r in rec.runs:
        d = root / r.run_dir
        entry: dict[str, Any] = r.to_dict()
        entry["run_dir"] = str(d)
        entry.update(status="not started", model=None, serial=None, headline={}, tests=[])
        entry["checks"] = None
        if (d / "manifest.json").is_file():
            try:
                run = load_run(d)
            except TkbenchError as exc:
                entry["status"] = "unreadable"
                entry["error"] = str(exc)
            else:
                s = run_summary(run)
                ident = s["target_identity"]
                entry.update(
                    status=s["status"],
                    model=ident.get("model"),
                    serial=ident.get("serial"),
                    headline=headline(run),
                    tests=[
                        {
                            "name": t["name"],
                            "status": t["status"],
                            "steady_state": t["steady_state"],
                            "rounds": t["rounds"],
                            "window": t["window"],
                        }
                        for t in s["tests"]
                    ],
                )
                if run.checks is not None:
                    c = run.checks
                    entry["checks"] = {
                        "passed": c.passed,
                        "count": c.count,
                        "failed": [i.name for i in c.checks if not i.passed],
                    }
        drives.append(entry)
    comparison = root / "comparison.pdf"
    return {
        "fleet_dir": str(root),
        "format": FORMAT,
        "version": VERSION,
        "profile": rec.profile,
        "host": rec.host,
        "started": rec.started,
        "ended": rec.ended,
        "exit_code": rec.exit_code,
        "outcome": outcome(rec.exit_code),
        "resumes": rec.resumes,
        "comparison": str(comparison) if comparison.is_file() else None,
        "drives": drives,
    }


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def format_fleet(s: dict[str, Any]) -> str:
    lines = [
        f"Fleet     {s['fleet_dir']}  [{s['outcome']}, exit code {s['exit_code']}]",
        f"Profile   {s['profile']}   host {s['host']}   {len(s['drives'])} drive(s)",
    ]
    for d in s["drives"]:
        lines.append("")
        ident = (d.get("model"), d.get("serial"))
        who = " ".join(x for x in ident if x and x != "unknown") or d["kind"]
        lines.append(
            f"{d['name']}: {d['outcome']} (exit {d['exit_code']}), run {d['status']}  "
            f"[{d['target']}; {who}]"
        )
        if d.get("error"):
            lines.append(f"  error     {d['error']}")
        for t in d["tests"]:
            steady = {True: "steady", False: "not steady", None: "-"}.get(t["steady_state"], "-")
            lines.append(f"  {t['name']:<10} {t['rounds']} round(s), {steady} [{t['status']}]")
        for k, v in d["headline"].items():
            lines.append(f"  {k:<32} {_num(v)}")
        c = d.get("checks")
        if c is not None and c["count"]:
            verdict = "PASS" if c["passed"] else "FAIL: " + ", ".join(c["failed"])
            lines.append(f"  checks    {verdict} ({c['count'] - len(c['failed'])} of {c['count']})")
    if s.get("comparison"):
        lines += ["", f"Comparison {s['comparison']}"]
    return "\n".join(lines)


# ------------------------------------------------------------------ plan: the host


_PCI = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def pci_path(spec: str, sys_root: Path = Path("/sys")) -> list[str]:
    """The PCI functions from the root port down to the block device's controller,
    read from ``/sys/block/X/device`` (empty for files, loop devices, NBD)."""
    name = Path(os.path.realpath(spec)).name
    dev = sys_root / "block" / name / "device"
    try:
        real = os.path.realpath(dev) if dev.exists() else ""
    except OSError:
        return []
    return [p for p in Path(real).parts if _PCI.match(p)]


def sharing_warnings(specs: Sequence[str], sys_root: Path = Path("/sys")) -> list[str]:
    """Drives behind one controller, or one PCIe link, where sysfs shows it: their
    results depend on each other's load."""
    paths = {s: pci_path(s, sys_root) for s in specs}
    out = []
    items = [(s, p) for s, p in paths.items() if p]
    for i, (a, pa) in enumerate(items):
        for b, pb in items[i + 1 :]:
            if pa[-1] == pb[-1]:
                out.append(f"{a} and {b} share the controller {pa[-1]}")
                continue
            common: list[str] = []
            for x, y in zip(pa, pb, strict=False):
                if x != y:
                    break
                common.append(x)
            if common:
                out.append(f"{a} and {b} share the PCIe link of {common[-1]}")
    return out


def oversubscription(jobs_per_drive: Sequence[int], cores: int) -> str | None:
    total = sum(jobs_per_drive)
    if total > cores:
        return (
            f"the host is oversubscribed: {total} fio jobs at once "
            f"({' + '.join(str(j) for j in jobs_per_drive)}) on {cores} CPU core(s); "
            "the drives' results would measure the CPUs"
        )
    return None


def fio_jobs(plan: Any) -> int:
    """The most fio jobs one run of ``plan`` has at once (a point or preconditioning)."""
    most = 1
    for t in plan.tests:
        for p in t.points:
            most = max(most, p.numjobs)
        if t.precondition is not None:
            most = max(most, t.precondition.numjobs)
    return most


def cpu_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
