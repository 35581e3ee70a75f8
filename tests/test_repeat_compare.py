"""Repeated points in the history and in ``tkbench compare`` (docs/volume.md,
"Repeatability").

The history keeps each repeated point's mean, deviation and number of runs on both
backends (PostgreSQL on a real server, tests/_postgres.py), and brings a version-2
history up to version 3 on first write.  ``compare`` judges a change of a repeated
point's mean against the runs' own noise: the rule on chosen numbers, and two real
fio runs on a file in tmp_path.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import old_sqlite_history, sets
from tests._postgres import Server
from tests.test_repeat_until import FIXED
from tkbench import cli, history
from tkbench.analysis.repeat import difference_noise, repeatability, t95
from tkbench.history import schema
from tkbench.outputs.compare import MIN_DELTA, Row
from tkbench.report.comparison import comparison_model
from tkbench.rundir.store import load_run

RUNDIRS = Path(__file__).resolve().parent / "data" / "rundirs"


# --------------------------------------------------------------------------- the rule


def _row(*runs: list[float]) -> Row:
    reps = tuple(repeatability(r) for r in runs)
    return Row("t", "4k 0/100", "mib_s", "MiB/s", tuple(r.mean for r in reps), repeats=reps)


def test_a_change_within_the_runs_noise_is_not_called_better() -> None:
    row = _row([100.0, 104.0, 96.0], [108.0, 112.0, 104.0], [200.0, 201.0, 199.0])
    d = row.deltas()
    assert d[1] == pytest.approx(8.0) and d[1] > MIN_DELTA
    # each side's stdev 4 over 3 runs: 95 % interval of the difference ±t95(4)*sqrt(32/3)
    noise = row.noise_pct()
    assert noise[0] is None
    assert noise[1] == pytest.approx(t95(4) * (32 / 3) ** 0.5)  # 9.07 %: larger than 8 %
    assert row.beyond_noise() == (False, True)
    as_json = row.to_dict()
    assert as_json["beyond_noise"] == [None, False, True]
    assert as_json["runs"] == [3, 3, 3]
    assert as_json["noise_pct"][1] == pytest.approx(noise[1])
    assert as_json["mean_abs_dev_pct"][0] == pytest.approx(100 * (8 / 3) / 100)


def test_tight_runs_make_a_small_change_real() -> None:
    # below the 5 % an unrepeated point needs, yet far outside these runs' spread
    row = _row([100.0, 100.1, 99.9], [102.0, 102.1, 101.9])
    assert row.deltas()[1] == pytest.approx(2.0)
    assert row.beyond_noise() == (True,)


def test_a_single_run_has_no_noise_of_its_own() -> None:
    row = _row([100.0, 101.0, 99.0], [103.0])
    assert row.noise_pct() == (None, None)
    assert row.beyond_noise() == (False,)  # 3 % < MIN_DELTA
    assert difference_noise(repeatability([1.0]), repeatability([1.0, 2.0])) is None
    assert difference_noise(repeatability([5.0, 5.0]), repeatability([6.0, 6.0])) == 0.0


# --------------------------------------------------------------------------- real runs


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two real runs of one fixed test (one 64k point, three runs each) on one file."""
    tmp = tmp_path_factory.mktemp("runs")
    out = []
    for name in ("night1", "night2"):
        args = ["run", "--profile", "quick", "--target", str(tmp / "t.img"), "--size", "16M"]
        args += ["--yes", "--out", str(tmp / name), "--no-history", "--no-report"]
        fixed = [o for o in FIXED if not o.startswith("tests.iops.block_sizes=")]
        overrides = [*fixed, 'tests.iops.block_sizes=["64k"]', "tests.iops.repeat=3"]
        assert cli.main([*args, *sets(*overrides)]) == 0
        out.append(tmp / name)
    return out[0], out[1]


def _tk(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    capsys.readouterr()
    assert cli.main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.fio
def test_compare_shows_the_runs_spread_and_the_noise_of_each_change(
    two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_runs
    shown = json.loads(_tk(["compare", str(a), str(b), "--json"], capsys))
    (rep,) = [r for r in shown["rows"] if r["metric"] == "mib_s"]
    assert (rep["test"], rep["point"], rep["unit"]) == ("iops", "64k 0/100", "MiB/s")
    assert rep["runs"] == [3, 3]
    (point_a,) = _points(a, capsys)
    runs_a = point_a["runs"]
    assert rep["values"][0] == pytest.approx(sum(runs_a) / 3)
    noise = rep["noise_pct"][1]
    assert noise is not None and noise > 0
    assert rep["beyond_noise"][1] == (abs(rep["delta_pct"][1]) > noise)
    # the point's IOPS row is judged by the same runs: the same delta, noise and verdict
    (iops,) = [r for r in shown["rows"] if r["metric"] == "iops"]
    assert iops["delta_pct"][1] == pytest.approx(rep["delta_pct"][1])
    assert iops["noise_pct"][1] == pytest.approx(noise)
    assert iops["beyond_noise"] == rep["beyond_noise"] and iops["runs"] == [3, 3]
    text = _tk(["compare", str(a), str(b)], capsys)
    assert "mib_s" in text and "n=3 ±" in text and f"±{noise:.1f}%" in text
    # a run against itself: no change, within any noise
    same = json.loads(_tk(["compare", str(a), str(a), "--json"], capsys))
    (rep,) = [r for r in same["rows"] if r["metric"] == "mib_s"]
    assert rep["delta_pct"][1] == 0 and rep["beyond_noise"][1] is False
    # the comparison PDF's model carries the noise beside the delta
    model = comparison_model([load_run(a), load_run(b)], 0.0)
    (line,) = [ln for s in model.sections for ln in s.lines if ln.quantity == "MiB/s"]
    assert line.noise == pytest.approx((noise,))


def _points(run: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    (t,) = json.loads(_tk(["show", str(run), "--json"], capsys))["tests"]
    return list(t["points"])


def _v2_sqlite(path: Path) -> None:
    """A history as tkbench wrote it at version 2 (steps 1 and 2), with the kept file-a."""
    old_sqlite_history(path, 2)
    assert cli.main(["history", "--history", str(path)]) == 0  # readable as it is


def _entries(location: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return list(json.loads(_tk(["history", "--history", location, "--json"], capsys)))


def _check_repeats(
    entries: list[dict[str, Any]], runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    by_dir = {Path(e["run_dir"]).name: e for e in entries}
    for run in runs:
        (p,) = _points(run, capsys)
        fig = by_dir[run.name]["repeats"]["iops 64k 0/100"]
        assert fig["runs"] == 3
        assert fig["mean"] == pytest.approx(p["mean"])
        assert fig["mean_abs_dev_pct"] == pytest.approx(p["mean_abs_dev_pct"])
        assert fig["stdev"] == pytest.approx(p["stdev"])


@pytest.mark.fio
def test_a_version_2_sqlite_history_gains_the_repeat_figures(
    two_runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    _v2_sqlite(db)
    _tk(["history", "import", "--history", str(db), str(RUNDIRS / "file-a")], capsys)
    with sqlite3.connect(db) as con:  # a write brought it to the current version
        assert con.execute("PRAGMA user_version").fetchone()[0] == history.HISTORY_VERSION
        assert "repeats" in [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    _tk(["history", "import", "--history", str(db), *map(str, two_runs)], capsys)
    entries = _entries(str(db), capsys)
    assert "repeats" not in next(e for e in entries if Path(e["run_dir"]).name == "file-a")
    _check_repeats(entries, two_runs, capsys)
    listing = _tk(["history", "--history", str(db)], capsys)
    assert "iops 64k 0/100:" in listing and "over 3 run(s)" in listing


@pytest.mark.postgres
@pytest.mark.fio
def test_a_version_2_postgres_history_gains_the_repeat_figures(
    two_runs: tuple[Path, Path], pg_server: Server, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = pg_server.old_history(pg_url, 2)
    assert _entries(pg_url, capsys) == []
    _tk(["history", "import", "--history", pg_url, *map(str, two_runs)], capsys)
    assert pg_server.sql(f"SELECT version FROM {schema.VERSION_TABLE}", name) == [
        (history.HISTORY_VERSION,)
    ]
    _check_repeats(_entries(pg_url, capsys), two_runs, capsys)
