"""The report's chapters of the stages beyond the basic four (HIR, XSR, CBW, DIRTH),
from one real run: fio on a regular file, the FAST overrides, every stage.  The PDF
is read back with pdftotext; the numbers expected are those ``tkbench show --json``
prints (tkbench.outputs.showparts), formatted as the report formats them."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import STAGE_TESTS, layout_text, sets
from tkbench import cli
from tkbench.kinds.staged.results import PERCENTILES
from tkbench.report import build_report
from tkbench.report.fmt import duration, sig

pytestmark = [
    pytest.mark.fio,
    pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils"),
]

# XSR groups long enough for five samples each, so that recovery times are determined
GROUPS = 'tests.xsr.groups=["128k sequential 2s", "4k random 2s", "128k sequential 2s"]'
STAGES = tuple(STAGE_TESTS)


def pdf_text(pdf: Path) -> str:
    """The PDF's text with its layout (a table row stays one line), spaces collapsed
    within each line."""
    out = layout_text(pdf)
    lines = [" ".join(line.split()) for line in out.splitlines() if line.strip()]
    # the page furniture (running footer and header) out, so that a sentence or a
    # chapter that crosses a page reads on
    footer = re.compile(r"Page \d+ of \d+$")
    at = next(i for i, line in enumerate(lines) if footer.search(line))
    header = lines[at + 1]
    return "\n".join(line for line in lines if not footer.search(line) and line != header)


def flat(text: str) -> str:
    """``text`` as one line: sentences that wrapped are whole again."""
    return text.replace("\n", " ")


def show_json(run: Path) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["show", str(run), "--json"]) == 0
    return dict(json.loads(out.getvalue()))


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    """The run, its ``show --json`` by test name, and its report's text."""
    tmp = tmp_path_factory.mktemp("stages")
    run = tmp / "run"
    argv = ["run", "--profile", "quick", "--target", str(tmp / "t.img"), "--size", "64M"]
    extra = ["--tests", "hir,xsr,cbw,dirth", *sets(GROUPS)]
    assert cli.main([*argv, "--yes", "--out", str(run), "--no-report", "--no-history", *extra]) == 0
    shown = {t["name"]: t for t in show_json(run)["tests"]}
    assert tuple(shown) == STAGES
    return run, shown, pdf_text(build_report(run, tmp / "report.pdf"))


# show --json rounds IOPS and CPU % to 3 decimals, milliseconds to 6: a value the
# report formats to 4 (CPU: 3) significant digits may round either way of that
GRID = (("iops", 5e-4, 4), ("mean_latency_ms", 5e-7, 4), ("cpu_pct", 5e-4, 3))


def near(token: str, value: float, eps: float, digits: int = 4) -> bool:
    """``token`` is ``value`` as the report formats it, give or take ``eps``."""
    return token in {sig(value - eps, digits), sig(value, digits), sig(value + eps, digits)}


def chapters(text: str, shown: dict[str, Any]) -> dict[str, str]:
    """Each test's chapter of the report text: from its heading to the next one."""
    pos = text.index("The report header in the manner of the SNIA PTS")  # the set-up chapter
    starts = []
    for t in shown.values():
        words = r"\s+".join(re.escape(w) for w in t["title"].split())  # a heading may wrap
        # a heading is a line of its own, with its badge (the set-up's list of
        # departures names the tests too, within its lines)
        found = re.compile(rf"(?m)^{words}(?: [A-Z][A-Z ()]*)?$").search(text, pos + 1)
        assert found is not None, t["title"]
        pos = found.start()
        starts.append(pos)
    ends = [*starts[1:], text.index("How the numbers are derived", starts[-1])]
    return {name: text[a:b] for name, a, b in zip(shown, starts, ends, strict=True)}


def lines(text: str) -> list[str]:
    return text.splitlines()


def laid_out(run: Path) -> list[str]:
    """The report's lines as laid out on the page, runs of spaces made one: a table
    row whole, where plain pdftotext may read a short table column by column."""
    pdf = run.parent / "report.pdf"
    return [" ".join(x.split()) for x in layout_text(pdf).splitlines()]


def test_precondition_stages_keep_the_steady_state_chapter(staged) -> None:
    run, shown, text = staged
    ch = chapters(text, shown)
    for name in ("hir", "cbw", "dirth"):
        plan = json.loads((run / "tests" / f"{name}-precondition" / "test.json").read_text())
        n = len(plan["points"])
        k = next(i for i, p in enumerate(plan["points"]) if not p.get("role")) + 1  # tracked
        which = "first" if k == 1 else "last" if k == n else f"#{k}"
        part = flat(ch[f"{name}-precondition"])
        assert "Steady-state convergence" in part and "Steady-state verification" in part
        assert f"IOPS of the tracked interval (#{k} of {n}) per round" in part
        assert f"{n} identical intervals" in part and f"reads the {which} interval (#{k})" in part
        if plan.get("precondition"):  # CBW, DIRTH: the purge, then 2x capacity of writes
            assert "sequential writes" in part and "this stage is the test's" not in part
        else:  # HIR: none before the stage, which is the preconditioning itself
            assert "none: this stage is the test's preconditioning" in part
        assert "by block size and R/W mix" not in part  # one cell: the tracked interval
    assert "composite (512 4 %" in ch["cbw-precondition"]  # not "0"


def test_host_idle_recovery_table_and_plot(staged) -> None:
    run, shown, text = staged
    part = chapters(text, shown)["hir-recovery"]
    rec = shown["hir-recovery"]
    assert (
        f"Steady-state IOPS of the preconditioning stage: {sig(rec['steady_state_iops'])}"
        in flat(part)
    )
    waits = rec["wait_states"]
    assert [w["idle_s"] for w in waits] == [0.3, 0.6]
    for w in waits:
        assert w["bursts"] >= 2 and w["recovery"] is not None
        # the row: idle, bursts, mean IOPS, recovery (%), return to baseline
        head = f"{w['idle_s']:g} {w['bursts']} {sig(w['mean_iops'])} "
        row = next(x for x in [*lines(part), *laid_out(run)] if x.startswith(head))
        found = re.fullmatch(r"(\d+\.\d) % (\S+)", row[len(head) :])
        assert found is not None, row
        # show rounds the ratio to 4 decimals, the report shows the % to 1
        assert abs(float(found[1]) - 100 * w["recovery"]) <= 0.051
        assert found[2] == sig(w["baseline_iops"])
    assert "Host idle recovery per wait state" in flat(part)
    assert "IOPS over time. IOPS of every sample (100 ms each)" in flat(part)
    assert "idle 300 ms" in flat(part) and "baseline" in flat(part)  # the spans are labelled
    for generic in ("by block size and R/W mix", "Steady-state convergence", "Rounds Tracking"):
        assert generic not in flat(part)
    said = re.search(r"Recovery \(mean IOPS of the write bursts ÷ steady-state IOPS\): "
                     r"(\d+\.\d) % after idle 300 ms", flat(text))  # fmt: skip
    assert said is not None and abs(float(said[1]) - 100 * waits[0]["recovery"]) <= 0.051


def test_cross_stimulus_transitions_and_plots(staged) -> None:
    run, shown, text = staged
    part = chapters(text, shown)["xsr"]
    pdf = run.parent / "report.pdf"
    layout = layout_text(pdf).splitlines()
    xs = shown["xsr"]["transitions"]
    assert [(x["from"], x["to"], x["group"]) for x in xs] == [
        ("128k sequential", "4k random", 2),
        ("4k random", "128k sequential", 3),
    ]
    for x in xs:
        assert x["recovery_s"] is not None  # two-second groups: enough samples
        # the row as laid out on the page (plain text order is pdftotext's guess, which
        # may read this table column by column)
        row = next(r for r in layout if f"{x['from']} → {x['to']}" in r)
        cells = re.split(r"\s{2,}", row.strip())
        assert cells[1:3] == [str(x["group"]), duration(x["recovery_s"])] or (
            cells[1] == str(x["group"])
            and cells[2].replace(" ", "") == duration(x["recovery_s"]).replace(" ", "")
        ), cells
        assert near(cells[3], x["settled_mbs"], 5e-4), cells
    assert "Throughput over time." in flat(part) and "Mean response time over time." in flat(part)
    assert "The maximum response time per interval is not sampled: fio 3.33" in flat(part)
    # three groups, not groups 1 and 3 merged into one cell (rows as laid out: the
    # plain text may read the table column by column; a label may wrap after its size)
    groups = [r.split() for r in layout if re.match(r"\s*[123]\s+(128k|4k)\s", r)]
    assert [tuple(g[:2]) for g in groups][:3] == [("1", "128k"), ("2", "4k"), ("3", "128k")]
    # each group's largest response time, at least its mean
    for g in groups[:3]:
        mean_ms, max_ms = (float(v.replace(",", "")) for v in g[-2:])
        assert max_ms >= mean_ms > 0, g
    assert "by block size and R/W mix" not in flat(part) and "Steady-state convergence" not in flat(
        part
    )


@pytest.mark.parametrize("test", ["cbw", "dirth"])
def test_intensity_grid_and_plots(staged, test: str) -> None:
    _run, shown, text = staged
    part = chapters(text, shown)[f"{test}-intensity"]
    cells = {(c["threads"], c["iodepth"]): c for c in shown[f"{test}-intensity"]["grid"]}
    assert set(cells) == {(2, 2), (2, 1), (1, 2), (1, 1)}
    # rows T2 and T1 of the three tables in order: IOPS, mean response time, CPU %
    for t in (2, 1):
        rows = [x.split() for x in lines(part) if x.startswith(f"T{t} ") and len(x.split()) == 3]
        assert len(rows) == 3, rows
        for row, (key, eps, digits) in zip(rows, GRID, strict=True):
            for token, q in zip(row[1:], (2, 1), strict=True):
                assert near(token, cells[t, q][key], eps, digits), (row, key)
    assert "IOPS by thread count and queue depth" in flat(part)
    assert "Demand variation. IOPS over the queue depth" in flat(part)
    assert "Demand intensity. Mean response time over IOPS" in flat(part)
    # the tracked top load's steady-state evidence stays; the merged matrix does not
    assert "IOPS of the tracked load, T2/Q2, per round" in flat(part)
    assert "Steady-state verification" in flat(part)
    assert "by block size and R/W mix" not in flat(part)


@pytest.mark.parametrize("test", ["cbw", "dirth"])
def test_operating_points_table_and_histograms(staged, test: str) -> None:
    run, shown, text = staged
    part = chapters(text, shown)[f"{test}-operating"]
    ops = shown[f"{test}-operating"]["operating_points"]
    assert list(ops) == ["max", "mid", "min"]
    # a column for every percentile some point has (show --json leaves a blank one
    # out); a point without it has a dash there
    kept = [k for k in PERCENTILES if any(k in o["percentiles_ms"] for o in ops.values())]
    for name, title in (("max", "MaxIOPS"), ("mid", "MidIOPS"), ("min", "MinIOPS")):
        o = ops[name]
        head = f"{title} {o['threads']} {o['iodepth']} "
        row = next(x.split() for x in [*lines(part), *laid_out(run)] if x.startswith(head))
        pct = [o["percentiles_ms"].get(k) for k in kept]
        assert len(row) == 8 + len(kept), row
        assert row[1:3] == [str(o["threads"]), str(o["iodepth"])]
        expected = [
            (o["iops"], 5e-4, 4),
            (o["mean_latency_ms"], 5e-7, 4),
            (o["max_latency_ms"], 5e-7, 4),
            *((v, 0.0, 4) for v in pct),  # whole ns: exact in show --json
        ]
        for token, (value, eps, digits) in zip(row[3:], expected, strict=False):
            if value is None:
                assert token == "–", row
            else:
                assert near(token, value, eps, digits), (row, value)
        assert row[-2] == f"{o['samples']:,}"
        assert near(row[-1], o["cpu_pct"], 5e-4, 3), row
        assert f"{title} (T{o['threads']}/Q{o['iodepth']}): {o['why']}." in flat(part)
        assert f"Response-time histogram and confidence levels, {title}." in flat(part)
        assert "99.9999" not in o["percentiles_ms"]  # far too few I/Os: no column
    assert "99.9999 %" not in next(x for x in lines(part) if x.startswith("Point Threads"))
    assert "99.9999 % needs 10,000,000 I/Os" in flat(part)
    assert "left out of the table" in flat(part)
    assert "Response-time histograms Response-time histograms" not in flat(part)
    assert "by block size and R/W mix" not in flat(part)


def test_stages_without_rounds_still_render(staged, tmp_path: Path) -> None:
    """An interrupted run: the XSR and operating stages without rounds, the HIR
    preconditioning without its window.  The report says so; no traceback."""
    run, _shown, _text = staged
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    for name in ("hir-precondition", "xsr", "dirth-operating"):
        # its rounds (and a stage's parts: rounds/0001.parts/) never stored
        shutil.rmtree(copy / "tests" / name / "rounds")
        (copy / "tests" / name / "result.json").unlink()
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["status"] = "interrupted"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    text = pdf_text(build_report(copy, tmp_path / "r.pdf"))
    text = flat(text)
    assert "Steady-state IOPS of the preconditioning stage: not known" in text
    assert "No operating point was measured" not in text  # no rounds: the status says it
    assert "INTERRUPTED before the test finished; 0 complete rounds shown." in text
