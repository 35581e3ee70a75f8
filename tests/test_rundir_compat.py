"""Run directories written by an earlier tkbench still read the same (no fio needed).

tests/data/rundirs/ keeps schema-1 run directories made by real runs (see its
README.md) and, in golden/, what tkbench computed from them when they were made:
``show --json``, ``compare --json``, ``history --add --json`` and the report
models (tests/_rundir_outputs.py lists them and the few fields ignored).  Every
output is recomputed here from the kept directories and must match: floats
within 1e-9 relative, everything else exactly.  A mismatch means the records
are read, or the numbers derived, differently than before: intended changes
need the golden copies regenerated and reviewed (make_rundirs.py --golden),
never the kept directories.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import _rundir_outputs as outputs
from tkbench import cli
from tkbench.errors import RunDirError
from tkbench.rundir.store import SCHEMA, load_run

RUNDIRS = outputs.RUNDIRS


def tree_digest(root: Path) -> dict[str, str]:
    """Every file and directory below ``root``: relative path -> sha256 (or "dir")."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# --------------------------------------------------------------------------- the kept runs


def test_every_golden_output_is_kept_and_no_other() -> None:
    kept = sorted(p.stem for p in outputs.GOLDEN.glob("*.json"))
    assert kept == sorted(outputs.names())


def test_the_kept_runs_are_what_the_readme_says() -> None:
    """What each kept directory exists to cover; a regenerated one must cover it too."""
    runs = {name: load_run(RUNDIRS / name) for name in outputs.RUNS}
    for name, run in runs.items():
        stored = json.loads((RUNDIRS / name / "manifest.json").read_text())
        assert stored["schema"] == SCHEMA == 1, name
        assert run.manifest.status == "complete", name
        assert run.manifest.fio_version == "fio-3.33", name
        assert all(t.result is not None for t in run.tests), name
        # the raw fio output and job file of every round are kept beside its record
        for t in run.tests:
            for r in t.rounds:
                stem = RUNDIRS / name / "tests" / t.name / "rounds" / f"{r.round:04d}"
                assert stem.with_suffix(".out").stat().st_size > 0
                assert stem.with_suffix(".fio").stat().st_size > 0
    a, b = runs["file-a"], runs["file-b"]
    assert [t.name for t in a.tests] == ["iops", "throughput", "latency", "wsat"]
    assert [t.name for t in b.tests] == ["iops", "throughput", "latency", "wsat"]
    assert a.manifest.target.kind == "file"
    # the same "drive" twice, so history and compare see two runs of one drive
    assert a.manifest.target.identity == b.manifest.target.identity
    for run in (a, b):
        verdicts = {t.name: t.result.steady_state if t.result else None for t in run.tests}
        assert verdicts == {"iops": True, "throughput": False, "latency": False, "wsat": None}
    emu = runs["emu"].manifest.target
    assert emu.kind == "nbd" and emu.identity["emulated"] is True
    resumed = runs["resumed"]
    assert [(r.test, r.action) for r in resumed.manifest.resumes] == [
        ("iops", "continue"),
        ("throughput", "re-precondition"),
    ]
    tp = resumed.test("throughput")
    assert [(r.round, r.segment) for r in tp.rounds] == [(1, 1), (2, 2), (3, 2), (4, 2)]
    assert tp.result is not None and tp.result.window == (
        2,
        3,
        4,
    )
    assert (RUNDIRS / "resumed" / "tests" / "throughput" / "precondition-s2.json").exists()


# --------------------------------------------------------------------------- golden outputs


@pytest.mark.parametrize("name", outputs.names())
def test_output_matches_golden(name: str) -> None:
    diffs = outputs.differences(
        outputs.golden(name), outputs.output(name), strict_types=outputs.strict_types_for(name)
    )
    assert not diffs, f"{name}: {len(diffs)} difference(s):\n" + "\n".join(diffs[:40])


def _copy_runs(tmp_path: Path) -> Path:
    base = tmp_path / "rundirs"
    for name in outputs.RUNS:
        shutil.copytree(RUNDIRS / name, base / name)
    return base


def _edit(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def test_a_changed_number_in_a_record_fails_the_comparison(tmp_path: Path) -> None:
    """The safety net holds: one stored value a millionth off shows up in every output
    that depends on it, and an untouched copy elsewhere shows nothing."""
    base = _copy_runs(tmp_path)
    for name in ("show-file-a", "report-file-a", "compare-file-a-file-b", "history-all"):
        same = outputs.differences(
            outputs.golden(name),
            outputs.output(name, base),
            strict_types=outputs.strict_types_for(name),
        )
        assert same == [], name  # a copy at another path: nothing but ignored fields differ

    label = "iops 4k 0/100"

    def nudge(rec: dict[str, Any]) -> None:
        rec["tracking"][label] *= 1 + 1e-6
        for p in rec["points"]:
            if p["bs"] == 4096 and p["read_pct"] == 0:
                p["iops"] *= 1 + 1e-6

    _edit(base / "file-a" / "tests" / "iops" / "rounds" / "0002.json", nudge)
    for name in ("show-file-a", "report-file-a", "compare-file-a-file-b", "history-all"):
        diffs = outputs.differences(
            outputs.golden(name),
            outputs.output(name, base),
            strict_types=outputs.strict_types_for(name),
        )
        assert diffs, f"{name}: a changed IOPS value went unnoticed"
    show = outputs.differences(outputs.golden("show-file-a"), outputs.output("show-file-a", base))
    assert any(".tracking.iops 4k 0/100[1]" in d for d in show), show


def test_a_changed_text_or_count_fails_the_comparison(tmp_path: Path) -> None:
    base = _copy_runs(tmp_path)

    def rename(m: dict[str, Any]) -> None:
        m["target"]["identity"]["model"] = "another model"

    _edit(base / "file-b" / "manifest.json", rename)
    (base / "emu" / "tests" / "wsat" / "rounds" / "0005.json").unlink()
    diffs = outputs.differences(outputs.golden("history-all"), outputs.output("history-all", base))
    assert any(".model:" in d for d in diffs), diffs
    diffs = outputs.differences(outputs.golden("show-emu"), outputs.output("show-emu", base))
    assert "$.tests[1].rounds: 5 -> 4" in diffs, diffs


def test_comparison_rules() -> None:
    d = outputs.differences
    assert d({"x": 1.0}, {"x": 1.0 + 1e-12}) == []
    assert d({"x": 1.0}, {"x": 1.0 + 1e-8}) != []
    assert d({"x": 0.0}, {"x": 1e-300}) != []
    assert d({"x": 3}, {"x": 4}) != []
    assert d({"x": 3}, {"x": 3.0}) != []  # int -> float changes the JSON text
    assert d({"x": 3}, {"x": 3.0}, strict_types=False) == []
    assert d({"x": True}, {"x": 1}, strict_types=False) != []
    assert d({"x": "a"}, {"x": "b"}) != []
    assert d({"x": None}, {"x": 0}) != []
    assert d({"x": 1}, {}) == ["$.x: missing"]
    assert d({}, {"y": 1}) != []
    assert d([1, 2], [1, 2, 3]) != []
    assert d({"non-finite": "nan"}, outputs.plain(float("nan"))) == []
    # ignored fields are replaced, and one that no longer exists is an error
    assert outputs.normalise("show", {"run_dir": "/x", "n": 1}) == {
        "run_dir": outputs.PLACEHOLDER,
        "n": 1,
    }
    with pytest.raises(AssertionError):
        outputs.normalise("show", {"n": 1})


# --------------------------------------------------------------------------- read-only


def test_show_compare_history_leave_the_run_directories_untouched() -> None:
    before = {name: tree_digest(RUNDIRS / name) for name in outputs.RUNS}
    outputs.all_outputs()
    after = {name: tree_digest(RUNDIRS / name) for name in outputs.RUNS}
    assert after == before


@pytest.mark.slow
@pytest.mark.parametrize("name", outputs.RUNS)
def test_report_of_a_kept_run(name: str, tmp_path: Path) -> None:
    before = tree_digest(RUNDIRS / name)
    pdf = tmp_path / "x.pdf"
    assert cli.main(["report", str(RUNDIRS / name), "--out", str(pdf)]) == 0
    assert pdf.read_bytes().startswith(b"%PDF-")
    assert pdf.with_suffix(".html").stat().st_size > 0
    assert tree_digest(RUNDIRS / name) == before


def test_kept_runs_have_no_target_proof_and_load_as_before(tmp_path: Path) -> None:
    """The resume proof's fields (docs/resume.md) are absent from every kept run: they
    read as None, and writing such a manifest back leaves them out, so an older tkbench
    reads it as it always did."""
    from tkbench.rundir.records import Manifest, TargetState
    from tkbench.rundir.records.base import dump

    for name in outputs.RUNS:
        path = RUNDIRS / name / "manifest.json"
        raw = json.loads(path.read_text())
        m = Manifest.load_checked(raw, path)
        assert (m.target.resolved, m.target.st_dev, m.target.st_ino, m.target.st_gen) == (
            None,
            None,
            None,
            None,
        )
        assert dump(m.target) == raw["target"]
        assert not (RUNDIRS / name / "target.json").exists()
    # a manifest with them keeps them; a target.json of a newer format is refused
    raw["target"].update(resolved="/srv/t.img", st_dev=64768, st_ino=12, st_gen=7)
    m = Manifest.load_checked(raw, path)
    assert (m.target.resolved, m.target.st_ino, m.target.st_gen) == ("/srv/t.img", 12, 7)
    assert m.to_json()["schema"] == SCHEMA == 1
    state = {"schema": 1, "size": 1, "digest": "ab", "writing": False, "at": 1.0}
    assert TargetState.load(state, tmp_path / "target.json").digest == "ab"
    with pytest.raises(RunDirError, match="newer tkbench"):
        TargetState.load({**state, "schema": 2}, tmp_path / "target.json")
