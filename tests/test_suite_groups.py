"""make test's grouping works: tests in one ``xdist_group`` run in one pytest-xdist
worker (tests/conftest.py puts the QEMU guest's tests in one group, so one guest boots,
and a module's tests that share a module-scoped fixture, a real run or a rendered PDF,
in one, so it is made once).  With pytest 9.2 and pytest-xdist 3.8, ``--dist loadgroup``
silently grouped nothing (pytest's node ids became structured; xdist still writes the
old field: pytest-xdist issue 1386), and make test booted the guest and made each
module's run in several workers; pyproject.toml keeps pytest below 9.2 for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import os
import pytest

@pytest.fixture(scope="module")
def shared():
    return os.environ["PYTEST_XDIST_WORKER"]

@pytest.mark.parametrize("i", range(6))
def test_probe(shared, i):
    with open(os.environ["PROBE_OUT"], "a") as fh:
        fh.write(f"{shared} {os.environ['PYTEST_XDIST_WORKER']}\\n")
"""

# as tests/conftest.py does: the group added at collection
CONFTEST = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group("probe"))
"""


def test_one_group_runs_in_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = tmp_path / "workers.txt"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "3", "--dist", "loadgroup", "-q",
         "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, env={**os.environ, "PROBE_OUT": str(out)},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = out.read_text().split("\n")[:-1]
    assert len(lines) == 6
    # one worker ran all six, and made the module's fixture once
    assert len(set(lines)) == 1 and len(set(lines[0].split())) == 1, lines
