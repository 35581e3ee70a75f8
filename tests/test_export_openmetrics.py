"""``tkbench export`` of runs of every test type, parsed by prometheus_client's own
OpenMetrics parser, and the versioned column set of CSV and JSON lines
(docs/automation.md, "Exporting values").

The basic four and the staged PTS tests (HIR, XSR, CBW, DIRTH) come from a synthetic
PTS-E run (tests/synthetic.py: the engine's plan and record shapes, no fio); the
volume benchmarks (bulk-I/O sweep, copy, virtual file, fixed) from real runs,
reduced to seconds, on an ext4 filesystem on a loop device.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from tests._helpers import mounted_volume
from tests.synthetic import make_synthetic_run
from tests.test_volume import SMALL
from tests.test_volume_history import COPY, SWEEP, VFILE
from tkbench import analysis, cli
from tkbench.outputs.export import COLUMNS, EXPORT_VERSION
from tkbench.rundir.store import load_run

STAGED = {
    "hir-precondition",
    "hir-recovery",
    "xsr",
    "cbw-precondition",
    "cbw-intensity",
    "cbw-operating",
    "dirth-precondition",
    "dirth-intensity",
    "dirth-operating",
}
BASIC = {"iops", "throughput-1024k", "throughput-128k", "latency", "wsat"}
M = 1024 * 1024


@pytest.fixture(scope="module")
def pts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic PTS-E run: the basic four tests and every staged test."""
    return make_synthetic_run(tmp_path_factory.mktemp("pts") / "run", wsat_rounds=8)


def export(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert cli.main(["export", *args]) == 0
    return capsys.readouterr().out


def parsed(text: str) -> dict[str, Any]:
    """The families prometheus_client reads, after checking what it does not: each
    family's metadata once, before its samples, no labels twice, ``# EOF`` last."""
    assert text.endswith("\n# EOF\n") and text.count("# EOF") == 1
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in families:
        assert text.count(f"# TYPE {name} ") == 1 and text.count(f"# HELP {name} ") == 1
        labels = [tuple(sorted(s.labels.items())) for s in families[name].samples]
        assert len(set(labels)) == len(labels), name
    return families


def test_openmetrics_of_the_staged_pts_tests_is_accepted_by_a_real_parser(
    pts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    families = parsed(export(capsys, str(pts), "--format", "openmetrics"))
    samples = [s for f in families.values() for s in f.samples]
    assert {s.labels["test"] for s in samples} == STAGED | BASIC
    rows = export(capsys, str(pts), "--format", "jsonl").splitlines()
    assert len(samples) == len(rows)


def test_each_point_of_a_staged_test_is_its_own_point(
    pts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """HIR's thirty preconditioning points share 4k 0/100: each is exported under its
    plan label with its own window mean, not their pooled mean thirty times."""
    objs = [json.loads(x) for x in export(capsys, str(pts), "--format", "jsonl").splitlines()]
    test = load_run(pts).test("hir-precondition")
    labels = [p.label for p in test.plan.points]
    points = {o["point"] for o in objs if o["test"] == test.name}
    iops_all = {
        o["point"]: o["value"]
        for o in objs
        if o["test"] == test.name and (o["metric"], o["direction"]) == ("iops", "all")
    }
    assert points == set(labels) and len(labels) == 30
    window = set(analysis.window(test))
    for label in (labels[0], labels[-1]):
        values = [
            q.iops for r in test.rounds if r.round in window for q in r.points if q.label == label
        ]
        assert iops_all[label] == pytest.approx(sum(values) / len(values), rel=1e-12)
    assert len(set(iops_all.values())) == len(labels)  # thirty different means
    # no two rows of one run say the same thing
    keys = Counter((o["test"], o["point"], o["direction"], o["metric"]) for o in objs)
    assert max(keys.values()) == 1


def test_csv_and_jsonl_carry_the_column_sets_version(
    pts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert EXPORT_VERSION == 2 and COLUMNS[-1] == "export_version"
    rows = list(csv.reader(io.StringIO(export(capsys, str(pts), "--format", "csv"))))
    assert tuple(rows[0]) == COLUMNS
    assert {r[-1] for r in rows[1:]} == {"2"}
    objs = [json.loads(x) for x in export(capsys, str(pts), "--format", "jsonl").splitlines()]
    assert {o["export_version"] for o in objs} == {2}
    assert all(tuple(o) == COLUMNS for o in objs)


# --------------------------------------------------------------------------- volume runs


@pytest.fixture(scope="module")
def volume_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Path]]:
    """A bulk-I/O sweep, a copy test, a virtual-file test and the ars fixed tests on
    one loop-mounted ext4, each reduced to seconds."""
    tmp = tmp_path_factory.mktemp("volexport")
    ars = tmp / "small.toml"
    ars.write_text(SMALL, encoding="utf-8")
    with mounted_volume(tmp, 300 * M, own_files=False) as (mnt, _dev):
        out = []
        for name, profile, overrides in (
            ("sweep", "bulk-sweep", SWEEP),
            ("copy", "copy", COPY),
            ("vfile", "vfile", VFILE),
            ("fixed", str(ars), []),
        ):
            args = ["run", "--profile", profile, "--target", str(mnt), "--out", str(tmp / name)]
            args += ["--yes", "--no-history", "--no-report", "-q"]
            for s in overrides:
                args += ["--set", s]
            assert cli.main(args) == 0
            out.append(tmp / name)
        yield out


@pytest.mark.fio
def test_openmetrics_of_every_test_type_together_is_accepted(
    pts: Path, volume_runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = [str(pts), *map(str, volume_runs)]
    families = parsed(export(capsys, *dirs, "--format", "openmetrics"))
    samples = [s for f in families.values() for s in f.samples]
    tests = {Path(s.labels["run_dir"]).name: set() for s in samples}
    for s in samples:
        tests[Path(s.labels["run_dir"]).name].add(s.labels["test"])
    assert set(tests) == {"run", "sweep", "copy", "vfile", "fixed"}
    assert tests["run"] == STAGED | BASIC
    assert tests["fixed"] == {"4k", "4k-fsync", "64k", "64k-fsync", "1m", "1m-fsync"}
    assert {"tkbench_nodes_per_second", "tkbench_runs_deviation_ratio"} <= set(families)
    assert len(samples) == len(export(capsys, *dirs, "--format", "jsonl").splitlines())
