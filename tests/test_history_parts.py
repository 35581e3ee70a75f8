"""The typed parts of a history entry (tkbench.history.parts), on both backends.

A row's JSON columns are read once into records (checks, repeated points, volume
figures) and written back, and shown by ``history --json``, exactly as they were
stored: also the checks of a tkbench older than the run directory's records.  A
column that does not hold what it should is one line naming the run and the field,
exit 2, for the listing and the dashboard alike.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tkbench import cli, history
from tkbench.history import Entry

RUN_DIR = "/srv/runs/night-1"

# the checks as tkbench wrote them before run directories had records: an integer
# measurement, a baseline, no format version
OLD_CHECKS = (
    '{"passed": false, "count": 2, "failed": 1, "checks": [{"name": "iops: steady state", '
    '"kind": "steady_state", "passed": true, "measured": null, "limit": "reached", '
    '"message": "steady state in rounds 3-7"}, {"name": "iops 4k 0/100 >= 9000", "kind": '
    '"criterion", "passed": false, "measured": 8500, "limit": ">= 9000", "message": '
    '"measured 8500 IOPS"}], "evaluated": 1800000100.25, "baseline": "/srv/runs/night-0"}'
)
REPEATS = (
    '{"iops 64k 0/100": {"mean": 812.5, "mean_abs_dev_pct": 1.25, "stdev": 12.0, "runs": 3, '
    '"limit_pct": 3.0, "limit_met": true}, "iops 64k 100/0": {"mean": 640.0, '
    '"mean_abs_dev_pct": null, "stdev": null, "runs": 1}}'
)
VOLUME = (
    '{"sweep best_read_mb_s": {"value": 1536.0, "unit": "MB/s", "mean_abs_dev_pct": 0.5, '
    '"stdev": 9.5, "runs": 2, "mode": "buffered-seq-read", "buffer_size": 1048576, '
    '"buffer_count": 4}, "vfile random-read.1.warm.nodes_s": {"value": 20000.5, "unit": '
    '"nodes/s", "mean_abs_dev_pct": null, "stdev": null, "runs": 1}}'
)
STORED = {"checks": OLD_CHECKS, "repeats": REPEATS, "volume": VOLUME}


def _entry() -> Entry:
    return Entry(
        run_dir=RUN_DIR,
        started=1_800_000_000.0,
        ended=1_800_000_060.0,
        status="complete",
        profile="nightly",
        host="rig-1",
        target="/dev/nvme0n1",
        model="Lab SSD",
        serial="S1",
        firmware="FW1",
        capacity=10**12,
        headline={"iops: iops 4k 0/100": 8500.0},
        checks=None,
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A history of each backend with one entry."""
    if request.param == "postgres":
        where: str = request.getfixturevalue("pg_url")
    else:
        where = str(tmp_path / "h.sqlite")
    history.open_history(where).put([_entry()])
    return where


def _set(location: str, values: dict[str, str]) -> None:
    """Write the row's JSON columns as given, behind tkbench's back."""
    assignments = ", ".join(f"{c} = %s" for c in values)
    args = [*values.values(), RUN_DIR]
    if location.startswith("postgresql"):
        import psycopg

        with psycopg.connect(location) as con:
            con.execute(f"UPDATE runs SET {assignments} WHERE run_dir = %s", args)
        return
    with sqlite3.connect(location) as con:
        con.execute(f"UPDATE runs SET {assignments.replace('%s', '?')} WHERE run_dir = ?", args)


def _stored(location: str) -> dict[str, str]:
    sql = "SELECT checks, repeats, volume FROM runs"
    if location.startswith("postgresql"):
        import psycopg

        with psycopg.connect(location) as con:
            (row,) = con.execute(sql).fetchall()
    else:
        with sqlite3.connect(location) as con:
            (row,) = con.execute(sql).fetchall()
    return dict(zip(("checks", "repeats", "volume"), row, strict=True))


def _tk(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_parts_write_back_and_show_what_was_stored(
    location: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _set(location, STORED)
    h = history.open_history(location)
    (e,) = h.entries()
    # read once, as records: what the listing and the dashboard read
    assert e.checks is not None and not e.checks.passed
    assert [c.name for c in e.checks.failed_acceptance()] == ["iops 4k 0/100 >= 9000"]
    assert e.repeats is not None and e.repeats["iops 64k 0/100"].limit_met is True
    assert e.volume is not None and e.volume["sweep best_read_mb_s"].buffer_count == 4

    code, out, _ = _tk(["history", "--history", location, "--json"], capsys)
    assert code == 0
    (shown,) = json.loads(out)
    for column, text in STORED.items():
        # the same text, byte for byte: keys in order, 8500 an integer, nulls kept
        assert json.dumps(shown[column]) == text, column

    code, out, _ = _tk(["history", "--history", location], capsys)
    assert code == 0
    assert " FAIL " in out
    assert "iops 64k 0/100: 812.5 MiB/s ±1.2 % over 3 run(s)" in out
    assert "iops 64k 100/0: 640 MiB/s over 1 run(s)" in out
    assert "sweep best_read_mb_s: 1,536 MB/s (buffered-seq-read, 4 x 1024k) ±0.5 %" in out

    h.put(h.entries())  # indexed again from what was read: the same bytes
    assert _stored(location) == STORED


@pytest.mark.parametrize(
    ("column", "text", "field"),
    [
        ("checks", '{"passed": "yes", "checks": []}', "checks.passed"),
        ("checks", '{"passed": false, "checks": [{"name": 7}]}', "checks.checks[0].name"),
        (
            "repeats",
            '{"iops 4k 0/100": {"mean": 1.0, "mean_abs_dev_pct": null, "stdev": null, '
            '"runs": "three"}}',
            "repeats.iops 4k 0/100.runs",
        ),
        ("volume", '{"copy iso.random.mb_s": {"value": 5.0}}', "volume.copy iso.random.mb_s.unit"),
        ("volume", "[1, 2]", "volume"),
    ],
)
def test_a_part_not_as_tkbench_writes_it_is_one_line(
    column: str,
    text: str,
    field: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    location = str(tmp_path / "h.sqlite")
    history.open_history(location).put([_entry()])
    _set(location, {column: text})
    commands = [["history", "--history", location]]
    if column != "repeats":  # the site has no repeated points: it never reads them
        commands.append(["dashboard", "--history", location, "--out", str(tmp_path / "site")])
    for argv in commands:
        code, _, err = _tk(argv, capsys)
        assert code == 2, argv
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "unreadable row" in err and RUN_DIR in err and field in err, err


def test_an_empty_object_stays_an_empty_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A column holding ``{}`` (no figures, not null) is shown and kept as ``{}``."""
    location = str(tmp_path / "h.sqlite")
    history.open_history(location).put([_entry()])
    _set(location, {"repeats": "{}", "volume": "{}"})
    code, out, _ = _tk(["history", "--history", location, "--json"], capsys)
    assert code == 0
    (shown,) = json.loads(out)
    assert shown["repeats"] == {} and shown["volume"] == {}
    h = history.open_history(location)
    h.put(h.entries())
    assert _stored(location)["volume"] == "{}"
