"""A run's derived results are computed once (tkbench.kinds.results.analysed): one
report, one ``show``, one set of checks and one history entry of a stored run, given
the run's results, analyse each test once, however many of their parts read the
results -- page 1 and the history's repeated points among them, and the stages of the
tests beyond the basic four, whose chapters and ``show --json`` keys read what the
stage measured and what the stages before it measured.

The runs are real: a kept run directory of four steady-state and saturation tests,
a fixed test repeated three times by real fio on a regular file and on a
loop-mounted ext4 (a volume: page 1 speaks of its runs), a bulk-I/O sweep by real fio
on a loop-mounted ext4, the four staged PTS tests (HIR, XSR, CBW, DIRTH) shrunk to
fractions of a second by real fio on a regular file, and a replay test with the PTS
IOPS test beside it (its chapter reads its demand-intensity stages and the IOPS
test).  The only fake is the counter: each analysis function is wrapped in one that
counts its calls and then calls the real function, in every tkbench module that
imported it.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import STAGE_TESTS, mounted_volume, sets
from tests.test_repeat_until import FIXED
from tests.test_replay import captured, replay_run  # noqa: F401  (fixtures)
from tests.test_volume import needs_root
from tests.test_volume_history import SWEEP
from tkbench import analysis, cli
from tkbench.analysis import repeat
from tkbench.history.entry import entry_for
from tkbench.kinds.results import sweep
from tkbench.kinds.results.run import analyse_run
from tkbench.kinds.staged import results as stages
from tkbench.outputs import checks
from tkbench.outputs.show import format_summary, shown
from tkbench.profile.model import Acceptance, Criterion
from tkbench.report import analysis as report
from tkbench.report import options, render
from tkbench.rundir.store import load_run

KEPT = Path(__file__).resolve().parent / "data" / "rundirs" / "file-a"
# what is counted: the analysis of a test, its points' repeatability and where
# repeat_until stands, a sweep's result, and what a stage measured (wait states,
# transitions, a demand-intensity grid, operating points)
COUNTED = (
    (analysis, "analyze_test"),
    (repeat, "point_repeatability"),
    (repeat, "until_standing"),
    (sweep, "sweep_of"),
    (stages, "wait_states"),
    (stages, "transitions"),
    (stages, "grid"),
    (stages, "operating_results"),
)


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
            if not modname.startswith("tkbench"):
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
def repeated_on_volume(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of Ars Technica's 4 KiB recipe, shrunk and run three times, on ext4."""
    tmp = tmp_path_factory.mktemp("volume")
    profile = tmp / "small.toml"
    text = 'extends = "ars"\n[volume]\nreserve = "1M"\nmin_file_size = "1M"\n'
    text += '[tests.4k]\npoint_runtime = "300ms"\nfile_size = "4m"\nrepeat = 3\n'
    for other in ("4k-fsync", "64k", "64k-fsync", "1m", "1m-fsync"):
        text += f"[tests.{other}]\nenabled = false\n"
    profile.write_text(text)
    with mounted_volume(tmp, 200 * 1024 * 1024, own_files=False) as (mnt, _dev):
        args = ["run", "--profile", str(profile), "--target", str(mnt), "--out", str(tmp / "run")]
        assert cli.main([*args, "--yes", "--no-history", "--no-report"]) == 0
    return tmp / "run"


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of the four staged PTS tests, each stage a fraction of a second."""
    tmp = tmp_path_factory.mktemp("staged")
    args = ["run", "--profile", "quick", "--tests", "hir,xsr,cbw,dirth", "--size", "64M"]
    args += ["--target", str(tmp / "t.img"), "--out", str(tmp / "run"), "--yes", "-q"]
    assert cli.main([*args, "--no-history", "--no-report", *sets()]) == 0
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
    document and its text), the checks (steady state, a criterion on a point's
    spread and one on its IOPS, the volume figures, the headline) and the history's
    entry of a stored run, all given the run's one set of results.  Returns its number
    of tests and the text."""
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
    entry = entry_for(run, None, None, analysed)
    assert entry.headline == analysed.headline
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
    assert counts["point_repeatability"] == 1  # report, show, the criterion, the history
    assert counts["sweep_of"] == 0  # a basic test is asked of its type, not of a sweep


@needs_root
@pytest.mark.fio
def test_page_1_and_the_history_read_a_repeated_tests_results(
    repeated_on_volume: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = count_calls(monkeypatch)
    tests, text = report_show_and_check(repeated_on_volume)
    assert tests == 1 and "MiB/s: runs " in text
    # page 1's sentence of a volume's repeated test, the chapter, show, the history
    assert counts["point_repeatability"] == 1
    assert counts["until_standing"] == 1
    assert counts["analyze_test"] == 1


@needs_root
@pytest.mark.fio
def test_a_sweep_is_analysed_once(swept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counts = count_calls(monkeypatch)
    tests, text = report_show_and_check(swept)
    assert tests == 1 and "best read (buffered-seq-read)" in text
    assert counts["analyze_test"] == 1
    # the report's tables and repeat part, show's cells, the figures the checks read
    assert counts["sweep_of"] == 1


@pytest.mark.fio
def test_each_stage_is_analysed_once(staged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counts = count_calls(monkeypatch)
    tests, text = report_show_and_check(staged)
    assert tests == len(STAGE_TESTS) and "round(s)" in text
    # the recovery stage reads its preconditioning stage's window, the operating
    # stages their intensity stages': from those stages' one analysis
    assert counts["analyze_test"] == tests
    # each from its stage's one result: its chapter and show --json
    assert counts["wait_states"] == 1  # hir-recovery
    assert counts["transitions"] == 1  # xsr
    assert counts["grid"] == 2  # cbw-intensity, dirth-intensity
    assert counts["operating_results"] == 2  # cbw-operating, dirth-operating


@pytest.mark.fio
def test_a_replays_chapter_reads_its_stages_once(
    replay_run: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts = count_calls(monkeypatch)
    tests, text = report_show_and_check(replay_run)
    assert "replay captured" in text
    # "Your workload on this drive" reads the applied stage's and the IOPS test's
    # windows and the intensity and operating stages' results, as their chapters do
    assert counts["analyze_test"] == tests
    assert counts["grid"] == 1 and counts["operating_results"] == 1
