"""Every bundled profile and the example profile build to the specs and plans they
built to before the profile loader was rewritten as tables (issue 23).

``tests/data/profile-specs/NAME.json`` holds, for each case below, the profile as
built (every dataclass field, the merged TOML it records) and ``tkbench plan
--json``'s data on a fixed target.  The files were written once by running this
module as a script (``PYTHONPATH=. python tests/test_profile_frozen.py``) on the
loader before the rewrite (commit 08dd024); a change to them is a change to what a
profile means, to be made on purpose."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tkbench.plan import build as planmod
from tkbench.profile.build import load
from tkbench.targets.base import TargetInfo

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "profile-specs"
GiB = 1 << 30

# file name -> (profile, --set overrides); rwsw's plan needs a workload file: spec only
CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ars": ("ars", ()),
    "bulk-sweep": ("bulk-sweep", ()),
    "copy": ("copy", ()),
    "pts-c": ("pts-c", ()),
    "pts-e": ("pts-e", ()),
    "quick": ("quick", ()),
    "rwsw": ("rwsw", ()),
    "vfile": ("vfile", ()),
    "example-acceptance": (str(ROOT / "examples" / "acceptance.toml"), ()),
    # a test's own workload and rounds over the profile's, and a variant given up
    "quick-overridden": (
        "quick",
        (
            "tests.iops.workload.numjobs=2",
            "tests.iops.rounds.max=7",
            "workload.data_pattern=compressible",
            "pts_variant=none",
        ),
    ),
}
PLANNED = {name for name in CASES if name != "rwsw"}


def frozen(name: str) -> dict[str, Any]:
    """A case's profile as built and its plan, as plain JSON data."""
    ref, overrides = CASES[name]
    prof = load(ref, overrides)
    spec = json.loads(json.dumps(dataclasses.asdict(prof), default=str))
    spec["source"] = str(Path(prof.source).relative_to(ROOT))
    out: dict[str, Any] = {"profile": spec, "plan": None}
    if name in PLANNED:
        if prof.scope == "volume":
            target = TargetInfo("/mnt/v", "volume", 100 * GiB, 512, free=50 * GiB)
        else:
            target = TargetInfo("/dev/x", "block", 100 * GiB, 512)
        plan = planmod.to_json(planmod.build(prof, target))
        plan["profile"]["source"] = spec["source"]
        out["plan"] = json.loads(json.dumps(plan, default=str))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_bundled_profile_builds_to_its_frozen_specs_and_plan(name: str) -> None:
    want = json.loads((DATA / f"{name}.json").read_text())
    got = frozen(name)
    assert got["profile"] == want["profile"]
    assert got["plan"] == want["plan"]


def test_every_bundled_profile_is_frozen() -> None:
    bundled = {p.stem for p in (ROOT / "tkbench" / "profiles").glob("*.toml")}
    assert bundled <= set(CASES)


if __name__ == "__main__":
    DATA.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        text = json.dumps(frozen(case), indent=1, sort_keys=True) + "\n"
        (DATA / f"{case}.json").write_text(text)
