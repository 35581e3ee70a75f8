"""The replay test type (profile ``rwsw``, ``--workload FILE.tkw``) on this host.

This host cannot trace block I/O (``tkbench capture`` is refused here: tested in
test_workload_cli.py), so the workload files are made another real way: fio runs a
known job on a file with ``write_iolog``, and the I/Os fio logged (fio's version 3
iolog: a time in µs, the file, the action, offset and length per I/O) go through
:func:`tkbench.workload.trace.from_fio_iolog`, the reduction and the writer, as a
capture's would.  Nothing of the trace format is made up: the offsets, sizes,
directions and times are the ones fio issued.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import layout_text
from tkbench import cli
from tkbench.conformance import rwsw
from tkbench.engine.runs import RunRequest, start
from tkbench.errors import InputError, Interrupted
from tkbench.rundir.records import PlannedPoint, TestPlan
from tkbench.rundir.store import load_run
from tkbench.workload import tkw, trace

pytestmark = pytest.mark.fio

CHECKOUT = Path(__file__).resolve().parents[1]
MIB = 1 << 20
CAPACITY = 32 * MIB
IOS = 400
# the rwsw profile shrunk to sub-second points, a 2 x 2 grid and three rounds
SHRINK = [
    "precondition.capacity_multiple=0.25",
    "workload.numjobs=1",
    "workload.iodepth=4",
    "tests.rwsw.point_runtime=0.3s",
    "tests.rwsw.threads=[2, 1]",
    "tests.rwsw.iodepths=[2, 1]",
    "tests.rwsw.prewrite=0.2s",
    "tests.rwsw.operating_prewrite=0.2s",
    "tests.rwsw.operating_runtime=0.3s",
    "tests.rwsw.rounds.max=3",
    "tests.rwsw.rounds.window=2",
]


def tkbench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(CHECKOUT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "tkbench", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def sets(*extra: str) -> list[str]:
    out: list[str] = []
    for o in [*SHRINK, *extra]:
        out += ["--set", o]
    return out


def one_error(done: subprocess.CompletedProcess[str], text: str, code: int = 2) -> None:
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tkbench: error: "), done.stderr
    assert text in lines[0], done.stderr


def fio_job(directory: Path) -> tuple[Path, dict[str, Any]]:
    """A known job run by fio on a file: 70 % reads, 4 KiB (80 %) and 64 KiB (20 %),
    all random, IOS I/Os; its iolog and its JSON job entry."""
    target = directory / "server.img"
    with open(target, "wb") as fh:
        fh.truncate(CAPACITY)
    log = directory / "server.iolog"
    done = subprocess.run(
        ["fio", "--name=server", f"--filename={target}", "--ioengine=libaio", "--direct=1",
         "--rw=randrw", "--rwmixread=70", "--bssplit=4k/80:64k/20", "--iodepth=4",
         f"--size={CAPACITY}", f"--number_ios={IOS}", "--randseed=11", "--norandommap",
         f"--write_iolog={log}", "--output-format=json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    job: dict[str, Any] = json.loads(done.stdout[done.stdout.index("{") :])["jobs"][0]
    return log, job


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A workload file of the I/Os fio logged for :func:`fio_job`, and fio's job entry."""
    d = tmp_path_factory.mktemp("capture")
    log, job = fio_job(d)
    tr = trace.from_fio_iolog(log.read_text())
    span = max(float(tr.issue_ns[-1]) / 1e9, 0.001)
    device = {"path": "server.img", "name": "server.img", "capacity_bytes": CAPACITY,
              "logical_block_bytes": 512}  # fmt: skip
    path = d / "server.tkw"
    tkw.write(path, tkw.of_trace(tr, device, span, tool="fio write_iolog"))
    return path, job


def test_a_fio_iolog_reduces_to_the_job_fio_ran(captured: tuple[Path, dict[str, Any]]) -> None:
    path, job = captured
    red = tkw.load(path).reduction
    reads, writes = job["read"]["total_ios"], job["write"]["total_ios"]
    assert red.ios == reads + writes
    assert red.read_pct == pytest.approx(100 * reads / (reads + writes), abs=0.01)
    assert {s.bs for s in red.streams} == {4096, 65536}
    small = sum(s.share_ios for s in red.streams if s.bs == 4096)
    assert small == pytest.approx(80, abs=8)  # fio's bssplit draws each size at random
    assert red.random_pct > 95


def test_an_iolog_that_is_not_one_is_one_error() -> None:
    with pytest.raises(InputError, match="not a fio version 3 iolog"):
        trace.from_fio_iolog("fio version 2 iolog\nf add\n")
    with pytest.raises(InputError, match="line 2"):
        trace.from_fio_iolog("fio version 3 iolog\n1 f read x 4096\n")


def test_workload_is_refused_where_it_does_not_belong(
    captured: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    path, _ = captured
    target = ["--target", str(tmp_path / "t.img"), "--size", "32M"]
    one_error(
        tkbench("plan", "--profile", "quick", "--workload", str(path), *target),
        "--workload is for a profile that replays a captured workload (rwsw), not quick",
    )
    one_error(
        tkbench("plan", "--profile", "rwsw", *target),
        "profile rwsw replays a captured workload: give --workload FILE.tkw",
    )
    one_error(
        tkbench("run", "--profile", "rwsw", "--yes", *target),
        "profile rwsw replays a captured workload: give --workload FILE.tkw",
    )
    cut = tmp_path / "cut.tkw"
    cut.write_bytes(path.read_bytes()[:-40])
    one_error(tkbench("plan", "--profile", "rwsw", "--workload", str(cut), *target), "damaged")
    raw = gzip.decompress(path.read_bytes())
    end = raw.index(b"\n", len(tkw.MAGIC))
    header = json.loads(raw[len(tkw.MAGIC) : end])
    header["format"] = tkw.FORMAT + 1
    newer = tmp_path / "newer.tkw"
    newer.write_bytes(gzip.compress(tkw.MAGIC + json.dumps(header).encode() + raw[end:], mtime=0))
    one_error(
        tkbench("plan", "--profile", "rwsw", "--workload", str(newer), *target),
        "read it with a newer tkbench",
    )
    assert not (tmp_path / "t.img").exists()


def test_the_plan_names_the_stages_and_the_applied_mix(
    captured: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    path, _ = captured
    done = tkbench(
        "plan", "--profile", "rwsw", "--workload", str(path), "--target",
        str(tmp_path / "t.img"), "--size", "32M", "--json", *sets(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    names = [t["name"] for t in plan["tests"]]
    assert names == ["rwsw-replay", "rwsw-applied", "rwsw-intensity", "rwsw-operating"]
    jobs = "\n".join(x or "" for t in plan["tests"] for x in t["jobfiles"].values())
    assert "read_iolog=replay.iolog" in jobs and "replay_no_stall=1" in jobs
    assert f"replay_redirect={tmp_path / 't.img'}" in jobs
    assert "percentage_random=" in jobs and "bssplit=4096/" in jobs


def test_the_plan_lists_the_rwsw_departures_as_it_lists_the_pts_ones(
    captured: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """What page 1 of the run's report will list, known before the run (as the PTS's)."""
    path, _ = captured
    argv = ["plan", "--profile", "rwsw", "--workload", str(path), "--target",
            str(tmp_path / "t.img"), "--size", "32M", *sets()]  # fmt: skip
    done = tkbench(*argv, "--no-jobs")
    assert done.returncode == 0, done.stderr
    said = done.stdout.split("This plan departs from SNIA RWSW", 1)[1].splitlines()
    assert said[0].endswith("in 2 ways:"), said[0]
    assert said[1] == "  Captured workload: the captured trace replayed:"
    assert said[3] == "  Captured workload: the applied workload to steady state:"
    assert said[2].strip().startswith(
        "IO capture with completions: the capture holds no completions"
    ) and said[2].endswith(
        "(RWSW: the queue depths of the capture (each IO's issue and completion))"
    )
    assert said[4].strip().startswith("IO streams as the test stimulus: the streams holding")
    data = json.loads(tkbench(*argv, "--json").stdout)
    assert [d["requirement"] for d in data["rwsw"]] == [
        "IO capture with completions",
        "IO streams as the test stimulus",
    ]
    # a plan without a replay says nothing of RWSW
    quick = ["plan", "--profile", "quick", "--target", str(tmp_path / "t.img"), "--size", "32M"]
    assert "RWSW" not in tkbench(*quick, "--no-jobs").stdout
    assert "rwsw" not in json.loads(tkbench(*quick, "--json").stdout)


# rwsw with the PTS IOPS test beside it (two block sizes, two mixes), as a lab would
# run both in one run to set the workload beside the drive's PTS numbers
WITH_IOPS = """
name = "rwsw-iops"
extends = "rwsw"

[tests.iops]
kind = "steady"
pattern = "random"
mixes = ["100/0", "65/35"]
block_sizes = ["64k", "4k"]
point_runtime = "0.2s"
tracking = ["iops 4k 65/35"]
rounds = { max = 2, window = 2 }
"""


@pytest.fixture(scope="module")
def replay_run(
    captured: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    path, _ = captured
    d = tmp_path_factory.mktemp("run")
    out = d / "run"
    profile = d / "rwsw-iops.toml"
    profile.write_text(WITH_IOPS)
    done = tkbench(
        "run", "--profile", str(profile), "--workload", str(path), "--target", str(d / "drive.img"),
        "--size", "32M", "--yes", "--no-history", "--out", str(out), *sets(), timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def _rounds(run: Path, test: str) -> list[dict[str, Any]]:
    return [
        json.loads(p.read_text()) for p in sorted((run / "tests" / test / "rounds").glob("*.json"))
    ]


def test_the_replay_does_every_captured_io_with_its_mix(
    captured: tuple[Path, dict[str, Any]], replay_run: Path
) -> None:
    """fio's own counts of the replayed log: the captured reads and writes, one for one,
    at the captured timing and as fast as possible (the capture saw no completions, so
    the replay's queue depth is 1 and no padding read is added)."""
    _, job = captured
    (rnd,) = _rounds(replay_run, "rwsw-replay")
    assert [p["replay"] for p in rnd["points"]] == ["captured", "fast"]
    assert [p["iolog"] for p in rnd["points"]] == ["replay.iolog"] * 2
    for p in rnd["points"]:
        assert p["error"] == 0
        assert p["read"]["total_ios"] == job["read"]["total_ios"]
        assert p["write"]["total_ios"] == job["write"]["total_ios"]
        assert p["read"]["io_bytes"] == job["read"]["io_bytes"]
        assert p["write"]["io_bytes"] == job["write"]["io_bytes"]
    plan = json.loads((replay_run / "tests" / "rwsw-replay" / "test.json").read_text())
    assert plan["procedure"] == "rwsw" and plan["capture"]["ios"] == IOS
    # the reduction as the file holds it, key for key (read through tkw.Reduction)
    assert plan["capture"] == tkw.load(captured[0]).header["reduction"]


def test_the_applied_workload_runs_the_main_streams_as_one_job(replay_run: Path) -> None:
    text = (replay_run / "tests" / "rwsw-applied" / "rounds" / "0001.fio").read_text()
    assert "rw=randrw" in text and "percentage_random=100,100" in text
    assert "bssplit=4096/" in text and "65536/" in text
    rounds = _rounds(replay_run, "rwsw-applied")
    p = rounds[0]["points"][0]
    reads, writes = p["read"]["total_ios"], p["write"]["total_ios"]
    assert 100 * reads / (reads + writes) == pytest.approx(p["read_pct"], abs=5)
    assert json.loads((replay_run / "tests" / "rwsw-operating" / "test.json").read_text())[
        "operating"
    ]


def test_the_report_has_the_chapter_your_workload_on_this_drive(
    captured: tuple[Path, dict[str, Any]], replay_run: Path
) -> None:
    """The PDF, read back: the captured workload's streams, its IOPS over time and heat
    map, the replay beside the capture, the applied workload's steady state, its
    demand-intensity plot and operating points, and the PTS IOPS at the nearest block
    size (4 KiB, the workload's most frequent) and mix (65/35, nearest its reads)."""
    _, job = captured
    text = layout_text(replay_run / "report.pdf")
    start = text.index("Your workload on this drive\n")
    chapter = " ".join(text[start:].split())
    for words in (
        "The captured I/O streams",
        "read 4k random",
        "write 64k random",
        "IOPS of the captured workload over time",
        "LBA heat map of the captured workload",
        "The trace replayed on this drive against the capture",
        "captured on the server",
        "replayed at the captured timing",
        "replayed as fast as possible",
        "The applied workload (composite",
        "Demand intensity of the applied workload",
        "Operating points of the applied workload",
        "MaxIOPS",
        "PTS IOPS, 4k random 65/35",
        "fio 3.33 does not complete the I/Os still in flight",
    ):
        assert words in chapter, words
    total = job["read"]["total_ios"] + job["write"]["total_ios"]
    assert f"captured on the server reads {total}" in chapter
    page1 = " ".join(text[: text.index("Test set-up")].split())  # the front page and its notes
    assert "Departures from SNIA's Real World Storage Workload test specification" in page1
    assert "IO capture with completions: the capture holds no completions" in page1
    assert "IO streams as the test stimulus: the streams holding" in page1


def test_the_rwsw_rows_find_what_a_replay_departs_in() -> None:
    """Each row can fail and can pass: a capture with queue depths replayed at depth 8 on
    a drive of the capture's size departs only in the dropped I/Os; without completions,
    on a smaller drive, in those too; the applied stage always in its one job."""
    qd = {"p50": 2.0, "max": 8.0}
    point = PlannedPoint(bs=0, read_pct=70, iodepth=8, iolog="replay.iolog", replay="fast")

    def replay(capture: dict[str, Any], active: int) -> TestPlan:
        return TestPlan(kind="fixed", points=(point,), name="r-replay", procedure="rwsw",
                        stage="replay", capture=capture, active_bytes=active)  # fmt: skip

    found = rwsw.departures([(replay({"queue_depth": qd, "capacity_bytes": MIB}, MIB), None)], True)
    assert [d.requirement for d in found] == ["native replay"]
    assert "up to 7 IOs" in found[0].actual
    found = rwsw.departures(
        [(replay({"queue_depth": {}, "capacity_bytes": 2 * MIB}, MIB), None)], True
    )
    assert [d.requirement for d in found] == [
        "IO capture with completions",
        "native replay",
        "LBA range",
    ]
    held = "the applied workload: 3 stream(s) holding 92 % of the captured I/Os"
    applied = TestPlan(kind="steady", points=(PlannedPoint(bs=0, read_pct=70),), name="r-applied",
                       procedure="rwsw", stage="applied", notes=(held,))  # fmt: skip
    found = rwsw.departures([(applied, None)], True)
    assert [d.requirement for d in found] == ["IO streams as the test stimulus"]
    assert "holding 92 %" in found[0].actual
    assert rwsw.departures([(dataclasses.replace(applied, procedure=""), None)], True) == []


def test_show_gives_each_replay_and_the_stages_of_dirth(
    captured: tuple[Path, dict[str, Any]], replay_run: Path
) -> None:
    """The replay stage's two points share a block size and mix but are no repetitions
    of one point: show gives each as fio counted it; the grid and the operating points
    as for DIRTH."""
    _, job = captured
    done = tkbench("show", str(replay_run), "--json")
    assert done.returncode == 0, done.stderr
    tests = {t["name"]: t for t in json.loads(done.stdout)["tests"]}
    replays = tests["rwsw-replay"]["replay"]
    assert [r["timing"] for r in replays] == ["captured", "fast"]
    for r in replays:
        assert (r["read_ios"], r["write_ios"]) == (
            job["read"]["total_ios"],
            job["write"]["total_ios"],
        )
    assert "points" not in tests["rwsw-replay"]
    assert len(tests["rwsw-intensity"]["grid"]) == 4
    assert set(tests["rwsw-operating"]["operating_points"]) == {"max", "mid", "min"}
    text = tkbench("show", str(replay_run)).stdout
    assert "replay captured" in text and "replay fast" in text


def _sums(root: Path) -> dict[str, str]:
    return {
        str(f): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(root.rglob("*"))
        if f.is_file()
    }


def test_a_resume_refuses_a_workload_file_changed_or_gone_since_the_run_was_planned(
    captured: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run stopped after the replay's round pins its workload file (SHA-256 and size
    in each stage's test.json); resumed with other content at the file's path, or with
    none, it is refused with one line and exit 3 and the run directory is left as it
    was; with the file back as it was, the run goes on."""
    path = tmp_path / "server.tkw"
    shutil.copyfile(captured[0], path)
    out = tmp_path / "run"
    rounds = out / "tests" / "rwsw-replay" / "rounds"
    req = RunRequest(
        profile="rwsw",
        target=str(tmp_path / "drive.img"),
        out=out,
        size=CAPACITY,
        assume_yes=True,
        overrides=[*SHRINK, f"tests.rwsw.capture={json.dumps(str(path))}"],
        stop=lambda: rounds.is_dir() and any(rounds.glob("*.json")),
    )
    with pytest.raises(Interrupted):
        start(req)
    assert load_run(out).manifest.status == "interrupted"
    plan = json.loads((out / "tests" / "rwsw-replay" / "test.json").read_text())
    original = path.read_bytes()
    assert plan["capture_sha256"] == hashlib.sha256(original).hexdigest()
    assert plan["capture_size"] == len(original)

    def resume() -> tuple[int, str]:
        capsys.readouterr()
        args = ["run", "--resume", str(out), "--yes", "--no-report", "--no-history"]
        code = cli.main([*args, "--resume-gap", "3600"])
        return code, capsys.readouterr().err

    # another capture (the same trace, said to come from elsewhere) at the same path
    wl = tkw.load(path)
    tkw.write(tmp_path / "other.tkw", tkw.Workload({**wl.header, "tool": "elsewhere"}, wl.trace))
    os.replace(tmp_path / "other.tkw", path)
    before = _sums(out)
    code, err = resume()
    assert code == 3, err
    (line,) = err.strip().splitlines()
    assert line.startswith(
        f"tkbench: error: test rwsw-replay: the workload file {path} is not the one the "
        "run was planned with: SHA-256 "
    ), line
    assert _sums(out) == before
    path.unlink()
    code, err = resume()
    assert code == 3, err
    assert err.strip().splitlines() == [
        f"tkbench: error: test rwsw-replay: the workload file {path} is gone: a resumed run "
        "replays the file it was planned with"
    ]
    assert _sums(out) == before
    # the file as it was: the run goes on to its end
    path.write_bytes(original)
    code, err = resume()
    assert code == 0, err
    assert load_run(out).manifest.status == "complete"
