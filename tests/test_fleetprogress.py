"""A fleet drive's line on the terminal, from its run's log lines (no fio: the lines
are as tkbench.cli.ui.LogProgress writes them; tests/test_tty.py reads real ones)."""

from __future__ import annotations

import io
from types import SimpleNamespace

from tkbench.cli.ui import LogProgress
from tkbench.engine import events
from tkbench.fio.results import LiveFigures
from tkbench.fleet import progress as lines
from tkbench.fleet.progress import DriveState, fields, line_kind, parse_line

T = "2026-11-23T10:00:36+00:00"


def test_a_drive_goes_through_its_run() -> None:
    d = DriveState("a.img")
    assert d.state == "starting" and d.eta(0.0) == "" and d.round_text() == ""
    assert d.feed(f"{T} run start dir=/r profile=quick tests=iops estimate=1m..2m "
                  "estimate_s=60..120", now=1000.0)  # fmt: skip
    assert d.state == "running" and d.eta(1000.0) == "1m 00s–2m 00s"
    assert d.eta(1090.0) == "up to 30 s"  # the low end passed: only the high end left
    assert d.eta(1200.0) == "past the estimate"
    assert d.feed(f"{T} test start name=iops rounds_done=0 max_rounds=25", now=1001.0)
    d.feed(f"{T} phase name=iops phase=precondition bytes=16777216", now=1002.0)
    assert (d.test, d.round_text()) == ("iops", "precondition")
    d.feed(f"{T} status test=iops point=preconditioning iops=7111 mbs=29.1 lat_ms=0.1", 1003.0)
    assert d.iops_text() == "7,111 (preconditioning)"
    d.feed(f"{T} round start test=iops round=3 seconds=12.0", now=1004.0)
    # a new round: the preconditioning's figures are no longer shown
    assert d.round_text() == "3 of ≤25" and d.iops_text() == ""
    d.feed(f"{T} status test=iops point=4k_65/35 iops=31830.5 mbs=130 lat_ms=0.03", 1005.0)
    assert d.iops_text() == "31,830 (4k 65/35)"
    assert not d.feed(f"{T} round done test=iops round=3 iops_4k=2.7e+04 state=steady", 1006.0)
    d.feed(f"{T} test done name=iops result='steady state, rounds 1–3'", now=1007.0)
    d.feed(f"{T} run done status=complete", now=1008.0)
    assert d.state == "done: complete" and d.eta(1008.0) == "" and d.iops_text() == ""
    d.ended(0, "complete")
    assert d.state == "exit 0: complete"


def test_other_lines_change_nothing() -> None:
    d = DriveState("b.img")
    for line in ("tkbench: error: refused: /dev/sdb is mounted", "run directory: /x", ""):
        assert not d.feed(line, now=1.0) and line_kind(line) is None
    assert d.state == "starting"
    # an unreadable number is no number
    d.feed(f"{T} status test=iops point=4k_0/100 iops=nan mbs=1 lat_ms=1", now=2.0)
    assert d.iops is None
    d.feed(f"{T} run start dir=/r estimate_s=x..y", now=3.0)
    assert d.estimate is None and d.eta(3.0) == ""


def test_line_kinds_and_fields() -> None:
    assert line_kind(f"{T} phase name=iops phase=purge") == "phase"
    assert line_kind(f"{T} status test=iops point=4k_0/100 iops=1") == "status"
    assert line_kind(f"{T} round start test=iops round=1 seconds=1.0") == "round start"
    assert fields(" name=iops result='not steady, 3 rounds' x=1") == {
        "name": "iops",
        "result": "not steady, 3 rounds",
        "x": "1",
    }


def test_a_childs_lines_parse_back_into_what_its_engine_said() -> None:
    """The child->parent boundary: the engine's typed events, written by LogProgress
    as a child writes them, are parsed once into typed lines with the same values."""
    out = io.StringIO()
    log = LogProgress(out, status_every=0.001)
    test = SimpleNamespace(name="iops", title="IOPS", max_rounds=25)
    plan = SimpleNamespace(
        profile=SimpleNamespace(name="quick"), tests=[test], estimate=lambda: (60.0, 120.0)
    )
    said = [
        events.RunStarted(plan, "/r"),
        events.TestStarted(test, 0),
        events.Phase(test, "precondition", bytes=16777216),
        events.RoundStarted(test, 3, 12.0),
        events.FioStatus(test, LiveFigures("4k 65/35", 31830.5, 130.0, 0.03, 1.0)),
        events.TestDone(test, SimpleNamespace(summary="steady state, rounds 1–3")),
        events.RunDone(SimpleNamespace(status="complete")),
    ]
    for event in said:
        log.event(event)
    written = out.getvalue().splitlines()
    assert [parse_line(line) for line in written] == [
        lines.RunStartLine((60.0, 120.0)),
        lines.TestStartLine("iops", 25),
        lines.PhaseLine("iops", "precondition"),
        lines.RoundStartLine(3),
        lines.StatusLine(31830.0, "4k 65/35"),  # the line has 4 digits (31830.5: 3.183e+04)
        lines.TestDoneLine(),
        lines.RunDoneLine("complete"),
    ]
