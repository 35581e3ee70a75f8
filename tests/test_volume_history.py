"""The volume benchmarks' headline figures in the history, ``compare``, ``export`` and
acceptance criteria (docs/volume.md, "Nights compared"; docs/automation.md).

Real runs, reduced to seconds, on an ext4 filesystem on a loop device: a bulk-I/O
sweep, two nights of a copy test and a virtual-file test.  The history keeps their
figures on both backends (PostgreSQL on a real server, tests/_postgres.py) and brings
a version-3 history up to the current version on first write.
"""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from tests._helpers import mounted_volume, old_sqlite_history
from tests._postgres import Server
from tests.test_repeat_compare import two_runs
from tests.test_volume import _one_error, needs_root
from tkbench import cli, history
from tkbench.history import schema
from tkbench.outputs.checks import criterion_checks
from tkbench.outputs.compare import compare
from tkbench.profile import Acceptance, Criterion
from tkbench.report.comparison import comparison_model
from tkbench.rundir.store import load_run

__all__ = ["two_runs"]  # the fixture: two real runs of a repeated fixed test

K, M = 1024, 1024 * 1024

SWEEP = [
    'tests.sweep.buffer_sizes=["64k", "1m"]',
    "tests.sweep.buffer_counts=[1, 4]",
    'tests.sweep.modes=["unbuffered-seq-write", "buffered-seq-read"]',
    "tests.sweep.point_runtime=0.2s",
    "tests.sweep.file_size=32m",
    "tests.sweep.max_buffer_space=1m",
    "tests.sweep.repeat=2",
    "volume.reserve=1m",
]
COPY = [
    'tests.copy.sets=["iso 2 4m", "program 20 2m"]',
    'tests.copy.data_patterns=["random", "zero"]',
    "tests.copy.repeat=3",
    "volume.reserve=1M",
    "volume.min_file_size=1M",
]
VFILE = [
    "tests.vfile.nodes=8192",
    "tests.vfile.point_runtime=0.2s",
    'tests.vfile.operations=["random-read", "random-write"]',
    "tests.vfile.thread_counts=[1]",
    "tests.vfile.repeat=2",
    "volume.reserve=1m",
    "volume.min_file_size=1m",
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A sweep, two copy nights and a virtual-file run on one loop-mounted ext4."""
    tmp = tmp_path_factory.mktemp("volhist")
    with mounted_volume(tmp, 300 * M, own_files=False) as (mnt, _dev):
        out = {}
        for name, profile, overrides in (
            ("sweep", "bulk-sweep", SWEEP),
            ("copy1", "copy", COPY),
            ("copy2", "copy", COPY),
            ("vfile", "vfile", VFILE),
        ):
            args = ["run", "--profile", profile, "--target", str(mnt), "--out", str(tmp / name)]
            args += ["--yes", "--no-history", "--no-report"]
            for s in overrides:
                args += ["--set", s]
            assert cli.main(args) == 0
            out[name] = tmp / name
        yield out


def _tk(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    capsys.readouterr()
    assert cli.main(argv) == 0
    return capsys.readouterr().out


def _shown(run: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    (t,) = json.loads(_tk(["show", str(run), "--json"], capsys))["tests"]
    return dict(t)


def _check_figures(
    entries: list[dict[str, Any]], runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each entry's figures are the run's own, as ``show --json`` gives them."""
    by_dir = {Path(e["run_dir"]).name: e for e in entries}
    sweep = _shown(runs["sweep"], capsys)["sweep"]
    fig = by_dir["sweep"]["volume"]
    assert set(fig) == {"sweep best_read_mb_s", "sweep best_write_mb_s"}
    for direction in ("read", "write"):
        best, kept = sweep["best"][direction], fig[f"sweep best_{direction}_mb_s"]
        assert kept["value"] == pytest.approx(best["mb_s"]) and kept["unit"] == "MB/s"
        assert (kept["mode"], kept["buffer_size"], kept["buffer_count"]) == (
            best["mode"],
            best["buffer_size"],
            best["buffer_count"],
        )
        assert kept["runs"] == 2
    for night in ("copy1", "copy2"):
        rows = _shown(runs[night], capsys)["copies"]
        fig = by_dir[night]["volume"]
        assert len(fig) == len(rows) == 4
        for row in rows:
            kept = fig[f"copy {row['set']}.{row['data_pattern']}.mb_s"]
            assert kept["value"] == pytest.approx(row["mean"])
            assert kept["mean_abs_dev_pct"] == pytest.approx(row["mean_abs_dev_pct"])
            assert kept["stdev"] == pytest.approx(row["stdev"]) and kept["runs"] == 3
    cells = _shown(runs["vfile"], capsys)["vfile"]["points"]
    fig = by_dir["vfile"]["volume"]
    assert len(fig) == len(cells) == 4  # 2 operations x 1 thread count x cold, warm
    for c in cells:
        kept = fig[f"vfile {c['operation']}.{c['threads']}.{c['cache']}.nodes_s"]
        assert kept["value"] == pytest.approx(c["nodes_s"]) and kept["unit"] == "nodes/s"
        assert kept["runs"] == len(c["runs_nodes_s"]) == 2
    assert all("repeats" not in e for e in entries)  # no fixed test among them


@needs_root
@pytest.mark.fio
def test_a_version_3_sqlite_history_gains_the_volume_figures(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    old_sqlite_history(db, 3)
    assert _tk(["history", "--history", str(db)], capsys).strip() == "no runs in the history"
    with sqlite3.connect(db) as con:  # listing changed nothing
        assert con.execute("PRAGMA user_version").fetchone()[0] == 3
    _tk(["history", "import", "--history", str(db), *map(str, runs.values())], capsys)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == history.HISTORY_VERSION == 5
        assert "volume" in [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    entries = json.loads(_tk(["history", "--history", str(db), "--json"], capsys))
    _check_figures(entries, runs, capsys)
    listing = _tk(["history", "--history", str(db)], capsys)
    assert "copy iso.random.mb_s:" in listing and "over 3 run(s)" in listing
    assert "sweep best_write_mb_s:" in listing and "unbuffered-seq-write" in listing
    assert "vfile random-read.1.warm.nodes_s:" in listing


@needs_root
@pytest.mark.postgres
@pytest.mark.fio
def test_a_version_3_postgres_history_gains_the_volume_figures(
    runs: dict[str, Path], pg_server: Server, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = pg_server.old_history(pg_url, 3)
    _tk(["history", "import", "--history", pg_url, *map(str, runs.values())], capsys)
    assert pg_server.sql(f"SELECT version FROM {schema.VERSION_TABLE}", name) == [(5,)]
    entries = json.loads(_tk(["history", "--history", pg_url, "--json"], capsys))
    _check_figures(entries, runs, capsys)


@needs_root
@pytest.mark.fio
def test_compare_gives_each_figure_with_the_noise_of_its_runs(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = runs["copy1"], runs["copy2"]
    shown = json.loads(_tk(["compare", str(a), str(b), "--json"], capsys))
    rows = {r["point"]: r for r in shown["rows"]}
    assert set(rows) == {"iso.random", "iso.zero", "program.random", "program.zero"}
    first = {f"{r['set']}.{r['data_pattern']}": r for r in _shown(a, capsys)["copies"]}
    for point, row in rows.items():
        assert (row["test"], row["metric"], row["unit"], row["runs"]) == (
            "copy",
            "mb_s",
            "MB/s",
            [3, 3],
        )
        assert row["values"][0] == pytest.approx(first[point]["mean"])
        noise, delta = row["noise_pct"][1], row["delta_pct"][1]
        assert noise is not None and noise > 0
        assert row["beyond_noise"][1] == (abs(delta) > noise)  # the runs' noise decides
    text = _tk(["compare", str(a), str(b)], capsys)
    assert "iso.random" in text and "n=3 ±" in text
    # a night against itself: no change, within any noise
    same = json.loads(_tk(["compare", str(a), str(a), "--json"], capsys))
    assert all(r["delta_pct"][1] == 0 and r["beyond_noise"][1] is False for r in same["rows"])
    # the sweep's best with the combination behind it; the vfile's nodes/s
    sw = {r.point: r for r in compare([load_run(runs["sweep"])] * 2)}
    assert set(sw) == {"best_read", "best_write"}
    assert sw["best_write"].details[0] is not None
    assert sw["best_write"].details[0]["mode"] == "unbuffered-seq-write"
    vf = compare([load_run(runs["vfile"])] * 2)
    assert {r.metric for r in vf} == {"nodes_s"} and len(vf) == 4
    assert all(math.isfinite(r.values[0]) and r.values[0] > 0 for r in vf)
    # the comparison PDF's model: the figures' unit and the noise beside the delta
    model = comparison_model([load_run(a), load_run(b)], 0.0)
    (section,) = model.sections
    assert [ln.quantity for ln in section.lines] == ["MB/s"] * 4
    assert section.lines[0].noise == pytest.approx((rows["iso.random"]["noise_pct"][1],))


@needs_root
@pytest.mark.fio
def test_export_writes_the_figures(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = [str(runs[n]) for n in ("sweep", "copy1", "vfile")]
    lines = _tk(["export", *dirs, "--format", "jsonl"], capsys).splitlines()
    got = {(r["test"], r["point"], r["metric"]): r for r in map(json.loads, lines)}
    copy = {f"{r['set']}.{r['data_pattern']}": r for r in _shown(runs["copy1"], capsys)["copies"]}
    for point, row in copy.items():
        assert got[("copy", point, "bw")]["value"] == pytest.approx(row["mean"])
        assert got[("copy", point, "bw")]["window"] == "1-3"
        dev = got[("copy", point, "mean_abs_dev_pct")]
        assert dev["value"] == pytest.approx(row["mean_abs_dev_pct"]) and dev["unit"] == "%"
    best = _shown(runs["sweep"], capsys)["sweep"]["best"]["read"]
    row = got[("sweep", "best_read", "bw")]
    assert (row["direction"], row["read_pct"], row["block_size"]) == (
        "read",
        100,
        best["buffer_size"],
    )
    assert row["value"] == pytest.approx(best["mb_s"])
    vf = [r for r in got.values() if r["test"] == "vfile" and r["metric"] == "nodes_s"]
    assert len(vf) == 4 and {r["direction"] for r in vf} == {"read", "write"}
    # no point rows of these tests: their points share keys
    assert all(" " not in r["point"] for r in got.values())
    text = _tk(["export", *dirs, "--format", "openmetrics"], capsys)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert {"tkbench_nodes_per_second", "tkbench_runs_deviation_ratio"} <= set(families)
    bw = families["tkbench_bandwidth_bytes_per_second"].samples
    iso = [s for s in bw if s.labels["figure"] == "iso.random"]
    assert len(iso) == 1 and iso[0].value == pytest.approx(copy["iso.random"]["mean"] * 1e6)


def _judged(run: Path, *criteria: str) -> list[tuple[bool, float | None]]:
    acc = Acceptance(False, tuple(Criterion.parse(c) for c in criteria), 0.0)
    return [(c.passed, c.measured) for c in criterion_checks(load_run(run), acc)]


@needs_root
@pytest.mark.fio
def test_criteria_on_the_figures_pass_and_fail_by_the_measured_values(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rows = {f"{r['set']}.{r['data_pattern']}": r for r in _shown(runs["copy1"], capsys)["copies"]}
    mean, spread = rows["iso.random"]["mean"], rows["iso.random"]["mean_abs_dev_pct"]
    judged = _judged(
        runs["copy1"],
        f"copy iso.random.mb_s >= {mean * 0.99}",
        f"copy iso.random.mb_s >= {mean * 1.01}",
        f"copy iso.random.mean_abs_dev_pct <= {spread * 1.01 + 1e-9}",
        f"copy iso.random.mean_abs_dev_pct < {spread * 0.99}",
        "copy game.zero.mb_s >= 1",  # a set this run did not copy
    )
    assert [p for p, _ in judged] == [True, False, True, False, False]
    assert judged[0][1] == pytest.approx(mean) and judged[2][1] == pytest.approx(spread)
    assert judged[4][1] is None  # nothing measured
    best = _shown(runs["sweep"], capsys)["sweep"]["best"]["write"]["mb_s"]
    (ok, measured), (bad, _) = _judged(
        runs["sweep"], f"sweep best_write_mb_s >= {best * 0.99}", f"sweep best_write_mb_s > {best}"
    )
    assert ok and not bad and measured == pytest.approx(best)
    warm = next(
        c["nodes_s"]
        for c in _shown(runs["vfile"], capsys)["vfile"]["points"]
        if (c["operation"], c["threads"], c["cache"]) == ("random-read", 1, "warm")
    )
    ((ok, measured),) = _judged(runs["vfile"], f"vfile random-read.1.warm.nodes_s >= {warm / 2}")
    assert ok and measured == pytest.approx(warm)


@pytest.mark.parametrize(
    ("criterion", "words"),
    [
        ("copy iso.rand.mb_s >= 1", "no figure 'iso.rand.mb_s'"),
        ("copy iso.random.iops >= 1", "not a criterion"),
        ("copy iso.random.mb_s >= fast", "not a number"),
        ("copy iso.random.mb_s = 1", "not a criterion"),
        ("nope iso.random.mb_s >= 1", "no test 'nope'"),
    ],
)
def test_a_bad_figure_criterion_is_one_line_and_exit_2(
    criterion: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", "--profile", "copy", "--target", str(tmp_path)]
    assert cli.main([*args, "--set", f'acceptance.criteria=["{criterion}"]']) == 2
    assert words in _one_error(capsys.readouterr().err)


def test_a_figure_of_a_test_without_figures_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", "--profile", "ars", "--target", str(tmp_path)]
    assert cli.main([*args, "--set", 'acceptance.criteria=["4k best_write_mb_s >= 1"]']) == 2
    assert "has no volume figures" in _one_error(capsys.readouterr().err)
    # the spread of a repeated point is a metric of the point form
    parsed = Criterion.parse("4k mean_abs_dev_pct 4k 0/100 <= 3")
    assert (parsed.test, parsed.metric, parsed.bs, parsed.unit) == (
        "4k",
        "mean_abs_dev_pct",
        4096,
        "%",
    )
    assert parsed.label == "4k: mean_abs_dev_pct 4k 0/100 <= 3 %"


@pytest.mark.fio
def test_a_criterion_on_a_repeated_points_spread(
    two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run = two_runs[0]
    (point,) = _shown(run, capsys)["points"]
    spread = point["mean_abs_dev_pct"]
    judged = _judged(
        run,
        f"iops mean_abs_dev_pct 64k 0/100 <= {spread * 1.01 + 1e-9}",
        f"iops mean_abs_dev_pct 64k 0/100 < {spread * 0.99}",
        "iops mean_abs_dev_pct 4k 0/100 <= 100",  # no such point
    )
    assert [p for p, _ in judged] == [True, False, False]
    assert judged[0][1] == pytest.approx(spread) and judged[2][1] is None
    acc = Acceptance(False, (Criterion.parse("iops mean_abs_dev_pct 4k 0/100 <= 100"),), 0.0)
    (check,) = criterion_checks(load_run(run), acc)
    assert "has no spread" in check.message


# --------------------------------------------------------------------------- regressions


def test_a_volume_figure_regresses_only_beyond_threshold_and_noise() -> None:
    """Welch by hand: 3 runs each at a standard deviation of 10 give a difference whose
    95 % half width is t(4) x sqrt(100/3 + 100/3) = 2.776 x 8.165 = 22.67 (22.7 % of
    100): a 20 % drop is within it, a 30 % drop is not."""
    from tkbench.outputs.checks import FigureRuns, volume_regression_checks

    base = {
        "copy iso.random.mb_s": FigureRuns(100.0, 10.0, 3),
        "copy iso.zero.mb_s": FigureRuns(100.0, 10.0, 3),
        "sweep best_read_mb_s": FigureRuns(100.0, None, 1),
        "vfile random-read.1.warm.nodes_s": FigureRuns(100.0, 10.0, 3),
    }
    now = {
        "copy iso.random.mb_s": FigureRuns(80.0, 10.0, 3),  # -20 %: within the noise
        "copy iso.zero.mb_s": FigureRuns(70.0, 10.0, 3),  # -30 %: beyond it
        "sweep best_read_mb_s": FigureRuns(94.0, None, 1),  # -6 %, one run: no noise known
        "vfile random-read.1.warm.nodes_s": FigureRuns(130.0, 10.0, 3),  # better
        "vfile random-write.1.warm.nodes_s": FigureRuns(1.0, None, 1),  # not in the base
    }
    checks = {c.name: c for c in volume_regression_checks(now, base, 5.0, "night-1")}
    assert set(checks) == {f"regression: {k}" for k in base}
    within = checks["regression: copy iso.random.mb_s"]
    assert within.passed and "noise ±22.7 %" in within.message
    assert "(within the runs' noise)" in within.message
    beyond = checks["regression: copy iso.zero.mb_s"]
    assert not beyond.passed and "-30.0 % against night-1 (100 -> 70 MB/s; noise ±22.7 %)" in (
        beyond.message
    )
    single = checks["regression: sweep best_read_mb_s"]
    assert not single.passed and "noise" not in single.message
    assert checks["regression: vfile random-read.1.warm.nodes_s"].passed
    assert "nodes/s" in checks["regression: vfile random-read.1.warm.nodes_s"].message


@needs_root
@pytest.mark.fio
def test_the_regression_check_of_a_night_covers_its_volume_figures(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """The second copy night against the first, from the history (as a nightly run
    finds its baseline) and from --baseline: every figure is checked, by the rule."""
    from tkbench.engine.runs import finish_checks
    from tkbench.outputs.checks import FigureRuns, run_figure_runs, volume_regression_checks

    # the volume is one "drive" of the history: its filesystem's UUID is its serial
    serials = {load_run(runs[n]).manifest.target.ident("serial") for n in ("copy1", "copy2")}
    (serial,) = serials
    assert serial.startswith("UUID=") and len(serial) == len("UUID=") + 36
    db = tmp_path / "h.sqlite"
    assert cli.main(["history", "import", "--history", str(db), str(runs["copy1"])]) == 0
    night = tmp_path / "copy2"
    shutil.copytree(runs["copy2"], night)
    done = finish_checks(night, history_db=db, threshold=1000)
    regressions = [c for c in done.checks.checks if c.kind == "regression"]
    names = {f"regression: {k}" for k in run_figure_runs(load_run(night))}
    assert {c.name for c in regressions} == names and len(names) == 4
    assert all(c.passed for c in regressions)  # nothing drops by 1000 %
    assert all(str(runs["copy1"].resolve()) in c.message for c in regressions)
    assert json.loads((night / "checks.json").read_text())["baseline"] == str(
        runs["copy1"].resolve()
    )
    # at a threshold of 0 % a check fails exactly where the night is lower beyond noise
    again = finish_checks(night, history_db=None, baseline=runs["copy1"], threshold=1e-9)
    first, second = run_figure_runs(load_run(runs["copy1"])), run_figure_runs(load_run(night))
    expected = volume_regression_checks(second, first, 1e-9, str(runs["copy1"]))
    got = {c.name: c.passed for c in again.checks.checks if c.kind == "regression"}
    assert got == {c.name: c.passed for c in expected}
    for key, now in second.items():
        base = first[key]
        assert isinstance(now, FigureRuns) and now.runs == base.runs == 3
        if now.mean >= base.mean:
            assert got[f"regression: {key}"]  # not lower: never a regression
