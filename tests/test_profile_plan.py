"""Profiles, plans and job files (pure, no fio)."""

from __future__ import annotations

import configparser
import json
from pathlib import Path

import pytest

from tests._helpers import STAGE_TESTS
from tkbench import cli, profile
from tkbench.errors import InputError, ProfileError
from tkbench.fio import jobfile
from tkbench.plan import build as plan
from tkbench.profile.build import build as build_profile
from tkbench.profile.build import load as load_profile
from tkbench.rundir.records import Direction, PointResult, Round

MiB = 1024 * 1024
GiB = 1024 * MiB


def test_pts_e_matrix_and_defaults() -> None:
    p = load_profile("pts-e")
    iops = p.test("iops")
    assert len(iops.mixes) * len(iops.block_sizes) == 56
    assert [m.label for m in iops.mixes] == [
        "100/0",
        "95/5",
        "65/35",
        "50/50",
        "35/65",
        "5/95",
        "0/100",
    ]
    assert iops.point_runtime == 60.0
    assert [t.label for t in iops.tracking] == [
        "iops 4k 0/100",
        "iops 64k 65/35",
        "iops 1024k 100/0",
    ]
    assert p.workload.numjobs == 4 and p.workload.iodepth == 32
    assert p.workload.active_range == 100.0
    assert p.rounds.max == 25 and p.rounds.window == 5
    lat = p.test("latency")
    assert (lat.workload.numjobs, lat.workload.iodepth) == (1, 1)
    assert lat.percentiles == (99.0, 99.9, 99.99, 99.999)
    # PTS 2.0.x throughput: one sequential stream at T1 Q32
    tp = p.test("throughput")
    assert (tp.workload.numjobs, tp.workload.iodepth) == (1, 32)
    wsat = p.test("wsat")
    assert wsat.kind == "saturation" and wsat.stop_written_multiple == 4.0
    assert wsat.max_duration == 86400.0


def test_pts_c_extends_pts_e() -> None:
    p = load_profile("pts-c")
    assert p.workload.active_range == 75.0
    assert (p.workload.numjobs, p.workload.iodepth) == (2, 16)
    # inherited test, with the client load resolved into it
    assert p.test("iops").workload.numjobs == 2
    # the latency test keeps its own 1 x 1, the throughput test its single stream
    assert p.test("latency").workload.iodepth == 1
    tp = p.test("throughput")
    assert (tp.workload.numjobs, tp.workload.iodepth) == (1, 32)


def test_set_overrides() -> None:
    p = load_profile(
        "quick",
        [
            "rounds.max=30",
            "tests.iops.point_runtime=0.5s",
            "workload.iodepth=4",
            "report.operator=Lab 3",
        ],
    )
    assert p.test("iops").rounds.max == 12  # the test's own table wins over the global one
    assert p.test("latency").rounds.max == 8
    assert p.test("wsat").rounds.max == 30
    assert p.test("iops").point_runtime == 0.5
    assert p.test("iops").workload.iodepth == 4
    assert p.report.operator == "Lab 3"
    p2 = load_profile("quick", ["tests.iops.rounds.max=3", "tests.iops.rounds.window=3"])
    assert p2.test("iops").rounds.max == 3


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("rounds.maxx=3", "--set rounds.maxx: unknown key"),
        ("rounds.max=abc", "--set rounds.max: expected an integer, got a string"),
        ("rounds.max=0", "out of range"),
        ("workload.iodepth=true", "expected an integer, got a boolean"),
        ("tests.nope.mixes=[]", "unknown test 'nope'"),
        ('tests.iops.block_sizes=["1000"]', "not a multiple of 512"),
        ('tests.iops.mixes=["60/30"]', "not a R/W mix"),
        ('tests.iops.tracking=["iops 8k 0/100"]', "is not a point of the test"),
        ("rounds.window=40", "exceeds rounds.max"),
        ("purge.method=magic", "is not one of"),
        ("noequals", "expected KEY=VALUE"),
        ("workload.active_range=0", "out of range"),
        ("tests.iops.point_runtime=fast", "not a duration"),
    ],
)
def test_bad_overrides_name_the_key(override: str, message: str) -> None:
    with pytest.raises(ProfileError) as exc:
        load_profile("quick", [override])
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def _write(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name = 'x'\n[tests.a]\nkind='steady'\n", "key 'tests.a.mixes': missing"),
        ("[workload]\nnumjobs = -1\n", "key 'workload.numjobs'"),
        ("[workload]\nbogus = 1\n", "key 'workload.bogus': unknown key"),
        ("colour = 'red'\n", "key 'colour': unknown key"),
        ("[tests.a]\nmixes=['0/100']\nblock_sizes=['4k']\n", "needs tracking variables"),
        ("this is not toml", "TOML syntax error"),
        ("extends = 'nonexistent-profile'\n", "unknown profile 'nonexistent-profile'"),
    ],
)
def test_bad_profile_files(tmp_path: Path, text: str, message: str) -> None:
    f = _write(tmp_path, text)
    with pytest.raises(ProfileError) as exc:
        load_profile(str(f))
    assert message in str(exc.value)
    assert str(f.name) in str(exc.value) or "nonexistent" in message


def test_extends_cycle(tmp_path: Path) -> None:
    _write(tmp_path, "extends = 'b.toml'\n", "a.toml")
    _write(tmp_path, "extends = 'a.toml'\n", "b.toml")
    with pytest.raises(ProfileError, match="cycle"):
        load_profile(str(tmp_path / "a.toml"))


def test_fixed_profile_without_steady_state(tmp_path: Path) -> None:
    f = _write(
        tmp_path,
        "extends = 'quick'\n[tests.iops]\nenabled = false\n[tests.throughput]\nenabled = false\n"
        "[tests.latency]\nenabled = false\n[tests.wsat]\nenabled = false\n"
        + "".join(f"[tests.{t}]\nenabled = false\n" for t in ("hir", "xsr", "cbw", "dirth"))
        + "[tests.recipe]\nkind = 'fixed'\nrepeat = 3\nmixes = ['70/30']\nblock_sizes = ['4k']\n"
        "point_runtime = '1s'\npurge = false\nprecondition = false\n",
    )
    p = load_profile(str(f))
    assert [t.name for t in p.tests] == ["recipe"]
    pl = plan.build(p, plan.TargetInfo("f", "file", 64 * MiB))
    assert pl.tests[0].min_rounds == pl.tests[0].max_rounds == 3


def test_plan_pts_e_on_a_512_device() -> None:
    p = load_profile("pts-e")
    pl = plan.build(p, plan.TargetInfo("/dev/x", "block", 400 * GiB, 512))
    names = [t.name for t in pl.tests]
    assert names == [
        "iops",
        "throughput-1024k",
        "throughput-128k",
        "latency",
        "wsat",
        *STAGE_TESTS,
    ]
    iops = pl.tests[0]
    assert len(iops.points) == 56
    assert iops.round_seconds == 56 * 60
    assert iops.precondition is not None
    assert iops.precondition.total_bytes == 2 * iops.active_bytes
    assert iops.precondition.bs == 128 * 1024
    tp = pl.tests[1]
    assert [pt.bs for pt in tp.points] == [1024 * 1024, 1024 * 1024]
    assert {(pt.numjobs, pt.iodepth) for pt in tp.points} == {(1, 32)}
    assert [t.label for t in tp.tracking] == ["bw 1024k 0/100"]
    assert tp.precondition is not None and tp.precondition.bs == 1024 * 1024
    lo, hi = pl.estimate()
    assert lo < hi
    assert hi > 24 * 3600  # 25 IOPS rounds of 56 minutes alone are ~23 h


def test_plan_4kn_drops_512_but_keeps_tracking() -> None:
    p = load_profile("pts-e")
    pl = plan.build(p, plan.TargetInfo("/dev/x", "block", 400 * GiB, 4096))
    iops = pl.tests[0]
    assert len(iops.points) == 49
    assert all(pt.bs % 4096 == 0 for pt in iops.points)
    # TKperf tracked 8k here; the intended variables stay
    assert [t.label for t in iops.tracking] == [
        "iops 4k 0/100",
        "iops 64k 65/35",
        "iops 1024k 100/0",
    ]
    assert any("512 point(s) dropped" in n for n in iops.notes)
    lat = next(t for t in pl.tests if t.name == "latency")
    assert [t.label for t in lat.tracking] == ["lat_mean 4k 0/100"]


def test_pts_c_active_range() -> None:
    pl = plan.build(load_profile("pts-c"), plan.TargetInfo("/dev/x", "block", 100 * GiB, 512))
    assert pl.tests[0].active_bytes == 75 * GiB


def test_pts_c_preconditioning_writes_twice_the_user_capacity_within_the_range() -> None:
    # PTS: "Write 2X User Capacity with 128KiB SEQ writes, writing to the entire
    # ActiveRange": 2 x 100 GiB of bytes, all of them inside the 75 GiB ActiveRange
    pl = plan.build(load_profile("pts-c"), plan.TargetInfo("/dev/x", "block", 100 * GiB, 512))
    iops = pl.tests[0]
    pre = iops.precondition
    assert pre is not None and (pre.bs, pre.numjobs) == (128 * 1024, 2)
    assert pre.total_bytes == 200 * GiB
    assert iops.active_bytes == 75 * GiB
    tp = next(t for t in pl.tests if t.name == "throughput-1024k")
    assert tp.precondition is not None and tp.precondition.total_bytes == 200 * GiB
    text = plan.describe(pl)
    assert "200.00 GiB of 128k sequential writes (2x the user capacity) within the" in text
    cp = _parse_jobfile(jobfile.precondition_jobfile(iops, {"filename": "/dev/x"}))
    job = cp["precondition"]
    assert int(job["io_size"]) * int(job["numjobs"]) == pre.total_bytes
    # each job wraps within its own slice: the slices end at the ActiveRange's end
    assert int(job["size"]) * int(job["numjobs"]) == iops.active_bytes
    assert int(job["offset_increment"]) == int(job["size"])
    assert cp["global"]["offset"] == "0"


def test_preconditioning_bytes_are_whole_blocks_of_every_job_and_never_short() -> None:
    odd = 64 * MiB + 512  # a capacity that is no multiple of the block size
    pl = plan.build(load_profile("pts-c"), plan.TargetInfo("/t", "file", odd, 512))
    pre = pl.tests[0].precondition
    assert pre is not None
    unit = pre.bs * pre.numjobs
    assert pre.total_bytes % unit == 0
    assert 2 * odd <= pre.total_bytes < 2 * odd + unit
    assert plan.precondition_bytes(odd, 0.5, 4096) == 32 * MiB + 4096
    assert plan.precondition_bytes(100, 2.0, 4096) == 4096


def test_describe_shows_points_and_estimate() -> None:
    pl = plan.build(load_profile("quick"), plan.TargetInfo("/t", "file", 64 * MiB))
    text = plan.describe(pl)
    assert "p005_4k_0-100" in text
    assert "Estimated duration" in text
    assert "steady state of iops 4k 0/100, iops 64k 65/35" in text


def _parse_jobfile(text: str) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(interpolation=None)
    cp.read_string(text)
    return cp


def test_round_jobfile_sections_and_handoff() -> None:
    pl = plan.build(load_profile("quick"), plan.TargetInfo("/t", "file", 64 * MiB))
    t = pl.tests[0]
    h = jobfile.Handoff("/run dir/.scratch/h")
    text = jobfile.render_round(
        t.points,
        {"ioengine": "libaio", "filename": "/t"},
        active_bytes=t.active_bytes,
        percentiles=(99, 99.99),
        handoff=h,
    )
    cp = _parse_jobfile(text)
    sections = [s for s in cp.sections() if s != "global"]
    assert sections == [p.job_name for p in t.points]
    g = cp["global"]
    assert g["size"] == str(t.active_bytes) and g["group_reporting"] == "1"
    assert g["percentile_list"] == "99:99.99"
    first, second, last = cp[sections[0]], cp[sections[1]], cp[sections[-1]]
    assert "exec_prerun" not in first  # nothing precedes the first point
    # the last point leaves its markers too: a round started ahead waits for them
    assert last["exec_postrun"].startswith(f": > '/run dir/.scratch/h'/done.{len(sections) - 1}.")
    assert "'/run dir/.scratch/h'" in second["exec_prerun"]  # quoted for sh
    assert second["exec_prerun"].split()[-3:-1] == ["0", str(t.points[0].numjobs)]
    assert first["exec_postrun"].startswith(": > '/run dir/.scratch/h'/done.0.")
    # PTS loop order: R/W mix outer, block size inner
    assert [(cp[x]["bs"], cp[x]["rw"]) for x in sections[:3]] == [
        ("65536", "randread"),
        ("4096", "randread"),
        ("65536", "randrw"),
    ]
    assert cp[sections[2]]["rwmixread"] == "65"
    # threads of each later point come up before the previous one ends
    d1 = int(second["startdelay"].removesuffix("ms"))
    assert d1 < int(first["runtime"].removesuffix("ms"))


def test_a_round_started_ahead_waits_for_the_last_point_of_the_round_before() -> None:
    pl = plan.build(load_profile("quick"), plan.TargetInfo("/t", "file", 64 * MiB))
    t = pl.tests[0]

    def render(follow: jobfile.Follow | None) -> configparser.ConfigParser:
        text = jobfile.render_round(
            t.points,
            {"ioengine": "libaio", "filename": "/t"},
            active_bytes=t.active_bytes,
            handoff=jobfile.Handoff("/s/h2"),
            follow=follow,
        )
        return _parse_jobfile(text)

    alone = render(None)
    ahead = render(jobfile.Follow("/s/h1", t.points[-1], shift=4.5))
    names = [p.job_name for p in t.points]
    first = ahead[names[0]]["exec_prerun"].split()
    # its first point waits in the previous round's directory for that round's last point
    timeout = f"{t.points[-1].runtime * 1.5 + jobfile.STALL_MARGIN:.0f}"
    assert first[-4:] == ["/s/h1", str(t.points[-1].index), str(t.points[-1].numjobs), timeout]
    # the rest hands over within the round as always, every point brought up LEAD
    # before the schedule that begins when the round before ends
    for n in names[1:]:
        assert ahead[n]["exec_prerun"] == alone[n]["exec_prerun"]
    for n, nominal in zip(names, jobfile.schedule(t.points, 0.0), strict=True):
        delay = int(ahead[n]["startdelay"].removesuffix("ms"))
        assert delay == round((4.5 + nominal - jobfile.LEAD) * 1000)
    with pytest.raises(ValueError, match="needs the hand-off"):
        jobfile.render_round(
            t.points, {}, active_bytes=t.active_bytes, follow=jobfile.Follow("/x", t.points[-1], 1)
        )


def test_sequential_points_give_each_job_a_slice() -> None:
    p = load_profile("pts-e", ["tests.throughput.workload.numjobs=4"])
    pl = plan.build(p, plan.TargetInfo("/d", "block", 64 * GiB))
    tp = pl.tests[1]
    text = jobfile.render_round(tp.points, {"filename": "/d"}, active_bytes=tp.active_bytes)
    cp = _parse_jobfile(text)
    sec = cp[tp.points[0].job_name]
    assert int(sec["size"]) * 4 == tp.active_bytes
    assert sec["offset_increment"] == sec["size"] and sec["offset"] == "0"


def _seq_round(moved: dict[tuple[int, int], tuple[int, int]]) -> Round:
    """A round record with the (read, write) bytes each point (bs, read %) moved."""
    points = [
        PointResult(bs=bs, read_pct=rp, read=Direction(io_bytes=r), write=Direction(io_bytes=w))
        for (bs, rp), (r, w) in moved.items()
    ]
    return Round(round=1, points=tuple(points), tracking={})


def test_sequential_streams_start_where_the_stored_rounds_left_them() -> None:
    pl = plan.build(load_profile("pts-e"), plan.TargetInfo("/d", "block", 64 * GiB))
    tp = pl.tests[1]  # throughput-1024k: 1024k 100/0 (read), 1024k 0/100 (write)
    read, write = (pt.job_name for pt in tp.points)
    a = tp.active_bytes
    assert jobfile.stream_starts(tp.points, [], a) == {read: 0, write: 0}
    r1 = _seq_round({(MiB, 100): (10 * MiB, 0), (MiB, 0): (0, 7 * MiB + 4096)})
    # block-aligned; each point's stream is its own
    assert jobfile.stream_starts(tp.points, [r1], a) == {read: 10 * MiB, write: 7 * MiB}
    r2 = _seq_round({(MiB, 100): (a - 4 * MiB, 0), (MiB, 0): (0, 3 * MiB)})
    starts = jobfile.stream_starts(tp.points, [r1, r2], a)
    # the read stream passed the end of the ActiveRange: it wraps to its start
    assert starts == {read: 6 * MiB, write: 10 * MiB}
    cp = _parse_jobfile(jobfile.round_jobfile(tp, {"filename": "/d"}, None, starts))
    for pt in tp.points:
        sec = cp[pt.job_name]
        # the stream starts there and never runs past the end of the ActiveRange
        assert int(sec["offset"]) == starts[pt.job_name]
        assert int(sec["offset"]) + int(sec["size"]) == a
    # random points are placed by fio alone
    iops = pl.tests[0]
    assert jobfile.stream_starts(iops.points, [r1, r2], iops.active_bytes) == {}
    assert "offset" not in _parse_jobfile(jobfile.round_jobfile(iops, {}, None))["p000_1024k_100-0"]


def test_sequential_streams_of_mixed_points_and_several_jobs() -> None:
    p = load_profile(
        "pts-e",
        [
            'tests.throughput.mixes=["65/35"]',
            'tests.throughput.tracking=["bw 1024k 65/35"]',
            "tests.throughput.workload.numjobs=4",
        ],
    )
    pl = plan.build(p, plan.TargetInfo("/d", "block", 64 * GiB))
    tp = pl.tests[1]
    (pt,) = tp.points
    region = tp.active_bytes // 4
    # reads and writes each walk from the job's offset: the farther one counts; each
    # of the 4 jobs moved its share, within its own slice
    r1 = _seq_round({(MiB, 65): (40 * MiB, 20 * MiB)})
    assert jobfile.stream_starts(tp.points, [r1], tp.active_bytes) == {pt.job_name: 10 * MiB}
    r2 = _seq_round({(MiB, 65): (4 * region, 0)})
    assert jobfile.stream_starts(tp.points, [r1, r2], tp.active_bytes) == {pt.job_name: 10 * MiB}
    cp = _parse_jobfile(
        jobfile.round_jobfile(tp, {}, None, jobfile.stream_starts(tp.points, [r1], tp.active_bytes))
    )
    sec = cp[pt.job_name]
    assert (int(sec["offset"]), int(sec["size"])) == (10 * MiB, region - 10 * MiB)
    assert int(sec["offset_increment"]) == region


def test_precondition_jobfile_covers_twice_the_range_in_slices() -> None:
    pl = plan.build(load_profile("pts-e"), plan.TargetInfo("/d", "block", 64 * GiB))
    pre = pl.tests[0].precondition
    assert pre is not None
    text = jobfile.render_precondition(
        pre, {"filename": "/d"}, active_bytes=pl.tests[0].active_bytes
    )
    cp = _parse_jobfile(text)
    job = cp["precondition"]
    assert job["rw"] == "write" and job["bs"] == str(128 * 1024)
    assert int(job["io_size"]) * int(job["numjobs"]) == pre.total_bytes
    assert int(job["size"]) * int(job["numjobs"]) == pl.tests[0].active_bytes


def test_filename_colon_is_escaped_and_unsafe_characters_refused() -> None:
    assert jobfile.filename_value("/dev/disk/by-id/a:b") == "/dev/disk/by-id/a\\:b"
    # fio would read a line break as a new option, cut at ';' or '#', expand ${...}
    for bad in ("/tmp/a\nrw=write", "/tmp/victim;x", "/lab#3/t.img", "/x${HOME}/t"):
        with pytest.raises(InputError):
            jobfile.filename_value(bad)


def test_handoff_schedule_keeps_threads_early_in_long_rounds() -> None:
    # 56 one-minute points: with the hand-off each point's threads come up LEAD
    # before the earliest moment it can start, however many points precede it
    pl = plan.build(load_profile("pts-e"), plan.TargetInfo("/d", "block", 64 * GiB))
    iops = pl.tests[0]
    text = jobfile.round_jobfile(iops, {"filename": "/d"}, jobfile.Handoff("/h"))
    cp = _parse_jobfile(text)
    elapsed = 0.0
    for p in iops.points:
        delay = int(cp[p.job_name]["startdelay"].removesuffix("ms")) / 1000
        assert delay == pytest.approx(max(0.0, elapsed - jobfile.LEAD), abs=0.001)
        elapsed += p.runtime


def test_handoff_fails_the_point_on_timeout(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = Path(jobfile.__file__).with_name("handoff.py")
    late = subprocess.run(
        [sys.executable, "-S", "-I", str(script), str(tmp_path), "0", "2", "0.2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert late.returncode == 1 and "did not finish" in late.stderr
    for pid in (1, 2):
        (tmp_path / f"done.0.{pid}").touch()
    ok = subprocess.run(
        [sys.executable, "-S", "-I", str(script), str(tmp_path), "0", "2", "5"], check=False
    )
    assert ok.returncode == 0


def test_precondition_time_limit_becomes_a_fio_runtime() -> None:
    p = load_profile("pts-e", ["precondition.max_duration=2h"])
    pl = plan.build(p, plan.TargetInfo("/d", "block", 64 * GiB))
    cp = _parse_jobfile(jobfile.precondition_jobfile(pl.tests[0], {"filename": "/d"}))
    assert cp["precondition"]["runtime"] == "7200000ms"


def test_plan_json_is_the_whole_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "t.img"
    argv = ["plan", "--json", "--profile", "pts-c", "--target", str(target), "--size", "1G"]
    assert cli.main([*argv, "--assume-mbps", "500"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert not target.exists()  # planning touches nothing
    want = plan.build(load_profile("pts-c"), plan.TargetInfo(str(target), "file", GiB))
    assert data["profile"]["name"] == "pts-c"
    assert data["target"] == {
        "spec": str(target),
        "kind": "file",
        "capacity_bytes": GiB,
        "logical_sector": 512,
    }
    assert [t["name"] for t in data["tests"]] == [t.name for t in want.tests]
    for got, t in zip(data["tests"], want.tests, strict=True):
        assert got["phases"] == (
            ["purge"] * t.purge + ["precondition"] * bool(t.precondition) + ["rounds"]
        ) + (["response_histogram"] if t.name in ("latency", "wsat") else [])
        assert [
            (p["rw"], p["bs"], p["read_pct"], p["numjobs"], p["iodepth"], p["runtime"])
            for p in got["points"]
        ] == [(p.rw, p.bs, p.mix.read, p.numjobs, p.iodepth, p.runtime) for p in t.points]
        if t.precondition:
            assert got["precondition"]["total_bytes"] == t.precondition.total_bytes == 2 * GiB
            assert got["precondition"]["bs"] == t.precondition.bs
        assert (got["min_rounds"], got["max_rounds"]) == (t.min_rounds, t.max_rounds)
        assert got["round_seconds"] == t.round_seconds
        jobs = got["jobfiles"]
        assert (jobs["precondition"] is None) == (t.precondition is None)
        assert _parse_jobfile(jobs["first_round"]).sections()[1:] == [p.job_name for p in t.points]
    lo, hi = want.estimate(500e6)
    assert data["estimate"] == {
        "min_seconds": lo,
        "max_seconds": hi,
        "precondition_bytes_per_second": 500e6,
    }
    assert cli.main([*argv, "--no-jobs"]) == 0
    lean = json.loads(capsys.readouterr().out)
    assert all("jobfiles" not in t for t in lean["tests"])
    assert lean["estimate"]["min_seconds"] < lo  # preconditioning assumed at 1000 MB/s


def test_the_pts_variant_is_declared_inherited_and_recorded(tmp_path: Path) -> None:
    assert load_profile("pts-e").pts_variant == "E"
    assert load_profile("pts-c").pts_variant == "C"
    assert load_profile("quick").pts_variant == "E"  # inherited from pts-e
    none = load_profile("pts-e", ["pts_variant=none"])
    assert none.pts_variant is None
    # recorded in the resolved profile (the manifest's) even where a profile says nothing
    data = dict(profile.load_raw("pts-e")[0])
    del data["pts_variant"]
    custom = build_profile(data, str(tmp_path / "custom.toml"))
    assert custom.pts_variant is None and custom.resolved["pts_variant"] == "none"
    assert load_profile("pts-c").resolved["pts_variant"] == "C"


def test_a_bad_variant_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "p.toml"
    f.write_text('extends = "pts-e"\npts_variant = "enterprise"\n')
    with pytest.raises(ProfileError, match=r"key 'pts_variant': 'enterprise' is not one of E, C"):
        load_profile(str(f))
    argv = ["plan", "--profile", "pts-e", "--target", str(tmp_path / "t.img"), "--size", "1G"]
    assert cli.main([*argv, "--set", "pts_variant=X"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--set pts_variant" in err
