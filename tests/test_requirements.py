"""The PTS requirement table of all eight tests, and the claim that follows its judgement.

Pure tests plan the bundled profiles and change one parameter at a time: every
planned parameter has a row (or an entry saying why it is no stimulus), every
departure the issue found is listed and makes ``pts.conforms`` false, and every
operator choice is stated, never counted.  The real-fio test interrupts a quick
XSR before any access group is stored, after a round-limited HIR, and reads the
judgement back from ``show --json`` and the PDF (page 1, the page headers, the
file's metadata).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests._helpers import STAGED_OFF, layout_text, sets, start_tkbench
from tests.test_pts import cache_set, planned, stored_run
from tkbench import cli, profile
from tkbench.conformance import judge_plan, judge_run
from tkbench.conformance import requirements as table
from tkbench.conformance.pts import Judgement
from tkbench.kinds.staged import common as procedures
from tkbench.plan import build as planmod
from tkbench.profile.build import load as load_profile
from tkbench.report import analysis, build_report, header, options, render
from tkbench.rundir import store
from tkbench.rundir.records import OperatingPoint
from tkbench.rundir.store import load_run

BASIC_OFF = [f"tests.{t}.enabled=false" for t in ("iops", "throughput", "latency", "wsat")]
# what fio 3.33 cannot do, so every HIR and XSR plan departs in it (docs/methodology.md)
FIO_LIMITS = {
    ("hir-recovery", "first burst of each wait state"),
    ("xsr", "maximum response time per minute"),
}


def found(j: Judgement) -> set[tuple[str | None, str]]:
    return {(d.test, d.requirement) for d in j.departures}


# --------------------------------------------------------------------------- the table


@pytest.mark.parametrize("sector", [512, 4096])
def test_every_planned_parameter_has_a_row_or_says_why_not(sector: int) -> None:
    """A test kind cannot be added, nor a parameter to test.json, without rows: each
    planned parameter of each test of every bundled profile is governed by a
    requirement, an explicit operator choice, or a not-judged entry with its reason."""
    seen: set[str] = set()
    claiming = []
    for name in profile.available():
        prof = load_profile(name)
        if prof.pts_variant is None:
            continue  # a volume benchmark: no PTS claim, nothing judged against the table
        claiming.append(name)
        target = planmod.TargetInfo("/dev/x", "block", 64 * 2**30, sector)
        pl = planmod.build(prof, target)
        judged = judge_plan(pl)
        for t in pl.tests:
            rec = t.record()
            key = table.family(rec)
            if not table.rows_for(key):
                # a test the PTS does not define: the whole test departs (when claimed)
                assert judged.variant is None or (t.name, "test") in found(judged), t.name
                continue
            seen.add(key)
            covered = table.covered(key)
            missing = [p for p in table.parameters(rec) if p not in covered]
            assert missing == [], f"{name}: {t.name} ({key}) has no row for {missing}"
    # every family and stage of the eight tests was planned and checked
    assert seen == set(table.TABLE)
    assert {"pts-e", "pts-c", "quick"} <= set(claiming)


def test_every_row_names_its_source() -> None:
    kinds = {r.source.kind for rows in table.TABLE.values() for r in rows}
    assert kinds == {table.TEXT, table.IMPL, table.CHOICE}
    for rows in (*table.TABLE.values(), *table.GROUP_ROWS.values()):
        for r in rows:
            assert r.source.where, r.name
            # a choice is stated, never judged; a fixed requirement is never stated
            assert r.check is None if r.choice else r.state is None, r.name
    for rows in table.TABLE.values():  # judged here, or from the records (the purge)
        assert all(r.check is not None for r in rows if not r.choice and r.name != "purge")
    # the staged four: nothing of them could be read in the 2.0.2 text but the
    # steady-state definition (§2.1.24)
    staged = {r.name for k, rows in table.TABLE.items() if "/" in k for r in rows}
    text = {
        r.name
        for k, rows in table.TABLE.items()
        if "/" in k
        for r in rows
        if r.source.kind == table.TEXT
    }
    assert text == {"data excursion limit", "slope excursion limit"} and text < staged


# --------------------------------------------------------------------------- plans

# one override, the departures it must add (and nothing else), as (test, requirement)
DEPARTURES = [
    (("tests.hir.pattern=sequential",),
     {("hir-precondition", "access pattern"), ("hir-recovery", "access pattern")}),
    (('tests.hir.block_sizes=["8k"]',),
     {("hir-precondition", "block sizes"), ("hir-recovery", "block sizes")}),
    (('tests.xsr.mixes=["65/35"]',), {("xsr", "R/W mix")}),
    (("tests.cbw.pattern=sequential",),
     {(f"cbw-{s}", "access pattern") for s in ("precondition", "intensity", "operating")}),
    (("tests.dirth.pattern=sequential",),
     {(f"dirth-{s}", "access pattern") for s in ("precondition", "intensity", "operating")}),
    (("tests.latency.histogram=false",), {("latency", "response-time histogram")}),
    (("tests.latency.percentiles=[99.0, 99.9]",), {("latency", "response-time statistics")}),
    (("tests.wsat.percentiles=[99.0]",), {("wsat", "response-time statistics")}),
    (("tests.latency.response_histogram=0s",), {("latency", "response-time histogram phase")}),
    (("tests.wsat.response_histogram=5m",), {("wsat", "response-time histogram phase")}),
    (("tests.iops.workload.ioengine=psync",), {("iops", "I/O engine")}),
    (("tests.xsr.workload.ioengine=psync",), {("xsr", "I/O engine")}),
    (('tests.wsat.bssplit=["4k/50","8k/50"]', 'tests.wsat.tracking=["iops composite 0/100"]'),
     {("wsat", "block sizes (composite)"), ("wsat", "LBA zones")}),
    (("tests.hir.rounds.max=10",), {("hir-precondition", "round limit")}),
    (("tests.cbw.intervals=20",), {("cbw-precondition", "preconditioning round")}),
    (("tests.xsr.workload.iodepth=16",), {("xsr", "outstanding I/O")}),
    (("tests.hir.workload.iodepth=16",),
     {("hir-precondition", "preconditioning load"), ("hir-recovery", "outstanding I/O")}),
    (("tests.xsr.sample=10s",), {("xsr", "sampling")}),
    (("tests.dirth.zones=[\"50/5\", \"50/95\"]",),
     {(f"dirth-{s}", "LBA zones") for s in ("precondition", "intensity", "operating")}),
]  # fmt: skip

# the staged tests' preconditioning, judged like the basic four's (basic four off)
STAGED_WIPC = [
    ("precondition.capacity_multiple=0.5", "preconditioning amount", "0.5x the user capacity"),
    ("precondition.bs=4k", "preconditioning block size", "sequential 4k writes"),
    ("precondition.max_duration=1h", "preconditioning complete", "time limit of 1h"),
]


@pytest.mark.parametrize(("overrides", "departures"), DEPARTURES)
def test_each_departure_of_a_plan_is_listed(
    overrides: tuple[str, ...], departures: set[tuple[str, str]]
) -> None:
    base = found(judge_plan(planned("pts-e")))
    assert base == FIO_LIMITS  # what fio 3.33 cannot do, and nothing else
    j = judge_plan(planned("pts-e", *overrides))
    assert not j.conforms and j.to_dict()["conforms"] is False
    assert found(j) - base == departures


# a run's records: the plan's limits that may stop a test early depart only if they did
PLAN_ONLY = {"round limit", "preconditioning complete"}
WITH_FIO_LIMITED = ("tests.hir.enabled=true", "tests.xsr.enabled=true")


@pytest.mark.parametrize(("overrides", "departures"), DEPARTURES)
def test_each_departure_of_a_run_is_listed(
    overrides: tuple[str, ...], departures: set[tuple[str, str]]
) -> None:
    """The same mutations judged from what a complete run of the plan recorded."""
    wc = cache_set()
    base = found(judge_run(stored_run("pts-e", *WITH_FIO_LIMITED), wc))
    assert base == FIO_LIMITS
    j = judge_run(stored_run("pts-e", *WITH_FIO_LIMITED, *overrides), wc)
    want = {d for d in departures if d[1] not in PLAN_ONLY}
    assert found(j) - base == want
    assert j.conforms is False


@pytest.mark.parametrize(("override", "requirement", "actual"), STAGED_WIPC)
def test_the_staged_tests_preconditioning_is_judged(
    override: str, requirement: str, actual: str
) -> None:
    j = judge_plan(planned("pts-e", override, *BASIC_OFF))
    assert found(j) - FIO_LIMITS == {
        ("cbw-precondition", requirement),
        ("dirth-precondition", requirement),
    }
    assert all(actual in d.actual for d in j.departures if d.requirement == requirement)


def test_plan_json_lists_a_departure(tmp_path: Path) -> None:
    """``plan --json`` carries the judgement: one mutation, listed, conforms false."""
    argv = ["plan", "--profile", "pts-e", "--target", str(tmp_path / "t.img"), "--size", "1G"]
    argv += ["--json", "--no-jobs", "--tests", "latency"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*argv, "--set", "tests.latency.histogram=false"]) == 0
    pts = json.loads(out.getvalue())["pts"]
    assert pts["conforms"] is False
    assert {
        "test": "latency",
        "requirement": "response-time histogram",
        "required": "fio's full response-time histogram of every point",
        "actual": "no histogram",
    } in pts["departures"]


# one change the PTS leaves to the operator: the same departures as without it, the
# choice stated
CHOICES = [
    ("pts-e", ("tests.iops.workload.numjobs=2", "tests.iops.workload.iodepth=16"), "iops",
     "outstanding I/O", "2 threads x queue depth 16 (the text recommends 4 threads x queue depth "
     "32 for PTS-E)"),
    ("pts-e", ("tests.wsat.wsat_workload=oltp",), "wsat", "optional workload", "oltp"),
    ("pts-e", ('tests.dirth.block_sizes=["4k"]', 'tests.dirth.mixes=["70/30"]'),
     "dirth-intensity", "block size and R/W mix", "4k random, R/W mix 70/30"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "overrides", "test", "requirement", "value"), CHOICES)
def test_an_operator_choice_is_stated_not_counted(
    name: str, overrides: tuple[str, ...], test: str, requirement: str, value: str
) -> None:
    base = judge_plan(planned(name))
    j = judge_plan(planned(name, *overrides))
    assert found(j) == found(base)
    stated = {(c.test, c.requirement): c.value for c in j.choices}
    assert stated[(test, requirement)] == value
    assert {"test": test, "requirement": requirement, "value": value} in j.to_dict()["choices"]


def test_pts_c_throughput_at_1024k_only_is_no_departure() -> None:
    only = (
        'tests.throughput.block_sizes=["1024k"]',
        'tests.throughput.tracking=["bw 1024k 0/100"]',
    )
    c = judge_plan(planned("pts-c", *only, *STAGED_OFF))
    assert c.conforms
    assert [x.requirement for x in c.choices] == ["outstanding I/O"]  # 128k no longer stated
    full = judge_plan(planned("pts-c", *STAGED_OFF))
    assert [x.requirement for x in full.choices] == ["outstanding I/O", "PTS-C 128 KiB"]
    # PTS-E requires both
    e = judge_plan(planned("pts-e", *only, *STAGED_OFF))
    assert found(e) == {("throughput", "block sizes")}


def test_the_share_of_secondhand_requirements_follows_the_tests() -> None:
    others = ("throughput", "latency", "wsat")
    iops = judge_plan(planned("pts-e", *(f"tests.{t}.enabled=false" for t in others), *STAGED_OFF))
    everything = judge_plan(planned("pts-e"))
    assert iops.tests == ("iops",)
    # IOPS is the one test whose procedure was read in the 2.0.2 text
    assert iops.secondhand / iops.requirements < everything.secondhand / everything.requirements
    assert f"{iops.secondhand} of the {iops.requirements} requirements" in iops.statement()


# --------------------------------------------------------------------------- runs


def test_a_resume_that_preconditioned_again_without_a_purge_departs() -> None:
    run, wc = stored_run("pts-e", *STAGED_OFF), cache_set()
    assert judge_run(run, wc).conforms
    iops = run.test("iops")
    assert iops.precondition is not None and iops.purge is not None
    later = [dataclasses.replace(r, segment=2) for r in iops.rounds[1:]]
    again = dataclasses.replace(iops.precondition, segment=2)
    tests = [
        dataclasses.replace(t, rounds=[t.rounds[0], *later], precondition=again)
        if t.name == "iops"
        else t
        for t in run.tests
    ]
    j = judge_run(dataclasses.replace(run, tests=tests), wc)
    (d,) = j.departures
    assert (d.test, d.requirement) == ("iops", "purge before preconditioning")
    assert d.actual.startswith("segment 2: preconditioned again without a purge")
    # a new segment that began with its own purge is no departure
    purged = [
        dataclasses.replace(t, purge=dataclasses.replace(t.purge, segment=2))
        if t.name == "iops" and t.purge is not None
        else t
        for t in tests
    ]
    assert judge_run(dataclasses.replace(run, tests=purged), wc).conforms


def test_the_title_claims_the_pts_only_for_a_conforming_run() -> None:
    title = load_profile("pts-e").resolved["report"]["title"]
    assert title == "SNIA PTS-E 2.0.2 Solid State Storage Performance Report"
    run = stored_run("pts-e", *STAGED_OFF)
    conforming = judge_run(run, cache_set())
    assert header.title_of(title, conforming) == title
    # the version judged against, whatever an older profile said
    assert header.title_of("SNIA PTS-E 2.0 Report", conforming) == title
    departs = judge_run(run, None)  # no write-cache record
    assert header.title_of(title, departs) == ("tkbench report (1 departure from SNIA PTS-E 2.0.2)")
    # a profile that extends pts-e inherits no claim: its run departs, its title says so
    assert header.title_of("Lab PTS run", departs).startswith("tkbench report (1 departure from")
    # a title that names no PTS is the profile's own; no variant: no PTS in the title
    assert header.title_of("Lab qualification", departs) == "Lab qualification"
    assert header.title_of(title, Judgement(None)) == "SSD Performance Report"


def _wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 240) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"the run never wrote {path}"
        time.sleep(0.05)


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils")
def test_an_interrupted_xsr_and_a_round_limited_hir_depart(tmp_path: Path) -> None:
    """Issue 25's done-when: a real quick run of HIR (stopped by its round limit
    without steady state) and XSR (interrupted before any of its groups is stored)
    lists both in ``show --json`` and on page 1; the page headers and the PDF's title
    make no PTS claim; a conforming run's would."""
    out = tmp_path / "run"
    sets = [
        "tests.hir.rounds.max=2",
        "tests.hir.rounds.window=2",
        "tests.hir.rounds.max_excursion=0.000001",  # never steady
        'tests.xsr.groups=["128k sequential 60s","4k random 60s","128k sequential 60s"]',
    ]
    args = ["run", "--profile", "quick", "--tests", "hir,xsr", "--target", str(tmp_path / "t.img")]
    args += ["--size", "16M", "--yes", "--out", str(out), "--no-report", "--no-history"]
    proc = start_tkbench(*args, *(x for s in sets for x in ("--set", s)))
    try:
        _wait_for(out / "tests" / "xsr" / "test.json", proc)
        time.sleep(2.0)  # inside the first access group
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    run = load_run(out)
    assert run.manifest.status == "interrupted"
    assert run.test("xsr").result is None and run.test("xsr").parts == 0
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        assert cli.main(["show", str(out), "--json"]) == 0
    pts = json.loads(shown.getvalue())["pts"]
    assert pts["conforms"] is False
    departures = {(d["test"], d["requirement"]): d["actual"] for d in pts["departures"]}
    assert departures[("xsr", "test run")] == "not finished (0 of 3 groups stored)"
    assert departures[("hir-precondition", "steady state")] == (
        "stopped by its limit of 2 rounds without steady state"
    )
    # each departure counted once, however many tests it concerns (the list people read)
    n = len({(d["requirement"], d["required"], d["actual"]) for d in pts["departures"]})
    pdf = build_report(out, tmp_path / "report.pdf")
    text = layout_text(pdf)
    page1, page2 = text.split("\f")[:2]
    assert f"departs from SNIA PTS-E 2.0.2 in {n} ways" in " ".join(page1.split())
    listed = " ".join(text.split()).split("SNIA PTS departures")[-1]  # the set-up's list
    assert "not finished (0 of 3 groups stored)" in listed
    assert "stopped by its limit of 2 rounds without steady state" in listed
    claim = f"tkbench report ({n} departures from SNIA PTS-E 2.0.2)"
    assert claim in " ".join(page2.split()[:40])  # the running page header
    assert "SNIA PTS-E 2.0.2 Solid" not in text and "PTS-E 2.0 " not in text
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True)
    meta = dict(line.split(":", 1) for line in info.stdout.splitlines() if ":" in line)
    assert meta["Title"].strip() == claim
    # the same report as a conforming run's: the header and metadata claim the PTS
    model = analysis.analyze(run, options.resolve_options(run.manifest), generated=0.0)
    yes = header.title_of(
        "SNIA PTS-E 2.0 Report", judge_run(stored_run("pts-e", *STAGED_OFF), cache_set())
    )
    assert yes == "SNIA PTS-E 2.0.2 Solid State Storage Performance Report"
    doc = render.build_document(dataclasses.replace(model, title=yes), None)
    data, _ = render.render_pdf(doc.print_html, render.AssetFetcher(doc.assets))
    (tmp_path / "yes.pdf").write_bytes(data)
    assert yes in " ".join(layout_text(tmp_path / "yes.pdf").split("\f")[1].split()[:40])


def test_the_set_up_gives_the_loads_the_operating_points_ran_at() -> None:
    """Page 3's "Outstanding I/O" of an operating-point stage: the loads chosen from the
    demand-intensity window, not the stage's nominal load (quick: 4 jobs x QD 8)."""
    pl = planned("quick")
    (op,) = [t for t in pl.tests if t.name == "cbw-operating"]
    chosen = [
        OperatingPoint("max", 4, 1),
        OperatingPoint("mid", 1, 2),
        OperatingPoint("min", 1, 1),
    ]
    resolved = procedures.resolve(op, chosen).record("libaio")
    run = stored_run("quick", *STAGED_OFF)
    run = dataclasses.replace(run, tests=[store.TestData(name=op.name, plan=resolved)])
    rows = {r.label: r.value for r in header.setup_rows(run)}
    assert rows["Outstanding I/O"] == "per point, jobs × queue depth: 4 × 1, 1 × 2, 1 × 1"
    (grid,) = [t for t in pl.tests if t.name == "cbw-intensity"]
    run = dataclasses.replace(run, tests=[store.TestData(name=grid.name, plan=grid.record())])
    rows = {r.label: r.value for r in header.setup_rows(run)}
    assert rows["Outstanding I/O"] == "9 loads: jobs 4, 2, 1 × queue depth 8, 2, 1"


@pytest.mark.fio
def test_a_resume_after_an_idle_gap_without_a_purge_departs(tmp_path: Path) -> None:
    """A real quick IOPS run interrupted after its first round and resumed more than
    --resume-gap (1 s) later: tkbench preconditions again without a purge (a new
    segment, docs/resume.md), which the PTS does not allow: ``show --json`` says so."""
    out = tmp_path / "run"
    small = sets(
        "tests.iops.point_runtime=0.5s",
        "tests.iops.rounds.max=3",
        "tests.iops.rounds.window=3",
        *(f"tests.{t}.enabled=false" for t in ("throughput", "latency", "wsat")),
        *STAGED_OFF,
    )
    args = ["run", "--profile", "quick", "--target", str(tmp_path / "t.img"), "--size", "16M"]
    proc = start_tkbench(*args, "--yes", "--out", str(out), "--no-report", "--no-history", *small)
    try:
        _wait_for(out / "tests" / "iops" / "rounds" / "0001.json", proc)
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    before = judge_run(load_run(out), None)
    assert ("iops", "purge before preconditioning") not in found(before)
    time.sleep(1.2)  # longer than --resume-gap: the drive could have recovered
    resumed = start_tkbench("run", "--resume", str(out), "--yes", "--no-report", "--no-history")
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    run = load_run(out)
    assert run.manifest.resumes[0].action == "re-precondition"
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        assert cli.main(["show", str(out), "--json"]) == 0
    pts = json.loads(shown.getvalue())["pts"]
    (d,) = [d for d in pts["departures"] if d["requirement"] == "purge before preconditioning"]
    assert d["test"] == "iops"
    assert d["actual"].startswith("segment 2: preconditioned again without a purge")
