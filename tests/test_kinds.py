"""The test types (tkbench.kinds): one type per test, found alike from the profile and
from the stored test, and a package that imports in any order."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tkbench import kinds
from tkbench.conformance import requirements
from tkbench.conformance.ptsstages import STAGED
from tkbench.plan import build as planmod
from tkbench.profile.build import load as load_profile
from tkbench.report.parts import PARTS

ROOT = Path(__file__).resolve().parent.parent
GiB = 1 << 30

# the type each bundled profile's tests are of (staged: their stages)
PTS = {"basic", "hir", "xsr", "intensity"}
EXPECTED = {
    "quick": PTS,
    "ars": {"basic"},
    "pts-e": PTS,
    "pts-c": PTS,
    "bulk-sweep": {"sweep"},
    "copy": {"copy"},
    "vfile": {"vfile"},
}


def _target(scope: str) -> planmod.TargetInfo:
    if scope == "volume":
        return planmod.TargetInfo("/srv/data", "volume", 200 * GiB, 512, 100 * GiB, True)
    return planmod.TargetInfo("/dev/x", "block", 400 * 10**9, 512)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_planned_test_is_stored_as_the_type_its_profile_test_is(name: str) -> None:
    """The type found from the profile (planning) and the one found from test.json (show,
    report, history) agree for every planned test of every bundled profile."""
    prof = load_profile(name)
    plan = planmod.build(prof, _target(prof.scope))
    found = set()
    for t in plan.tests:
        typ = kinds.of_spec(t.spec)
        assert kinds.of_plan(t.record()) is typ, t.name
        found.add(typ.name)
    assert found == EXPECTED[name]


def test_one_type_claims_each_test_besides_the_basic() -> None:
    for name in EXPECTED:
        for spec in load_profile(name).tests:
            claimed = [t.name for t in kinds.TYPES if t.claims(spec)]
            assert claimed[-1] == "basic" and len(claimed) <= 2, (name, spec.name, claimed)


@pytest.mark.parametrize(
    "module",
    [
        "tkbench.plan.model",
        "tkbench.kinds",
        "tkbench.kinds.sweep",
        "tkbench.profile",
        "tkbench.profile.model",
        "tkbench.profile.build",
        "tkbench.fio.jobfile",
        "tkbench.kinds.figures",
        "tkbench.plan.build",
    ],
)
def test_the_planning_modules_import_first_in_any_order(module: str) -> None:
    """profile.build asks the kinds, the kinds use the profile's model: a module of either
    side imported first must not find the other half-built."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import {module}; import tkbench.profile.build; "
            "profile = tkbench.profile.build.load('pts-e')",
        ],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr


# a test type's name in quotes, a stage or procedure compared, a sweep's or a virtual
# file's key read as a sentinel: code asking which type a test is
TYPE_BRANCH = re.compile(
    r'"(hir|xsr|cbw|dirth|copy|sweep|vfile)"|procedure ==|stage ==|\.modes\b|\.nodes\b'
)
# the lines outside tkbench/kinds/ that match and ask no such thing
NOT_BRANCHES = {
    # the names a profile's key takes (the schema lies below the types)
    ("tkbench/profile/model.py", 'KINDS = ("steady", "saturation", "fixed", "copy")'),
    ("tkbench/profile/model.py", 'PROCEDURES = ("", "hir", "xsr", "cbw", "dirth")'),
    # the copy stop rule's name in the registry of stop rules, and its report section's
    ("tkbench/analysis/stoprules.py", 'name = "copy"'),
    ("tkbench/report/sections.py", 'kind = "copy"'),
    # the demo profile's test names, not types
    ("tkbench/engine/runs.py", 'for name in ("cbw", "dirth")'),
    # a sweep's and a virtual file's report parts reading their own results
    ("tkbench/report/sweep.py", "for m in sw.modes:"),
    ("tkbench/report/sweep.py", "rows += [_row(m.title, m.best) for m in sw.modes]"),
    ("tkbench/report/vfile.py", 'f"A database of {vf.nodes:,} nodes in one file on this volume: "'),
    ("tkbench/report/vfile.py", 'f"{vf.nodes:,} nodes of {vf.node_size:,} bytes in one file "'),
}


def test_no_code_outside_the_types_asks_which_type_a_test_is() -> None:
    """Outside tkbench/kinds/ code asks a test's type (kinds.of_spec, of_plan, of_keys)
    and never names one, so that adding a type touches none of it (docs/architecture.md,
    "A test type")."""
    root = Path(kinds.__file__).parents[2]
    found = set()
    for path in sorted((root / "tkbench").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("tkbench/kinds/"):
            continue
        for line in path.read_text().splitlines():
            if TYPE_BRANCH.search(line):
                found.add((rel, line.strip()))
    assert found == NOT_BRANCHES


def test_each_staged_type_carries_its_requirement_rows_and_reference() -> None:
    """The PTS rows and reference values of a test of several stages are its type's;
    conformance holds no list of procedures or stages of its own."""
    staged = [t for t in kinds.TYPES if t.procedures]
    assert {p for t in staged for p in t.procedures} == set(STAGED) == set(requirements.STAGES)
    for t in staged:
        for proc in t.procedures:
            assert STAGED[proc] is t.pts_reference(proc)
            assert requirements.STAGES[proc] == t.stages
            for stage in t.stages:
                rows = [(r.name, r.params, r.source) for r in t.requirement_rows(proc, stage)]
                table = requirements.rows_for(f"{proc}/{stage}")
                assert rows and rows == [(r.name, r.params, r.source) for r in table]


def test_every_report_part_a_type_names_is_one_the_report_has() -> None:
    named = {t.report_part for t in kinds.TYPES}
    assert named <= set(PARTS) and "" in named
