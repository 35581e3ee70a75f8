"""``tkbench export`` of a real run: CSV, JSON lines and OpenMetrics (parsed by
prometheus_client's own OpenMetrics parser)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import stat
import uuid
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from tests._helpers import TWO_IOPS_ROUNDS, sets
from tkbench import analysis, cli
from tkbench.outputs.export import COLUMNS
from tkbench.rundir.store import load_run

MB = 1e6

pytestmark = pytest.mark.fio  # every test exports a real run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("export")
    args = ["run", "--profile", "quick", "--target", str(tmp / "t.img"), "--size", "16M"]
    args += ["--yes", "--no-report", "--no-history", "--out", str(tmp / "run"), "-q"]
    assert cli.main([*args, *sets(*TWO_IOPS_ROUNDS)]) == 0
    return tmp / "run"


def export(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert cli.main(["export", *args]) == 0
    return capsys.readouterr().out


def expected_count(run_dir: Path) -> int:
    """Values in the window, counted from the round records themselves."""
    test = load_run(run_dir).test("iops")
    window = set(analysis.window(test))
    recs = [r for r in test.rounds if r.round in window]
    n = 0
    for p in test.plan.points:
        pts = [q for r in recs for q in r.points if q.label == p.label]
        n += 4  # the point as a whole: iops, bw, lat_mean, lat_max
        for d in ("read", "write"):
            dirs = [getattr(q, d) for q in pts if getattr(q, d).io_bytes > 0]
            if dirs:
                keys = list(dirs[0].percentiles_ns)
                n += 4 + len(analysis.pooled_percentiles(dirs, keys)[0])
    return n


def test_every_new_run_has_a_run_id(run_dir: Path) -> None:
    run_id = json.loads((run_dir / "manifest.json").read_text())["run_id"]
    assert uuid.UUID(run_id).version == 4


def test_csv_has_a_header_and_one_row_per_window_value(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = list(csv.reader(io.StringIO(export(capsys, str(run_dir), "--format", "csv"))))
    assert tuple(rows[0]) == COLUMNS
    data = [dict(zip(COLUMNS, r, strict=True)) for r in rows[1:]]
    assert len(data) == expected_count(run_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert {d["run_id"] for d in data} == {manifest["run_id"]}
    assert {d["test"] for d in data} == {"iops"}
    assert {d["window"] for d in data} == {"1-2"}
    assert {d["model"] for d in data} == {"regular file"}
    assert {d["steady_state"] for d in data} <= {"true", "false"}
    # the write IOPS of 4k 0/100 is the mean of the two rounds' records
    (row,) = [
        d
        for d in data
        if (d["point"], d["direction"], d["metric"]) == ("4k 0/100", "write", "iops")
    ]
    test = load_run(run_dir).test("iops")
    recs = [p.write.iops for r in test.rounds for p in r.points if (p.bs, p.read_pct) == (4096, 0)]
    assert float(row["value"]) == pytest.approx(sum(recs) / len(recs), rel=1e-12)
    assert row["unit"] == "IOPS"
    # and the point as a whole agrees with the value acceptance checks use
    (whole,) = [
        d for d in data if (d["point"], d["direction"], d["metric"]) == ("4k 0/100", "all", "iops")
    ]
    assert float(whole["value"]) == pytest.approx(analysis.value(test, "iops", 4096, 0))
    assert any(d["metric"] == "p99" and d["unit"] == "ms" for d in data)


def test_jsonl_matches_csv(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = export(capsys, str(run_dir), "--format", "jsonl").splitlines()
    objs = [json.loads(line) for line in lines]
    assert len(objs) == expected_count(run_dir)
    assert all(tuple(o) == COLUMNS for o in objs)
    assert all(isinstance(o["value"], float) and math.isfinite(o["value"]) for o in objs)


def test_openmetrics_is_accepted_by_a_real_parser(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = export(capsys, str(run_dir), "--format", "openmetrics")
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert set(families) >= {
        "tkbench_iops",
        "tkbench_bandwidth_bytes_per_second",
        "tkbench_latency_mean_seconds",
        "tkbench_latency_max_seconds",
        "tkbench_latency_percentile_seconds",
    }
    samples = [s for f in families.values() for s in f.samples]
    assert len(samples) == expected_count(run_dir)
    assert families["tkbench_latency_mean_seconds"].unit == "seconds"
    objs = [
        json.loads(line) for line in export(capsys, str(run_dir), "--format", "jsonl").splitlines()
    ]
    by_key: dict[tuple[Any, ...], float] = {
        (o["block_size"], o["read_pct"], o["direction"], o["metric"]): o["value"] for o in objs
    }
    for s in families["tkbench_bandwidth_bytes_per_second"].samples:
        key = (int(s.labels["block_size"]), int(s.labels["read_pct"]), s.labels["direction"], "bw")
        assert s.value == pytest.approx(by_key[key] * MB)
    pct = families["tkbench_latency_percentile_seconds"].samples[0]
    key = (
        int(pct.labels["block_size"]),
        int(pct.labels["read_pct"]),
        pct.labels["direction"],
        "p" + pct.labels["percentile"],
    )
    assert pct.value == pytest.approx(by_key[key] / 1e3)


def test_an_old_run_without_run_id_exports_the_same_every_time(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    manifest = json.loads((old / "manifest.json").read_text())
    del manifest["run_id"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    first = export(capsys, str(old), "--format", "jsonl")
    assert first == export(capsys, str(old), "--format", "jsonl")
    assert {json.loads(line)["run_id"] for line in first.splitlines()} == {None}
    # two runs in one export: the copy and the original, told apart by run_dir
    both = export(capsys, str(run_dir), str(old), "--format", "openmetrics")
    samples = [s for f in text_string_to_metric_families(both) for s in f.samples]
    assert len(samples) == 2 * expected_count(run_dir)


def test_export_to_a_file_follows_the_umask(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "values.csv"
    old = os.umask(0o022)
    try:
        assert cli.main(["export", str(run_dir), "--out", str(out)]) == 0
    finally:
        os.umask(old)
    assert capsys.readouterr().out == ""
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert len(out.read_text().splitlines()) == 1 + expected_count(run_dir)


@pytest.mark.parametrize(
    "args",
    [
        ["export", "/nonexistent/run"],
        ["export", "{tmp}", "--format", "xml"],
        ["export"],
    ],
)
def test_export_bad_input_is_one_line_and_exit_2(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([a.replace("{tmp}", str(tmp_path)) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tkbench: error:")
