"""Regular files and NBD exports as drives of their own in the history and the
dashboard (tkbench.targets's identities; docs/automation.md, "History").

A file's serial is its resolved path on its filesystem's UUID, the same night after
night; an NBD export's is its name and socket.  A history written before (version 4
and older, every file and export of serial ``unknown``) is brought up to version 5
on first write, on both backends: the serials are derived from each run directory's
manifest, or from the target as stored when the directory cannot be read.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import FAST, TWO_IOPS_ROUNDS, old_sqlite_history, sets
from tests._postgres import Server
from tkbench import cli, history
from tkbench.dashboard.model import build
from tkbench.history import schema
from tkbench.targets import open_target
from tkbench.targets.nbd import parse_uri

RUNDIRS = Path(__file__).resolve().parent / "data" / "rundirs"


def tk(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def listed(where: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(tk(["history", "--history", where, "--json"], capsys))
    return data


def drives(entries: list[dict[str, Any]]) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for e in entries:
        out.setdefault((e["model"], e["serial"]), []).append(Path(e["run_dir"]).name)
    return out


# --------------------------------------------------------------------------- new runs


def test_a_file_is_named_by_its_path_and_filesystem_and_an_export_by_name_and_socket(
    tmp_path: Path,
) -> None:
    a, b = tmp_path / "a.img", tmp_path / "b.img"
    for f in (a, b):
        f.write_bytes(b"\0" * 4096)
    ta, tb = open_target(str(a)), open_target(str(b))
    assert ta.identity["model"] == tb.identity["model"] == "regular file"
    assert ta.identity["serial"] != tb.identity["serial"]
    assert ta.identity["serial"].startswith(f"{a.resolve()} on ")
    assert ta.identity["inode"] == a.stat().st_ino
    # the same file opened again (another night) is the same drive
    assert open_target(str(a)).identity["serial"] == ta.identity["serial"]
    # a file still to be created has its serial already (no inode yet)
    new = open_target(str(tmp_path / "c.img"), size=4096, create=True)
    assert (
        new.identity["serial"]
        == f"{tmp_path.resolve() / 'c.img'} on " + (ta.identity["serial"].split(" on ", 1)[1])
    )
    assert parse_uri("nbd+unix:///disk1?socket=/run/x.sock").serial == (
        "export 'disk1' on /run/x.sock"
    )
    assert parse_uri("nbd+unix:///?socket=/run/x.sock").serial == "default export on /run/x.sock"


@pytest.mark.fio
def test_two_files_are_two_drives_in_the_history_and_the_dashboard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "h.sqlite")
    for target, out in (("a.img", "a1"), ("b.img", "b1"), ("a.img", "a2")):
        args = ["run", "--profile", "quick", "--target", str(tmp_path / target)]
        args += ["--size", "8M", "--yes", "--no-report", "--history", db]
        args += ["--out", str(tmp_path / out), "-q", *sets(*FAST, *TWO_IOPS_ROUNDS)]
        tk(args, capsys)
    entries = listed(db, capsys)
    found = drives(entries)
    assert sorted(found.values()) == [["a1", "a2"], ["b1"]]
    for (model, serial), runs in found.items():
        assert model == "regular file"
        assert serial.startswith(f"{(tmp_path / runs[0][0]).resolve()}.img on ")
    site = build(history.open_history(db).entries(), 5.0, tmp_path / "site")
    assert [(d.serial, d.runs) for d in site.drives] == sorted(
        (serial, len(runs)) for (_, serial), runs in found.items()
    )


# --------------------------------------------------------------------------- upgrade

EMU = "nbd+unix:///?socket=/tmp/tkbench-rundirs/ssd.sock"
# (run_dir, host, target, model) of entries stored before version 5, all serial unknown
OLD = [
    (RUNDIRS / "file-a", "vm", "drive.img", "regular file"),
    (RUNDIRS / "resumed", "vm", "resumed.img", "regular file"),
    (
        RUNDIRS / "emu",
        "vm",
        "nbd+unix:///?socket=/tmp/tkbench-rundirs/ssd.sock",
        "tkbench SSD emulator",
    ),
    (Path("/nonexistent/night9"), "rig7", "/srv/lab/c.img", "regular file"),  # moved away
    (Path("/nonexistent/night8"), "rig7", "/dev/sdq", "Some SSD"),  # reports no serial
]
UPGRADED = {
    "file-a": "/tmp/tkbench-rundirs/drive.img on vm, filesystem not recorded",
    "file-b": "/tmp/tkbench-rundirs/drive.img on vm, filesystem not recorded",  # indexed now
    "resumed": "/tmp/tkbench-rundirs/resumed.img on vm, filesystem not recorded",
    "emu": "default export on /tmp/tkbench-rundirs/ssd.sock",
    "night9": "/srv/lab/c.img on rig7, filesystem not recorded",
    "night8": "unknown",
}


def _inserts() -> list[str]:
    def q(v: object) -> str:
        return "'" + str(v).replace("'", "''") + "'"

    out = []
    for i, (run_dir, host, target, model) in enumerate(OLD):
        values = [run_dir, 1.7e9 + i, 1.7e9 + i + 1, "complete", "quick", host, target, model]
        values += ["unknown", "unknown", 16777216, "{}", None]
        text = ", ".join("NULL" if v is None else q(v) for v in values)
        out.append(
            "INSERT INTO runs (run_dir, started, ended, status, profile, host, target, model, "
            f"serial, firmware, capacity, headline, checks) VALUES ({text})"
        )
    return out


def _check_upgraded(where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert {e["serial"] for e in listed(where, capsys)} == {"unknown"}  # reading changes nothing
    b = tmp_path / "file-b"
    shutil.copytree(RUNDIRS / "file-b", b)
    tk(["history", "import", "--history", where, str(b)], capsys)
    entries = listed(where, capsys)
    assert {Path(e["run_dir"]).name: e["serial"] for e in entries} == UPGRADED
    assert drives(entries)[("regular file", UPGRADED["file-a"])] == ["file-a", "file-b"]


def test_an_old_sqlite_history_gets_the_serials_of_files_and_exports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    old_sqlite_history(db, 4)
    with sqlite3.connect(db) as con:
        for sql in _inserts():
            con.execute(sql)
    _check_upgraded(str(db), tmp_path, capsys)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == history.HISTORY_VERSION == 5


@pytest.mark.postgres
def test_an_old_postgres_history_gets_the_serials_of_files_and_exports(
    tmp_path: Path, pg_server: Server, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = pg_server.old_history(pg_url, 4)
    for sql in _inserts():
        pg_server.sql(sql, name)
    _check_upgraded(pg_url, tmp_path, capsys)
    assert pg_server.sql(f"SELECT version FROM {schema.VERSION_TABLE}", name) == [(5,)]


# --------------------------------------------------------------------------- a fleet


@pytest.mark.fio
def test_a_fleet_of_two_files_started_beside_a_tkbench_folder_gives_two_drives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fleet's children are started so that a folder named ``tkbench`` in the
    working directory (here a package of that name, which an import from the
    working directory would take first) is not imported instead of tkbench, and
    its two files are two drives in the history and on the dashboard."""
    work = tmp_path / "work"
    (work / "tkbench").mkdir(parents=True)
    (work / "tkbench" / "__init__.py").write_text("")
    monkeypatch.chdir(work)
    db = str(tmp_path / "h.sqlite")
    argv = ["run", "--profile", "quick", "--size", "8M", "--yes", "--no-report"]
    argv += ["--history", db, "--out", str(tmp_path / "fleet"), "-q"]
    argv += ["--target", str(tmp_path / "a.img"), "--target", str(tmp_path / "b.img")]
    capsys.readouterr()
    code = cli.main([*argv, *sets(*FAST, *TWO_IOPS_ROUNDS)])
    err = capsys.readouterr().err
    assert code == 0, err[-3000:]
    found = drives(listed(db, capsys))
    assert sorted(found.values()) == [["a.img"], ["b.img"]]
    for (_, serial), (name,) in found.items():
        assert serial.startswith(f"{(tmp_path / name).resolve()} on ")
    site = build(history.open_history(db).entries(), 5.0, tmp_path / "site")
    assert len(site.drives) == 2
