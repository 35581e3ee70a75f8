"""Commands that read a history or a run directory change nothing and wait on nothing:
no ``-wal``/``-shm``/``-journal`` beside a history they list; a FIFO or a device node
where a database or a run directory is expected refused at once, in one line (each
command in a real process, bounded by a timeout: before the fix it waited forever on
a FIFO nobody writes); another application's SQLite database refused as "not a
tkbench history" by every history command, ``history prune`` included, and left
byte for byte as it was."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests._rundir_outputs import RUNDIRS
from tkbench import cli

ROOT = Path(__file__).resolve().parents[1]
RUN = RUNDIRS / "file-a"


def tkbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TKBENCH_HISTORY", None)
    return subprocess.run(
        [sys.executable, "-m", "tkbench", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def listings(history: Path, out: Path) -> list[list[str]]:
    h = ["--history", str(history)]
    return [
        ["history", *h],
        ["history", *h, "--json"],
        ["history", "prune", "--yes", *h],
        ["dashboard", *h, "--out", str(out)],
    ]


@pytest.fixture
def wal_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A history with one run, switched to WAL mode (as another tool may leave it)."""
    h = tmp_path / "hist" / "h.sqlite"
    assert cli.main(["history", "--history", str(h), "--add", str(RUN)]) == 0
    capsys.readouterr()
    with sqlite3.connect(h) as con:
        assert con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    con.close()
    assert sorted(os.listdir(h.parent)) == ["h.sqlite"]
    return h


def test_listings_leave_no_side_files(
    wal_history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = os.listdir(wal_history.parent)
    data = wal_history.read_bytes()
    for argv in listings(wal_history, tmp_path / "site")[:2]:
        assert cli.main(argv) == 0, argv
        assert "regular file" in capsys.readouterr().out  # the run is listed
    assert cli.main(["show", str(RUN)]) == 0
    assert cli.main(["compare", str(RUN), str(RUN)]) == 0
    assert cli.main(["dashboard", "--history", str(wal_history), "--out", str(tmp_path / "s")]) == 0
    assert os.listdir(wal_history.parent) == before
    assert wal_history.read_bytes() == data


@pytest.mark.parametrize("kind", ["fifo", "null", "zero"])
def test_a_node_given_as_a_history_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    node = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(node)
    else:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3 if kind == "null" else 5))
    for argv in [*listings(node, tmp_path / "site"), ["history", "import", str(RUN)]]:
        if argv[-1] == str(RUN):
            argv = [*argv, "--history", str(node)]
        done = tkbench(*argv, cwd=tmp_path)
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.count("\n") == 1 and "not a regular file" in done.stderr
    assert not (tmp_path / "site").exists()
    assert sorted(os.listdir(tmp_path)) == [kind]


@pytest.mark.parametrize("command", ["show", "compare", "export", "report", "history --add"])
def test_a_fifo_given_as_a_run_directory_is_refused_at_once(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    argv = [*command.split(), str(fifo)]
    if command == "history --add":
        argv += ["--history", str(tmp_path / "h.sqlite")]
    done = tkbench(*argv, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize(
    "table",
    [
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT)",
        # a table of the same name with some of tkbench's columns, and a version of its own
        "CREATE TABLE runs (run_dir TEXT, started REAL, status TEXT, notes TEXT)",
    ],
)
def test_another_applications_database_is_not_a_history(
    tmp_path: Path, table: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "app.sqlite"
    with sqlite3.connect(db) as con:
        con.execute(table)
        con.execute("INSERT INTO runs DEFAULT VALUES")
        con.execute("PRAGMA user_version = 3")
    con.close()
    data = db.read_bytes()
    for argv in [
        *listings(db, tmp_path / "site"),
        ["history", "import", str(RUN), "--history", str(db)],
        ["history", "--history", str(db), "--add", str(RUN)],
    ]:
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not a tkbench history" in err, err
    assert db.read_bytes() == data
    assert sorted(os.listdir(tmp_path)) == ["app.sqlite"]


def test_a_run_directory_copy_is_still_listed(tmp_path: Path) -> None:
    """The refusals above refuse no history: an ordinary one is listed and pruned."""
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    h = tmp_path / "h.sqlite"
    assert tkbench("history", "--history", str(h), "--add", str(run), cwd=tmp_path).returncode == 0
    shutil.rmtree(run)
    done = tkbench("history", "prune", "--yes", "--history", str(h), cwd=tmp_path)
    assert done.returncode == 0 and "dropped 1 entry" in done.stdout


def test_compare_gives_every_row_its_unit() -> None:
    """compare's table says what each number is in (a review found "bw 781.8" and
    "lat_mean 0.2543" without a unit)."""
    runs = [str(RUNDIRS / "file-a"), str(RUNDIRS / "file-b")]
    done = subprocess.run(
        [sys.executable, "-m", "tkbench", "compare", *runs],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    rows = [ln.split() for ln in done.stdout.splitlines() if ln.split()[:1] in (["iops"],
            ["throughput"], ["latency"])]  # fmt: skip
    units = {(r[0], r[3], r[4]) for r in rows}
    assert ("throughput", "bw", "MB/s") in units and ("latency", "lat_mean", "ms") in units
    assert ("iops", "iops", "IOPS") in units and ("latency", "p99.99", "ms") in units
