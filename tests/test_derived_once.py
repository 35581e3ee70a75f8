"""A run's derived results are computed once (tkbench.kinds.results.analysed): one
report, one ``show`` and one set of checks of a stored run, given the run's results,
analyse each test once, however many of their parts read the results.

The runs are real: a kept run directory of four steady-state and saturation tests,
a fixed test repeated three times by real fio on a regular file, and a bulk-I/O
sweep by real fio on a loop-mounted ext4.  The only fake
is the counter: each analysis function is wrapped in one that counts its calls and
then calls the real function, in every tkbench module that imported it.  Page 1's
own repeatability sentence (tkbench/report/header.py) keeps its own call and is not
counted here.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import mounted_volume, sets
from tests.test_repeat_until import FIXED
from tests.test_volume import needs_root
from tests.test_volume_history import SWEEP
from tkbench import analysis, cli
from tkbench.analysis import repeat
from tkbench.kinds.results import sweep
from tkbench.kinds.results.run import analyse_run
from tkbench.outputs import checks
from tkbench.outputs.show import format_summary, shown
from tkbench.profile.model import Acceptance, Criterion
from tkbench.report import analysis as report
from tkbench.report import options, render
from tkbench.rundir.store import load_run

KEPT = Path(__file__).resolve().parent / "data" / "rundirs" / "file-a"
# what is counted: the analysis of a test, its points' repeatability, a sweep's result
COUNTED = (
    (analysis, "analyze_test"),
    (repeat, "point_repeatability"),
    (sweep, "sweep_of"),
)
NOT_COUNTED = {"tkbench.report.header"}  # page 1's own call (another part's)


def count_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Wrap each counted function in a counter, wherever a tkbench module holds it."""
    counts: Counter[str] = Counter()
    for home, name in COUNTED:
        real = getattr(home, name)

        def counting(*args: Any, _real: Callable[..., Any] = real, _name: str = name) -> Any:
            counts[_name] += 1
            return _real(*args)

        for mod in list(sys.modules.values()):
            modname = getattr(mod, "__name__", "")
            if not modname.startswith("tkbench") or modname in NOT_COUNTED:
                continue
            if getattr(mod, name, None) is real:
                monkeypatch.setattr(mod, name, counting)
    return counts


@pytest.fixture(scope="module")
def repeated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of one fixed test, one 64k point run three times, on a file."""
    tmp = tmp_path_factory.mktemp("repeated")
    args = ["run", "--profile", "quick", "--target", str(tmp / "t.img"), "--size", "16M"]
    args += ["--yes", "--out", str(tmp / "run"), "--no-history", "--no-report"]
    fixed = [o for o in FIXED if not o.startswith("tests.iops.block_sizes=")]
    overrides = [*fixed, 'tests.iops.block_sizes=["64k"]', "tests.iops.repeat=3"]
    assert cli.main([*args, *sets(*overrides)]) == 0
    return tmp / "run"


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bulk-I/O sweep (2 sizes x 2 counts x 2 modes, two runs) on ext4."""
    tmp = tmp_path_factory.mktemp("swept")
    with mounted_volume(tmp, 300 * 1024 * 1024, own_files=False) as (mnt, _dev):
        args = ["run", "--profile", "bulk-sweep", "--target", str(mnt), "--out", str(tmp / "run")]
        args += ["--yes", "--no-history", "--no-report"]
        for o in SWEEP:
            args += ["--set", o]
        assert cli.main(args) == 0
    return tmp / "run"


def report_show_and_check(run_dir: Path) -> tuple[int, str]:
    """One report (its model and its HTML with every figure), one ``show`` (its
    document and its text) and the checks (steady state, a criterion on a point's
    spread and one on its IOPS, the volume figures, the headline) of a stored run,
    all given the run's one set of results.  Returns its number of tests and the text."""
    run = load_run(run_dir)
    analysed = analyse_run(run)
    model = report.analyze(run, options.resolve_options(run.manifest), 0.0, analysed)
    render.build_document(model)
    text = format_summary(shown(run, analysed))
    criteria = ("iops mean_abs_dev_pct 64k 0/100 <= 50", "iops iops 64k 0/100 >= 1")
    acc = Acceptance(True, tuple(Criterion.parse(c) for c in criteria), 5.0)
    found = checks.steady_checks(analysed) + checks.criterion_checks(analysed, acc)
    assert found  # the checks ran
    checks.run_figure_runs(analysed)
    assert analysed.headline == analysis.headline(run)
    return len(run.tests), text


def test_a_kept_runs_tests_are_each_analysed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = count_calls(monkeypatch)
    tests, text = report_show_and_check(KEPT)
    assert tests == 4 and "round(s)" in text
    assert counts["analyze_test"] == tests
    assert counts["point_repeatability"] == 1  # the spread criterion's test
    assert counts["sweep_of"] == 0  # no sweep: a basic test is asked of its type


@pytest.mark.fio
def test_a_repeated_test_is_analysed_once(repeated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counts = count_calls(monkeypatch)
    tests, text = report_show_and_check(repeated)
    assert tests == 1 and "MiB/s: runs " in text  # show lists the point's three runs
    assert counts["analyze_test"] == 1
    assert counts["point_repeatability"] == 1  # report, show and the spread criterion
    assert counts["sweep_of"] == 0  # a basic test is asked of its type, not of a sweep


@needs_root
@pytest.mark.fio
def test_a_sweep_is_analysed_once(swept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counts = count_calls(monkeypatch)
    tests, text = report_show_and_check(swept)
    assert tests == 1 and "best read (buffered-seq-read)" in text
    assert counts["analyze_test"] == 1
    # the report's tables and repeat part, show's cells, the figures the checks read
    assert counts["sweep_of"] == 1
