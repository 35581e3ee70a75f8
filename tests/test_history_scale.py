"""The history at lab scale: what a large history is read with, checked for what it
gives (benchmarks/scale.py measures how fast and how big, never a test).

* ``history`` and ``history --json`` write entries as they are read: the JSON is the
  same text as the whole list dumped at once, the order the same on both backends,
  and the history is read one entry at a time;
* the history check before a run reads one entry, not the whole history, and still
  refuses a history whose rows cannot be read;
* ``history import`` of many run directories keeps one run in memory at a time and
  gives the same entries as indexing them one by one.
"""

from __future__ import annotations

import gc
import json
import shutil
import sqlite3
import uuid
import weakref
from pathlib import Path
from typing import Any

import pytest

from tests import _rundir_outputs as outputs
from tkbench import cli, history
from tkbench.engine.runs import check_outputs
from tkbench.errors import InputError
from tkbench.history import Entry, EntryChecks, RepeatFigures, base, entry
from tkbench.rundir import store

SMALL_RUN = outputs.RUNDIRS / "file-a"


def lab_entries(n: int) -> list[Entry]:
    """Entries of several drives, in no order, with what sorts awkwardly: names
    beyond ASCII and of every case, an empty model, runs without a start time."""
    models = ["Zeta SSD", "alpha ssd", "Ålpha SSD", "", "Beta\u00e9 SSD"]
    out = []
    for i in range(n):
        model = models[i % len(models)]
        started = None if i % 7 == 3 else 1_800_000_000.0 + (n - i) * 3600.0
        out.append(
            Entry(
                run_dir=f"/srv/runs/{'b' if i % 2 else 'a'}/run-{i:04d}",
                started=started,
                ended=None if started is None else started + 60.0,
                status="complete" if i % 5 else "interrupted",
                profile="nightly" if i % 3 else "quick",
                host="rig-1",
                target="/dev/nvme0n1",
                model=model,
                serial=f"S{i % 4}",
                firmware="FW1",
                capacity=10**12,
                headline={"iops: iops 4k 0/100": 1000.0 + i, "latency: lat_mean 4k 0/100": 0.1},
                checks=EntryChecks.read({"passed": bool(i % 2), "checks": []}, Path("lab"))
                if i % 4
                else None,
                rig="rig-1" if i % 2 else None,
                run_id=str(uuid.UUID(int=i + 1, version=4)),
                repeats={"4k-fsync 4k 0/100": RepeatFigures(1.5, 2.0, 0.5, 3)}
                if i % 6 == 0
                else None,
            )
        )
    return out


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    url: str = request.getfixturevalue("pg_url")
    return url


def listing(location: str, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    capsys.readouterr()
    code = cli.main(["history", "--history", location, *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_json_is_streamed_as_the_same_text_in_the_same_order(
    location: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The JSON written entry by entry is the text of the whole list dumped at once
    (as ``history --json`` wrote it), sorted as the history's own order, on both
    backends, for all entries and for a filtered listing."""
    made = lab_entries(60)
    h = history.open_history(location)
    h.put(made)
    want = sorted(made, key=entry.sort_key)
    out = listing(location, capsys, "--json")
    assert out == json.dumps([e.to_dict() for e in want], indent=1) + "\n"
    assert list(h.each()) == want
    some = [e for e in want if e.model == "alpha ssd" and e.serial == "S1"]
    assert some
    out = listing(location, capsys, "--json", "--model", "alpha ssd", "--serial", "S1")
    assert json.loads(out) == [e.to_dict() for e in some]
    # the text listing: the same lines as the listing made of the whole list
    assert listing(location, capsys) == history.format_entries(want) + "\n"


def test_an_empty_history_is_the_empty_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    location = str(tmp_path / "h.sqlite")
    history.open_history(location).put([])
    assert listing(location, capsys, "--json") == "[]\n"
    assert listing(location, capsys) == "no runs in the history\n"
    assert "".join(history.json_chunks([])) == json.dumps([], indent=1)


class CountedRows:
    """How many rows the history turned into entries (base.from_row, wrapped)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = base.from_row

        def counting(row: dict[str, Any]) -> Entry:
            self.calls += 1
            return real(row)

        monkeypatch.setattr(base, "from_row", counting)


def test_the_listing_reads_one_entry_at_a_time(
    location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first entry of a listing comes before the rest are read: what is listed
    (and written as JSON) is never the whole history in memory."""
    h = history.open_history(location)
    h.put(lab_entries(40))
    rows = CountedRows(monkeypatch)
    each = h.each()
    first = next(each)
    assert rows.calls == 1
    chunks = history.json_chunks(each)
    assert json.loads(next(chunks) + "\n]")[0]["run_dir"] != first.run_dir
    assert rows.calls == 2
    each.close()


def test_the_check_before_a_run_reads_one_entry_not_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tkbench run``'s history check gives the same answers (a good history
    passes, one with an unreadable row is refused) reading one entry, not every
    entry of the history."""
    location = str(tmp_path / "history.sqlite")
    history.open_history(location).put(lab_entries(50))
    rows = CountedRows(monkeypatch)
    check_outputs(history_db=location)
    assert rows.calls <= 1
    with sqlite3.connect(location) as con:
        con.execute("UPDATE runs SET headline = 'not json'")
    with pytest.raises(InputError) as exc:
        check_outputs(history_db=location)
    assert "unreadable row" in str(exc.value)


def small_runs(where: Path, count: int) -> list[Path]:
    """Copies of a small kept run, each with its own run UUID and drive."""
    dirs = []
    for i in range(count):
        d = where / f"run-{i:02d}"
        shutil.copytree(SMALL_RUN, d)
        m = json.loads((d / "manifest.json").read_text())
        m["run_id"] = str(uuid.UUID(int=i + 1, version=4))
        m["target"]["identity"]["serial"] = f"SERIAL-{i % 3}"
        (d / "manifest.json").write_text(json.dumps(m, indent=1))
        dirs.append(d)
    return dirs


def test_import_of_many_runs_keeps_one_in_memory_and_the_same_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Importing twelve run directories at once holds one run at a time (each is
    let go once its entry is made) and gives the entries that importing them one by
    one gives; a directory that is no run still leaves the history untouched."""
    dirs = small_runs(tmp_path / "runs", 12)
    alive: list[weakref.ref[store.RunData]] = []
    most = 0
    real = store.load_run

    def watched(root: Path) -> store.RunData:
        nonlocal most
        gc.collect()
        most = max(most, sum(r() is not None for r in alive))
        run = real(root)
        alive.append(weakref.ref(run))
        return run

    monkeypatch.setattr(store, "load_run", watched)
    at_once = str(tmp_path / "at-once.sqlite")
    assert cli.main(["history", "import", "--history", at_once, *map(str, dirs)]) == 0
    assert most <= 1, f"{most} runs held at once"
    one_by_one = str(tmp_path / "one-by-one.sqlite")
    for d in dirs:
        assert cli.main(["history", "import", "--history", one_by_one, str(d)]) == 0
    assert history.open_history(at_once).entries() == history.open_history(one_by_one).entries()
    assert len(history.open_history(at_once).entries()) == 12

    bad = str(tmp_path / "bad.sqlite")
    capsys.readouterr()
    assert cli.main(["history", "import", "--history", bad, str(dirs[0]), str(tmp_path)]) == 2
    assert history.open_history(bad).entries() == []
