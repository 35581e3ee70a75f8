"""The test types (tkbench.kinds): one type per test, found alike from the profile and
from the stored test, and a package that imports in any order."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tkbench import kinds
from tkbench import profile as profilemod
from tkbench.plan import build as planmod

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
    prof = profilemod.load(name)
    plan = planmod.build(prof, _target(prof.scope))
    found = set()
    for t in plan.tests:
        typ = kinds.of_spec(t.spec)
        assert kinds.of_plan(t.record()) is typ, t.name
        found.add(typ.name)
    assert found == EXPECTED[name]


def test_one_type_claims_each_test_besides_the_basic() -> None:
    for name in EXPECTED:
        for spec in profilemod.load(name).tests:
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
            f"import {module}; import tkbench.profile; profile = tkbench.profile.load('pts-e')",
        ],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
