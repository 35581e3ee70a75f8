"""The run directory: a versioned manifest and one record per round.

Layout (docs/run-directory.md describes every file)::

    RUN/manifest.json                 schema, versions, host, target, profile, status
    RUN/events.log                    human-readable, timestamped log (append-only)
    RUN/target.json                   a file target's identity and digest when the writes ended
    RUN/tests/<test>/test.json        the planned test (points, tracking, limits)
    RUN/tests/<test>/purge.json       purge record
    RUN/tests/<test>/health-before.json, health-after.json  SMART/health snapshots (block devices)
    RUN/tests/<test>/precondition.json (+ .fio job file, .out raw fio output)
    RUN/tests/<test>/histogram.json    (+ .fio, .out) the response-time histogram phase
    RUN/tests/<test>/rounds/0001.json (+ 0001.fio, 0001.out; a copy test: 0001.log)
    RUN/tests/<test>/rounds/0001.parts/01.json (+ .fio, .out) a stage run in parts:
                                      one per point, stored as it ends
    RUN/tests/<test>/result.json      the test's verdict, once it has finished

Every JSON file is written atomically (temp file, fsync, rename, fsync of the
directory), so a reader never sees a half-written file, whatever instant the
writer dies.  Raw fio output and the job file are written before the round's
record, which is what makes a round count as complete.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from tkbench.device.cacherecord import WriteCacheRecord
from tkbench.errors import RunDirError
from tkbench.rundir import writecache
from tkbench.rundir.jsonfile import read_json, write_atomic, write_json
from tkbench.rundir.records import (
    SCHEMA,
    Checks,
    Context,
    Failure,
    Manifest,
    Precondition,
    Purge,
    Record,
    ResponseHistogram,
    Result,
    Round,
    TargetState,
    TestPlan,
)
from tkbench.units import timestamp

__all__ = ["SCHEMA", "RunData", "RunStore", "TestData", "load_run"]

R = TypeVar("R")
MANIFEST = "manifest.json"
TARGET_STATE = "target.json"  # the data a regular-file target was left with (resume proof)
_ROUND_RE = re.compile(r"^(\d{4,})\.json$")
PARTS_SUFFIX = ".parts"  # rounds/0001.parts/: the parts of a stage run in parts


def check_output_file(path: Path, what: str) -> None:
    """Refuse, before any work, an output file that could not be written: a directory,
    a place under a file, no write permission.  Missing parent directories are fine
    (they are made when the file is written); this leaves nothing behind."""
    from tkbench.errors import InputError

    path = Path(path)
    if path.is_dir():
        raise InputError(f"{what} {path} is a directory; give a file name")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"{what} {path}: no write permission")
    check_creatable(path, what)


def check_creatable(path: Path, what: str) -> None:
    """Refuse a path whose nearest existing ancestor is no directory a file can be
    created in (a probe file is created there and removed at once)."""
    from tkbench.errors import InputError

    parent = Path(path).absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{what} {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK):
        raise InputError(f"{what} {path}: no write permission in {parent}")
    # permissions are not everything (/proc, /sys, a full or odd filesystem): try it
    try:
        fd, probe = tempfile.mkstemp(prefix=".tkbench-probe-", dir=parent)
    except OSError as exc:
        raise InputError(
            f"{what} {path}: cannot create a file in {parent}: {exc.strerror}"
        ) from None
    os.close(fd)
    os.unlink(probe)


def _count_parts(d: Path) -> int:
    """How many parts of a stage run in parts are stored (``01.json``, ``02.json``, ...)."""
    n = 0
    while (d / f"{n + 1:02d}.json").is_file():
        n += 1
    return n


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise RunDirError(f"{path}: cannot read: {exc.strerror or exc}") from None


@dataclass
class TestData:
    """Everything stored for one test of a run."""

    name: str
    plan: TestPlan
    purge: Purge | None = None
    precondition: Precondition | None = None
    rounds: list[Round] = field(default_factory=list)
    result: Result | None = None
    # what the device reported about its health (keys depend on the device)
    health_before: Mapping[str, Any] | None = None
    health_after: Mapping[str, Any] | None = None
    # histogram.json: the response-time histogram phase after the rounds, if it ran
    response_histogram: ResponseHistogram | None = None
    # a stage run in parts: how many of its parts are stored (0: not run in parts)
    parts: int = 0

    @property
    def finished(self) -> bool:
        return self.result is not None

    @property
    def status(self) -> str:
        """complete | running or interrupted (rounds or parts stored) | started."""
        if self.finished:
            return "complete"
        return "running or interrupted" if self.rounds or self.parts else "started"


@dataclass
class RunData:
    """A run directory read back."""

    root: Path
    manifest: Manifest
    tests: list[TestData]
    checks: Checks | None = None  # checks.json: PASS/FAIL of acceptance and regressions

    @functools.cached_property
    def write_cache(self) -> WriteCacheRecord | None:
        """``write-cache.json``, read (and checked) the first time it is asked for;
        None for runs made before tkbench set the write cache."""
        return writecache.load(self.root)

    def test(self, name: str) -> TestData:
        for t in self.tests:
            if t.name == name:
                return t
        raise KeyError(name)


class RunStore:
    """Writes (and re-reads) one run directory."""

    def __init__(self, root: Path) -> None:
        # absolute: fio and the hand-off run in scratch directories below it
        self.root = Path(root).absolute()

    # ----------------------------------------------------------------- creation
    @staticmethod
    def check_new(root: Path) -> None:
        """Refuse a place where a new run directory cannot be made (creates nothing)."""
        from tkbench.fiovalue import check_value

        root = Path(root)
        # fio's exec_prerun/postrun name scratch paths below the run directory
        check_value(str(root.absolute()), "run directory")
        if root.exists() and not root.is_dir():
            raise RunDirError(f"{root}: exists and is not a directory")
        if (root / MANIFEST).exists():
            raise RunDirError(
                f"{root}: already holds a run (use --resume {root} to continue it, "
                "or choose another --out)"
            )
        if root.exists() and any(root.iterdir()):
            raise RunDirError(f"{root}: directory is not empty; choose another --out")
        if root.exists():
            if not os.access(root, os.W_OK):
                raise RunDirError(f"{root}: no write permission")
        else:
            check_creatable(root, "run directory")

    @classmethod
    def create(cls, root: Path, manifest: Manifest) -> RunStore:
        root = Path(root)
        cls.check_new(root)
        try:
            root.mkdir(parents=True, exist_ok=True)
            # claim the directory: only one run can create its manifest
            fd = os.open(root / MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise RunDirError(
                f"{root}: another run claimed this directory; choose another --out"
            ) from None
        except OSError as exc:
            raise RunDirError(f"{root}: cannot create: {exc.strerror}") from None
        os.close(fd)
        store = cls(root)
        write_record(root / MANIFEST, manifest)
        return store

    @classmethod
    def open(cls, root: Path) -> RunStore:
        check_manifest(Path(root))
        return cls(Path(root))

    # ----------------------------------------------------------------- paths
    def test_dir(self, test: str) -> Path:
        return self.root / "tests" / test

    # ----------------------------------------------------------------- writing
    def manifest(self) -> Manifest:
        return check_manifest(self.root)

    def update_manifest(self, **fields: Any) -> Manifest:
        """Replace some of the manifest's fields (names of :class:`Manifest`)."""
        data = replace(self.manifest(), **fields)
        write_record(self.root / MANIFEST, data)
        return data

    def log(self, message: str) -> None:
        """Append a timestamped line to events.log (for people; not read back as data)."""
        stamp = timestamp()
        try:
            with (self.root / "events.log").open("a", encoding="utf-8") as fh:
                fh.write(f"{stamp} {message}\n")
        except OSError:
            pass

    def save_test_plan(self, test: str, plan: TestPlan) -> None:
        write_record(self.test_dir(test) / "test.json", plan)

    def add_test_note(self, test: str, note: str) -> None:
        """One more of the test's notes in its ``test.json`` (the report lists them): what
        happened while it ran that its reader should know (a round run again)."""
        self._update_plan(test, lambda plan: replace(plan, notes=(*plan.notes, note)))

    def add_stalled_part(self, test: str, part: int) -> None:
        """Part ``part`` of the test's stage run in parts stalled and runs again
        (``stalled_parts`` in its ``test.json``: the conformance judgement reads it)."""
        self._update_plan(
            test, lambda plan: replace(plan, stalled_parts=(*plan.stalled_parts, part))
        )

    def _update_plan(self, test: str, change: Callable[[TestPlan], TestPlan]) -> None:
        path = self.test_dir(test) / "test.json"
        context = Context(target_kind=self.manifest().target.kind)
        plan = _read_optional(path, TestPlan, context)
        if plan is not None:
            write_record(path, change(plan))

    def save_phase(
        self,
        test: str,
        phase: str,
        record: Record,
        raw: str | None = None,
        jobfile: str | None = None,
    ) -> None:
        d = self.test_dir(test)
        if jobfile is not None:
            write_atomic(d / f"{phase}.fio", jobfile)
        if raw is not None:
            write_atomic(d / f"{phase}.out", raw)
        write_record(d / f"{phase}.json", record)

    def save_health(self, test: str, name: str, snapshot: Mapping[str, Any]) -> None:
        """A health snapshot, as the device reported it (not a record: its keys are
        the device's)."""
        write_json(self.test_dir(test) / f"{name}.json", dict(snapshot))

    def save_round(self, test: str, record: Round, raw: str, jobfile: str) -> None:
        self._save_round(test, record, {"fio": jobfile, "out": raw})

    def save_copy_round(self, test: str, record: Round, log: str) -> None:
        """A copy test's round (tkbench.kinds.copyrun): no fio job or output, but the log of
        its copies (``NNNN.log``)."""
        self._save_round(test, record, {"log": log})

    def _save_round(self, test: str, record: Round, beside: Mapping[str, str]) -> None:
        """``NNNN.<suffix>`` for each of the round's files, then the record that
        completes the round (a round without its ``.json`` was never stored)."""
        d = self.test_dir(test) / "rounds"
        stem = f"{record.round:04d}"
        for suffix, text in beside.items():
            write_atomic(d / f"{stem}.{suffix}", text)
        write_record(d / f"{stem}.json", record)

    # a stage run in parts (PlannedTest.in_parts): rounds/0001.parts/NN.{fio,out,json}
    def _parts_dir(self, test: str) -> Path:
        return self.test_dir(test) / "rounds" / f"{1:04d}{PARTS_SUFFIX}"

    def save_part(self, test: str, number: int, record: Round, raw: str, jobfile: str) -> None:
        """One part of a stage run in parts: its job file and output, then the record
        (a part without its ``.json`` was never stored)."""
        d = self._parts_dir(test)
        stem = f"{number:02d}"
        write_atomic(d / f"{stem}.fio", jobfile)
        write_atomic(d / f"{stem}.out", raw)
        write_record(d / f"{stem}.json", record)

    def load_parts(self, test: str) -> list[Round]:
        """The stored parts of a stage run in parts, from the first, as long as they
        follow each other (``01``, ``02``, ...)."""
        d = self._parts_dir(test)
        parts: list[Round] = []
        while (f := d / f"{len(parts) + 1:02d}.json").exists():
            parts.append(Round.load(read_json(f), f))
        return parts

    def save_lead_in(self, test: str, number: int, record: Round, raw: str, jobfile: str) -> None:
        """Part ``number`` run again after a resume or a stall of the part after it, as
        that part's lead-in (``lead-in-<time>-NN.*``): kept as evidence, never read as the part."""
        d = self._parts_dir(test)
        stem = f"lead-in-{time.strftime('%Y%m%dT%H%M%S')}-{number:02d}"
        write_atomic(d / f"{stem}.fio", jobfile)
        write_atomic(d / f"{stem}.out", raw)
        write_record(d / f"{stem}.json", record)

    def save_round_of_parts(self, test: str, record: Round, count: int) -> None:
        """The round a stage's ``count`` stored parts form: its ``.fio`` and ``.out``
        are the parts' files one after the other, each under a line naming it (the
        parts' own files stay beside it)."""
        d = self._parts_dir(test)
        texts: dict[str, list[str]] = {"fio": [], "out": []}
        for k in range(1, count + 1):
            for suffix, out in texts.items():
                name = f"{d.name}/{k:02d}.{suffix}"
                out.append(f"# part {k} of {count}: {name}\n{_read_text(d / f'{k:02d}.{suffix}')}")
        self._save_round(test, record, {s: "\n".join(t) for s, t in texts.items()})

    def update_round(self, test: str, record: Round) -> None:
        """Rewrite a stored round's record (its ``.fio`` and ``.out`` stay): for what is
        learnt only once it is stored, such as the drive's temperature after it."""
        path = self.test_dir(test) / "rounds" / f"{record.round:04d}.json"
        if not path.exists():
            raise RunDirError(f"{path}: no such round to update")
        write_record(path, record)

    def save_failure(self, test: str, name: str, raw: str, jobfile: str, info: Failure) -> None:
        """Keep what a failed fio run printed (not a round: never read as data)."""
        d = self.test_dir(test) / "failed"
        write_atomic(d / f"{name}.fio", jobfile)
        write_atomic(d / f"{name}.out", raw)
        write_record(d / f"{name}.json", info)

    def save_result(self, test: str, result: Result) -> None:
        write_record(self.test_dir(test) / "result.json", result)

    def save_target_state(self, state: TargetState) -> None:
        """``target.json``, written atomically (the resume's proof of a file target)."""
        write_record(self.root / TARGET_STATE, state)

    def target_state(self) -> TargetState | None:
        """``target.json`` as last written; None for runs made before it was kept."""
        return _read_optional(self.root / TARGET_STATE, TargetState)

    # ----------------------------------------------------------------- reading
    def load(self) -> RunData:
        return load_run(self.root)


def write_record(path: Path, record: Record) -> None:
    write_json(path, record.to_json())


def check_manifest(root: Path) -> Manifest:
    """Read and check a manifest; refuse foreign, corrupt or newer-schema runs."""
    if not root.exists():
        raise RunDirError(f"{root}: no such run directory")
    if not root.is_dir():
        raise RunDirError(f"{root}: not a directory")
    path = root / MANIFEST
    if not path.exists():
        raise RunDirError(f"{root}: not a tkbench run directory (no {MANIFEST})")
    return Manifest.load_checked(read_json(path), path)


def _read_optional(path: Path, cls: type[R], context: Context | None = None) -> R | None:
    if not path.exists():
        return None
    record: R = cls.load(read_json(path), path, context)  # type: ignore[attr-defined]
    return record


def _read_health(path: Path) -> Mapping[str, Any] | None:
    if not path.exists():
        return None
    data = read_json(path)
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: the file is not a JSON object")
    return data


def load_run(root: Path) -> RunData:
    """Read a run directory back into memory (records only, not raw fio output)."""
    root = Path(root)
    manifest = check_manifest(root)
    context = Context(target_kind=manifest.target.kind)
    tests: list[TestData] = []
    names = list(manifest.tests)
    tdir = root / "tests"
    if tdir.is_dir():
        for d in sorted(tdir.iterdir()):
            if d.is_dir() and d.name not in names:
                names.append(d.name)
    for name in names:
        d = tdir / name
        plan = _read_optional(d / "test.json", TestPlan, context)
        if plan is None:
            continue  # planned but never started
        rounds: list[Round] = []
        rdir = d / "rounds"
        if rdir.is_dir():
            for f in sorted(rdir.iterdir()):
                if _ROUND_RE.match(f.name):
                    rounds.append(Round.load(read_json(f), f))
        rounds.sort(key=lambda r: r.round)
        tests.append(
            TestData(
                name=name,
                plan=plan,
                purge=_read_optional(d / "purge.json", Purge),
                precondition=_read_optional(d / "precondition.json", Precondition),
                rounds=rounds,
                result=_read_optional(d / "result.json", Result),
                health_before=_read_health(d / "health-before.json"),
                health_after=_read_health(d / "health-after.json"),
                response_histogram=_read_optional(d / "histogram.json", ResponseHistogram),
                parts=_count_parts(rdir / f"{1:04d}{PARTS_SUFFIX}"),
            )
        )
    return RunData(
        root=root,
        manifest=manifest,
        tests=tests,
        checks=_read_optional(root / "checks.json", Checks),
    )
