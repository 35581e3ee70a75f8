"""The history on both backends: an SQLite file and a real PostgreSQL server.

Same entries from the same run directories (the kept runs of tests/data/rundirs/
and their golden history), import idempotent by run UUID, prune, the upgrade of a
version-1 SQLite history in place, concurrent writers, the system-wide default for
root, and every unusable history as one line and exit 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests import _rundir_outputs as outputs
from tests._postgres import PASSWORD, Server
from tkbench import cli, history
from tkbench.engine.runs import check_outputs, finish_checks
from tkbench.errors import InputError

RUNDIRS = outputs.RUNDIRS
KEPT = [RUNDIRS / r for r in outputs.RUNS]

# The runs table as tkbench wrote it at history version 1 (and, unstamped, version 0).
V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_dir   TEXT PRIMARY KEY,
    started   REAL,
    ended     REAL,
    status    TEXT,
    profile   TEXT,
    host      TEXT,
    target    TEXT,
    model     TEXT,
    serial    TEXT,
    firmware  TEXT,
    capacity  INTEGER,
    headline  TEXT,
    checks    TEXT
);
CREATE INDEX IF NOT EXISTS runs_drive ON runs (model, serial, started);
"""


def tk(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def listed(location: str, capsys: pytest.CaptureFixture[str], *extra: str) -> list[Any]:
    code, out, err = tk(["history", "--history", location, "--json", *extra], capsys)
    assert code == 0, err
    data: list[Any] = json.loads(out)
    return data


def refused_one_line(argv: list[str], capsys: pytest.CaptureFixture[str], match: str) -> str:
    code, out, err = tk(argv, capsys)
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("tkbench: error: "), err
    assert match in err, err
    assert "Traceback" not in err
    return err


def copy_run(src: Path, dst: Path, run_id: str | None = None) -> Path:
    """A copy of a kept run directory (as copied from another rig), with a run UUID."""
    shutil.copytree(src, dst)
    if run_id is not None:
        manifest = dst / "manifest.json"
        data = json.loads(manifest.read_text())
        data["run_id"] = run_id
        manifest.write_text(json.dumps(data))
    return dst


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty history of each backend."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("pg_url")
        return url
    return str(tmp_path / "h.sqlite")


# --------------------------------------------------------------------------- both backends


@pytest.mark.postgres
def test_kept_runs_give_the_same_entries_on_both_backends(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lite = str(tmp_path / "h.sqlite")
    for where in (lite, pg_url):
        code, out, err = tk(["history", "import", "--history", where, *map(str, KEPT)], capsys)
        assert code == 0, err
        assert out.strip().endswith("4 new, 0 already there")
    from_sqlite, from_postgres = listed(lite, capsys), listed(pg_url, capsys)
    assert from_postgres == from_sqlite  # every key and value, in the same order
    golden = outputs.golden("history-all")
    assert outputs.differences(golden, outputs.normalise("history", from_postgres)) == []
    assert (
        tk(["history", "--history", lite], capsys)[1]
        == tk(["history", "--history", pg_url], capsys)[1]
    )
    # the filters, on both
    for where in (lite, pg_url):
        emu = listed(where, capsys, "--model", "tkbench SSD emulator")
        assert [Path(e["run_dir"]).name for e in emu] == ["emu"]
        assert listed(where, capsys, "--serial", "unknown") == []
        drive = "/tmp/tkbench-rundirs/drive.img on vm, filesystem not recorded"
        assert len(listed(where, capsys, "--serial", drive)) == 2  # file-a, file-b
        assert listed(where, capsys, "--since", "2026-11-25") == []
        assert len(listed(where, capsys, "--since", "2026-11-22")) == 4
        first = min(e["started"] for e in from_sqlite)
        later = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(first + 1))
        assert len(listed(where, capsys, "--since", later)) == 3


def test_import_is_idempotent_by_run_uuid(
    location: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rid = str(uuid.uuid4())
    a = copy_run(RUNDIRS / "file-a", tmp_path / "rig1" / "night1", rid)
    b = copy_run(RUNDIRS / "file-b", tmp_path / "rig1" / "night2")  # made before run ids
    code, out, err = tk(
        ["history", "import", "--history", location, "--rig", "rig1", str(a), str(b)], capsys
    )
    assert (code, out.strip().split(": ")[-1]) == (0, "2 new, 0 already there"), err
    first = listed(location, capsys)
    assert [(e.get("run_id"), e["rig"]) for e in first] == [(rid, "rig1"), (None, "rig1")]
    assert "run_id" not in first[1]  # no id is made up for a run without one

    # again, without a rig name: nothing changes (the rig is kept)
    code, out, _ = tk(["history", "import", "--history", location, str(a), str(b)], capsys)
    assert (code, out.strip().split(": ")[-1]) == (0, "0 new, 2 already there")
    assert listed(location, capsys) == first

    # the same run copied elsewhere is the same entry, now at its new place
    moved = copy_run(a, tmp_path / "archive" / "night1")
    assert tk(["history", "import", "--history", location, str(moved)], capsys)[0] == 0
    now = listed(location, capsys)
    assert len(now) == 2
    assert now[0]["run_dir"] == str(moved.resolve()) and now[0]["run_id"] == rid
    # --add is an alias that lists afterwards
    code, out, _ = tk(["history", "--history", location, "--add", str(b), "--json"], capsys)
    assert code == 0 and json.loads(out) == now

    # checks stored when a run was indexed after it ran are kept by a later import
    from tkbench.rundir.records import CheckItem, Checks
    from tkbench.rundir.store import load_run

    checks = Checks(passed=False, count=1, failed=1, checks=(CheckItem(name="x", passed=False),))
    history.open_history(location).add(load_run(moved), checks, rig="rig1")
    assert tk(["history", "import", "--history", location, str(moved)], capsys)[0] == 0
    kept = listed(location, capsys)[0]
    assert kept["checks"]["passed"] is False and kept["checks"]["count"] == 1
    assert "FAIL" in tk(["history", "--history", location], capsys)[1]


def test_prune_drops_entries_whose_run_directories_are_gone(
    location: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    import io

    runs = [copy_run(RUNDIRS / "file-a", tmp_path / f"r{i}", str(uuid.uuid4())) for i in range(3)]
    assert tk(["history", "import", "--history", location, *map(str, runs)], capsys)[0] == 0
    shutil.rmtree(runs[1])

    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # no terminal
    refused_one_line(["history", "prune", "--history", location], capsys, "give --yes")
    assert len(listed(location, capsys)) == 3

    # an entry indexed on another host: its path means nothing here, it stays
    other = copy_run(RUNDIRS / "file-b", tmp_path / "other")
    assert tk(["history", "import", "--history", location, str(other)], capsys)[0] == 0
    _set_indexed_on(location, str(other.resolve()), "another-rig")
    shutil.rmtree(other)

    code, out, err = tk(["history", "prune", "--history", location, "--yes"], capsys)
    assert code == 0, err
    assert out == f"dropped 1 entry from {_shown(location)}\n"
    assert "1 entry indexed on other hosts left alone" in err
    left = {Path(e["run_dir"]).name for e in listed(location, capsys)}
    assert left == {"r0", "r2", "other"}
    code, out, _ = tk(["history", "prune", "--history", location, "--yes"], capsys)
    assert code == 0 and out.startswith(f"nothing to prune in {_shown(location)}: ")


def _shown(location: str) -> str:
    return location.replace(PASSWORD, "***")


def _set_indexed_on(location: str, run_dir: str, host: str) -> None:
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location) as con:
            con.execute("UPDATE runs SET indexed_on = %s WHERE run_dir = %s", [host, run_dir])
    else:
        with sqlite3.connect(location) as con:
            con.execute("UPDATE runs SET indexed_on = ? WHERE run_dir = ?", [host, run_dir])


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) from bsdutils")
def test_prune_asks_on_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "h.sqlite")
    run = copy_run(RUNDIRS / "emu", tmp_path / "gone")
    assert tk(["history", "import", "--history", db, str(run)], capsys)[0] == 0
    shutil.rmtree(run)
    cmd = f"{sys.executable} -m tkbench history prune --history {db}"
    for answer, left in (("n", 1), ("y", 0)):
        done = subprocess.run(
            ["script", "-qec", cmd, "/dev/null"],
            input=f"{answer}\n",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stdout
        assert "drop these 1 entry, whose run directories are gone? [y/N]" in done.stdout
        assert str(run.resolve()) in done.stdout  # what would go is shown first
        assert len(listed(db, capsys)) == left


# --------------------------------------------------------------------------- SQLite versions


def _v1_history(path: Path, version: int = 1) -> None:
    """A history as tkbench wrote it at ``version`` (1, or 0: unstamped), with file-a."""
    with sqlite3.connect(path) as con:
        con.executescript(V1_SCHEMA)
        con.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                str((RUNDIRS / "file-a").resolve()),
                1795424900.1787658,
                1795424912.1084435,
                "complete",
                "quick",
                "vm",
                "drive.img",
                "regular file",
                "unknown",
                "unknown",
                16777216,
                json.dumps({"iops: iops 4k 0/100": 27262.491174333332}),
                json.dumps({"passed": True, "count": 0}),
            ],
        )
        if version:
            con.execute(f"PRAGMA user_version = {version}")


@pytest.mark.parametrize("version", [1, 0])
def test_an_older_sqlite_history_is_read_as_is_and_upgraded_on_first_write(
    version: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "old.sqlite"
    _v1_history(db, version)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    (old,) = listed(str(db), capsys)  # listing reads the old format and writes nothing
    assert old["headline"] == {"iops: iops 4k 0/100": 27262.491174333332}
    assert "rig" not in old and "run_id" not in old
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before

    rid = str(uuid.uuid4())
    b = copy_run(RUNDIRS / "file-b", tmp_path / "b", rid)
    code, _, err = tk(["history", "import", "--history", str(db), "--rig", "r", str(b)], capsys)
    assert code == 0, err
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == history.HISTORY_VERSION == 5
        columns = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
        assert columns[-5:] == ["rig", "run_id", "indexed_on", "repeats", "volume"]
        indexes = [r[1] for r in con.execute("PRAGMA index_list(runs)")]
        assert "runs_run_id" in indexes
    entries = listed(str(db), capsys)
    # the old entry, untouched but for the serial of its file (history version 5)
    assert entries[0] == {
        **old,
        "serial": "/tmp/tkbench-rundirs/drive.img on vm, filesystem not recorded",
    }
    assert (entries[1]["run_id"], entries[1]["rig"]) == (rid, "r")


def test_a_newer_or_foreign_sqlite_history_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "new.sqlite"
    _v1_history(db, history.HISTORY_VERSION + 1)
    for argv in (["history"], ["history", "import", str(RUNDIRS / "emu")]):
        refused_one_line([*argv, "--history", str(db)], capsys, "written by a newer tkbench")
    foreign = tmp_path / "other.sqlite"
    with sqlite3.connect(foreign) as con:
        con.execute("CREATE TABLE invoices (n INTEGER)")
    for argv in (["history"], ["history", "import", str(RUNDIRS / "emu")]):
        refused_one_line([*argv, "--history", str(foreign)], capsys, "not a tkbench history")
    with sqlite3.connect(foreign) as con:  # nothing was added to it
        assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["invoices"]


# --------------------------------------------------------------------------- PostgreSQL


@pytest.mark.postgres
def test_unusable_postgres_histories_are_one_line_and_exit_2(
    pg_server: Server, pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emu = str(RUNDIRS / "emu")
    sock = pg_server.dir
    bad = {
        "bad URL: port 'notaport'": f"postgresql://tkbench@/x?host={sock}&port=notaport",
        "bad URL: end of string reached": "postgresql://u:wrong-pw@[::1/db",
        "No such file or directory": f"postgres://tkbench@/x?host={tmp_path}",  # no server
        "password authentication failed": pg_server.url("postgres", password="wrong-pw"),
        'database "nosuch" does not exist': pg_server.url("nosuch"),
    }
    for match, url in bad.items():
        for argv in (["history"], ["history", "import", emu], ["history", "prune", "--yes"]):
            err = refused_one_line([*argv, "--history", url], capsys, match)
            assert "wrong-pw" not in err  # a password is never shown
    with pytest.raises(InputError, match="password authentication failed"):
        check_outputs(history_db=pg_server.url("postgres", password="wrong-pw"))

    # a database with tables of its own is no history: refused, never written into
    pg_server.sql("CREATE TABLE invoices (n integer)", db=pg_url.split("/")[3].split("?")[0])
    for argv in (["history"], ["history", "import", emu]):
        refused_one_line([*argv, "--history", pg_url], capsys, "not a tkbench history")
    # the URL's password is not in the message either
    assert PASSWORD not in refused_one_line(["history", "--history", pg_url], capsys, "tables")


@pytest.mark.postgres
def test_a_postgres_history_is_versioned(
    pg_server: Server, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = pg_url.split("/")[3].split("?")[0]
    history_ = history.open_history(pg_url)
    assert listed(pg_url, capsys) == []  # an empty database: no runs, nothing created
    assert pg_server.sql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", name) == [
        (0,)
    ]
    history_.check_usable()
    assert tk(["history", "import", "--history", pg_url, str(RUNDIRS / "emu")], capsys)[0] == 0
    assert pg_server.sql("SELECT version FROM tkbench_schema", name) == [(5,)]
    cols = pg_server.sql(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = 'runs' ORDER BY ordinal_position",
        name,
    )
    stored = ["rig", "run_id", "indexed_on", "repeats", "volume"]
    assert [c for c, _ in cols] == [*history.COLUMNS[:-4], *stored]
    assert dict(cols)["capacity"] == "bigint" and dict(cols)["started"] == "double precision"
    pg_server.sql("UPDATE tkbench_schema SET version = 6", name)
    for argv in (["history"], ["history", "import", str(RUNDIRS / "emu")]):
        refused_one_line([*argv, "--history", pg_url], capsys, "written by a newer tkbench")


CONCURRENT = """
import sys, time
from pathlib import Path
from tkbench.history import open_history
from tkbench.rundir.store import load_run

url, go, dirs = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
runs = [load_run(d) for d in dirs]
history = open_history(url)
while not go.exists():
    time.sleep(0.005)
for run in runs:
    history.add(run, rig=Path(dirs[0]).parent.name)
"""


@pytest.mark.postgres
def test_two_processes_index_runs_into_a_new_postgres_history_at_once(
    pg_server: Server, pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both create and upgrade the new history and then write, at the same moment: the
    writers' lock makes them take turns, nothing is lost, the schema is made once."""
    n = 6
    rigs = {
        rig: [
            copy_run(RUNDIRS / "emu", tmp_path / rig / f"{i}", str(uuid.uuid4())) for i in range(n)
        ]
        for rig in ("rig-a", "rig-b")
    }
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT, pg_url, str(go), *map(str, dirs)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for dirs in rigs.values()
    ]
    time.sleep(1.5)  # both have loaded their runs and are waiting
    go.touch()
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    entries = listed(pg_url, capsys)
    assert len(entries) == 2 * n
    assert {e["rig"] for e in entries} == set(rigs)
    assert {e["run_dir"] for e in entries} == {
        str(d.resolve()) for dirs in rigs.values() for d in dirs
    }
    name = pg_url.split("/")[3].split("?")[0]
    assert pg_server.sql("SELECT version FROM tkbench_schema", name) == [(5,)]


@pytest.mark.postgres
def test_a_history_failure_after_a_run_is_a_warning(pg_server: Server, tmp_path: Path) -> None:
    run = copy_run(RUNDIRS / "file-b", tmp_path / "run", str(uuid.uuid4()))
    down = f"postgresql://tkbench@/x?host={tmp_path}"  # no server there
    done = finish_checks(run, history_db=down, threshold=10)
    assert done.checks.passed  # the run stands
    assert done.history_error is not None
    assert "no regression baseline from the history" in done.history_error
    assert "run not indexed" in done.history_error
    assert (run / "checks.json").exists()
    # a reachable one: indexed with the rig, the baseline found by drive and profile
    url = pg_server.new_database("after_run")
    base = copy_run(RUNDIRS / "file-a", tmp_path / "base", str(uuid.uuid4()))
    assert finish_checks(base, history_db=url, rig="r1").history_error is None
    done = finish_checks(run, history_db=url, threshold=1000, rig="r2")
    assert done.history_error is None
    assert done.checks.baseline == str(base.resolve())
    rows = history.open_history(url).entries()
    assert [(e.rig, e.checks is not None) for e in rows] == [("r1", True), ("r2", True)]


# --------------------------------------------------------------------------- locations


def test_root_indexes_into_the_system_wide_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    system = tmp_path / "var" / "lib" / "tkbench" / "history.sqlite"
    monkeypatch.setattr(history, "SYSTEM_PATH", system)
    monkeypatch.delenv("TKBENCH_HISTORY")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert history.default_location() == str(system)
    old = os.umask(0o077)  # a strict umask: the shared history is readable all the same
    try:
        code, _, err = tk(["history", "import", str(RUNDIRS / "emu")], capsys)
    finally:
        os.umask(old)
    assert code == 0, err
    assert stat.S_IMODE(system.stat().st_mode) == 0o644
    assert stat.S_IMODE(system.parent.stat().st_mode) == 0o755

    # another user keeps a history of their own, and is told where root's runs are
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert history.default_location() == str(tmp_path / "xdg" / "tkbench" / "history.sqlite")
    code, out, err = tk(["history"], capsys)
    assert (code, out) == (0, "no runs in the history\n")
    assert f"root's runs are in {system}" in err
    assert len(listed(str(system), capsys)) == 1


def test_bad_history_locations_and_rig_names_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    refused_one_line(["history", "--history", "mysql://u@h/db"], capsys, "unsupported URL scheme")
    refused_one_line(
        ["history", "import", "--history", "sqlite:///x", str(RUNDIRS / "emu")],
        capsys,
        "unsupported URL scheme 'sqlite'",
    )
    monkeypatch.setenv("TKBENCH_HISTORY", "mysql://u:topsecret@h/db")
    err = refused_one_line(["history"], capsys, "unsupported URL scheme")
    assert "topsecret" not in err
    monkeypatch.setenv("TKBENCH_HISTORY", str(tmp_path / "h.sqlite"))
    refused_one_line(["history", "import", "--rig", " ", str(RUNDIRS / "emu")], capsys, "--rig")
    refused_one_line(["history", "bogus"], capsys, "invalid choice")
    refused_one_line(["history", "--since", "yesterday"], capsys, "not a date")
    # a run refuses a bad rig name or history before it touches anything
    target = tmp_path / "t.img"
    run = ["run", "--target", str(target), "--size", "16M", "--yes", "--out", str(tmp_path / "r")]
    monkeypatch.setenv("TKBENCH_RIG", "bad\x01name")
    refused_one_line(run, capsys, "TKBENCH_RIG")
    monkeypatch.delenv("TKBENCH_RIG")
    refused_one_line(
        [*run, "--history", f"postgresql://tkbench@/x?host={tmp_path}"], capsys, "No such file"
    )
    assert not target.exists()


@pytest.mark.fio
@pytest.mark.postgres
def test_two_runs_index_into_one_postgres_history_with_host_and_rig(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Two invocations of tkbench run, one rig named with --rig, the other with
    TKBENCH_RIG: both in the one history, the second checked against the first."""
    from tests._helpers import TWO_IOPS_ROUNDS, sets

    target = tmp_path / "t.img"
    base = ["run", "--profile", "quick", "--target", str(target), "--yes", "--no-report"]
    base += ["--history", pg_url, "-q", *sets(*TWO_IOPS_ROUNDS)]
    first = [*base, "--size", "16M", "--out", str(tmp_path / "one"), "--rig", "rig-1"]
    assert tk(first, capsys)[0] == 0
    monkeypatch.setenv("TKBENCH_RIG", "rig-2")
    code, _, err = tk(
        [*base, "--out", str(tmp_path / "two"), "--regression-threshold", "99"], capsys
    )
    assert code in (0, 1), err  # 1: a regression beyond 99 % on a loaded machine
    assert "warning" not in err
    entries = listed(pg_url, capsys)
    assert [(Path(e["run_dir"]).name, e["rig"]) for e in entries] == [
        ("one", "rig-1"),
        ("two", "rig-2"),
    ]
    assert all(e["host"] == os.uname().nodename and uuid.UUID(e["run_id"]) for e in entries)
    checks = json.loads((tmp_path / "two" / "checks.json").read_text())
    assert checks["baseline"] == entries[0]["run_dir"]
