"""Sequential streams go on from round to round where the stored rounds left them
(real fio on a regular file; the offsets of every I/O read back from fio's per-I/O
latency logs)."""

from __future__ import annotations

import configparser
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import STAGED_OFF, merged
from tkbench.engine.runs import RunRequest, start
from tkbench.errors import Interrupted
from tkbench.fio import jobfile
from tkbench.fio.output import parse
from tkbench.fio.results import summarize_round
from tkbench.plan import build as plan
from tkbench.profile.build import load as load_profile
from tkbench.rundir.records import Direction, PlannedPoint, PointResult, Round
from tkbench.rundir.records.base import dump
from tkbench.rundir.store import load_run

pytestmark = pytest.mark.fio

MiB = 1024 * 1024
RATE = "32m"  # per job: about 10 MiB in a 0.3 s point, a small part of the 64 MiB file


def _throughput(target: Path, size: int) -> plan.PlannedTest:
    p = load_profile("quick", ["tests.throughput.point_runtime=0.3s"])
    pl = plan.build(p, plan.TargetInfo(str(target), "file", size))
    (tp,) = (t for t in pl.tests if t.name == "throughput")
    assert [(pt.rw, pt.numjobs, pt.iodepth) for pt in tp.points] == [
        ("read", 1, 32),
        ("write", 1, 32),
    ]
    return tp


def _run_round(
    tp: plan.PlannedTest, target: Path, work: Path, starts: Mapping[str, int]
) -> tuple[dict[str, Any], list[list[tuple[int, int]]]]:
    """One round through fio: its record (as the engine stores it) and, per point,
    the (direction, offset) of every I/O in completion order."""
    work.mkdir()
    text = jobfile.render_round(
        tp.points,
        {"filename": jobfile.filename_value(str(target)), "ioengine": "libaio"},
        active_bytes=tp.active_bytes,
        extra_global={"rate": RATE, "write_lat_log": str(work / "io"), "log_offset": True},
        starts=starts,
    )
    (work / "round.fio").write_text(text)
    done = subprocess.run(
        ["fio", "--output-format=json", str(work / "round.fio")],
        capture_output=True,
        text=True,
        check=True,
        cwd=work,
    )
    record = Round(
        round=1, points=tuple(summarize_round(tp.points, parse(done.stdout))), tracking={}
    )
    ios = []
    for i in range(1, len(tp.points) + 1):
        # time, latency, direction (0 read, 1 write), block size, offset, ...
        rows = [line.split(",") for line in (work / f"io_lat.{i}.log").read_text().splitlines()]
        ios.append([(int(r[2]), int(r[4])) for r in rows])
    return record, ios


def _moved(record: Round, index: int) -> int:
    pt = record.points[index]
    return int(max(pt.read.io_bytes, pt.write.io_bytes))


def test_the_second_round_starts_where_the_first_stopped(tmp_path: Path) -> None:
    target = tmp_path / "t.img"
    size = 64 * MiB
    with target.open("wb") as fh:
        fh.truncate(size)
    tp = _throughput(target, size)
    bs = tp.points[0].bs
    rounds: list[Round] = []
    offsets: list[list[list[int]]] = []
    for n in (1, 2):
        starts = jobfile.stream_starts(tp.points, rounds, tp.active_bytes)
        record, ios = _run_round(tp, target, tmp_path / f"round{n}", starts)
        rounds.append(record)
        offsets.append([sorted(off for _, off in point_ios) for point_ios in ios])
    for i, pt in enumerate(tp.points):
        first, second = _moved(rounds[0], i), _moved(rounds[1], i)
        assert first > 0 and second > 0
        assert first + second < tp.active_bytes  # no wrap: the test shows continuation
        # round 1 covered [0, first) once, round 2 [first, first + second) once:
        # it began exactly where round 1 stopped (not at 0 again)
        assert offsets[0][i] == list(range(0, first, bs)), pt.label
        assert offsets[1][i] == list(range(first, first + second, bs)), pt.label


def test_a_stream_at_the_end_of_the_active_range_never_passes_it(tmp_path: Path) -> None:
    target = tmp_path / "t.img"
    size = 64 * MiB
    with target.open("wb") as fh:
        fh.truncate(size)
    tp = _throughput(target, size)
    a, bs = tp.active_bytes, tp.points[0].bs
    # earlier rounds left both streams 2 MiB before the end of the ActiveRange
    before = Round(
        round=1,
        points=tuple(
            PointResult(**dump(pt.record()), read=Direction(io_bytes=a - 2 * MiB))
            for pt in tp.points
        ),
        tracking={},
    )
    starts = jobfile.stream_starts(tp.points, [before], a)
    assert set(starts.values()) == {a - 2 * MiB}
    record, ios = _run_round(tp, target, tmp_path / "round", starts)
    for i, pt in enumerate(tp.points):
        offs = [off for _, off in ios[i]]
        moved = _moved(record, i)
        assert moved > 2 * MiB  # it reached the end of the ActiveRange within the round
        assert len(offs) * bs == moved
        # fio went on from the point's own start offset: nothing before it or past the
        # ActiveRange was touched
        assert min(offs) == a - 2 * MiB and max(offs) + bs == a, pt.label
    # the next round starts where a stream wrapping at the ActiveRange would be
    nxt = jobfile.stream_starts(tp.points, [before, record], a)
    for i, pt in enumerate(tp.points):
        expect = (a - 2 * MiB + _moved(record, i)) % a
        assert nxt[pt.job_name] == expect - expect % bs


def _job_offsets(path: Path) -> dict[str, int]:
    cp = configparser.ConfigParser(interpolation=None)
    cp.read_string(path.read_text())
    return {s: int(cp[s]["offset"]) for s in cp.sections() if s != "global"}


def _expected_offsets(
    points: Sequence[PlannedPoint], rounds: Sequence[Round], active: int
) -> dict[str, int]:
    """Computed here from the stored records, independently of jobfile.stream_starts."""
    out = {}
    for pt in points:
        total = 0
        for r in rounds:
            (done,) = [p for p in r.points if (p.bs, p.read_pct) == (pt.bs, pt.read_pct)]
            total += int(max(done.read.io_bytes, done.write.io_bytes))
        pos = total % active
        out[pt.job] = pos - pos % pt.bs
    return out


def test_a_resumed_run_continues_the_streams_from_the_stored_rounds(tmp_path: Path) -> None:
    overrides = merged(
        "tests.throughput.rounds.max=3",
        "tests.throughput.rounds.window=3",
        "tests.iops.enabled=false",
        "tests.latency.enabled=false",
        "tests.wsat.enabled=false",
        *STAGED_OFF,
    )
    req = RunRequest(
        profile="quick",
        target=str(tmp_path / "t.img"),
        size=16 * MiB,
        out=tmp_path / "run",
        overrides=overrides,
        assume_yes=True,
        stop=lambda: (tmp_path / "run/tests/throughput/rounds/0001.json").exists(),
    )
    with pytest.raises(Interrupted):
        start(req)
    out, manifest = start(RunRequest(resume=tmp_path / "run", assume_yes=True, resume_gap=3600))
    assert manifest.resumes[0].action == "continue"
    t = load_run(out).test("throughput")
    assert [r.round for r in t.rounds] == [1, 2, 3]
    rdir = out / "tests" / "throughput" / "rounds"
    seen = set()
    for n in (1, 2, 3):
        want = _expected_offsets(t.plan.points, t.rounds[: n - 1], t.plan.active_bytes)
        assert _job_offsets(rdir / f"{n:04d}.fio") == want
        seen.add(tuple(want.values()))
    assert len(seen) == 3  # the streams moved on every round
