"""Cache states, data patterns and the virtual-file test (docs/volume.md).

The plan and job-file tests need no fio.  The others run fio for real on an ext4
filesystem on a loop device (the fixture of test_volume): a cold sequential read
must read from the device what fio reads, a warm one (almost) nothing; data written
at 50 % compressibility must compress by about half with zlib; a reduced vfile run
must change nothing outside its working directory."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from tests._helpers import layout_text
from tests.test_volume import _one_error, _snapshot, ext4, needs_root
from tkbench import cache, cli, kinds
from tkbench.engine.runs import check_drop_caches
from tkbench.errors import InputError, ProfileError
from tkbench.fio import jobfile
from tkbench.kinds.results.vfile import vfile_of
from tkbench.kinds.vfile import FILE
from tkbench.plan import build as planmod
from tkbench.profile.build import load as load_profile
from tkbench.rundir.records import Round, TestPlan
from tkbench.rundir.records.base import dump
from tkbench.rundir.store import load_run
from tkbench.targets.volume import VolumeTarget

__all__ = ["ext4"]  # the fixture, shared with test_volume

K, M = 1024, 1024 * 1024
GiB = 1024 * M


def _info(free: int = 100 * GiB, direct: bool = True) -> planmod.TargetInfo:
    return planmod.TargetInfo("/srv/data", "volume", 200 * GiB, 512, free, direct)


def _sections(job: str) -> dict[str, dict[str, str]]:
    out = {}
    for block in job.split("\n\n"):
        lines = [x for x in block.strip().splitlines() if not x.startswith("#")]
        out[lines[0].strip("[]")] = dict(x.split("=", 1) for x in lines[1:])
    return out


# --------------------------------------------------------------------------- the vfile plan


def test_the_bundled_vfile_profile_is_every_operation_threads_and_cache_state() -> None:
    prof = load_profile("vfile")
    assert prof.scope == "volume"
    plan = planmod.build(prof, _info())
    (test,) = plan.tests
    assert test.active_bytes == 100_000 * 512  # one shared file of the nodes
    assert len(test.points) == 4 * 2 * 2
    by_tag = {p.tag: p for p in test.points}
    assert set(by_tag) == {
        f"{op} x{n} {c}"
        for op in ("random-write", "random-read", "sequential-write", "sequential-read")
        for n in (1, 128)
        for c in ("cold", "warm")
    }
    job = jobfile.round_jobfile(test, {"ioengine": "psync", "directory": "/w"}, None)
    sec = _sections(job)
    g = sec["global"]
    assert g["sync"] == "1" and g["overwrite"] == "1" and g["direct"] == "0"
    assert g["size"] == str(51_200_000) and g["ioengine"] == "psync"
    for tag, p in by_tag.items():
        opts = sec[p.job_name]
        assert opts["filename"] == FILE and opts["bs"] == "8192" and opts["iodepth"] == "1"
        assert opts["numjobs"] == tag.split()[1][1:]
        if tag.endswith("cold"):
            assert opts["invalidate"] == "1" and "pre_read" not in opts
        else:
            assert opts["pre_read"] == "1" and opts["invalidate"] == "0"
    # 128 threads reading "sequentially" each walk their own slice of the one file
    seq = sec[by_tag["sequential-read x128 cold"].job_name]
    assert seq["rw"] == "read" and int(seq["offset_increment"]) * 128 <= 51_200_000
    assert sec[by_tag["random-read x128 warm"].job_name]["rw"] == "randread"
    text = planmod.describe(plan)
    assert "100,000 nodes x 512 B in one file" in text and "write-through (O_SYNC)" in text
    assert "cache     cold:" in text and "cache     warm:" in text
    assert "(sequential-read x128 warm)" in text
    record = dump(test.record())
    assert record["node_size"] == 512 and record["workload"]["sync"] is True
    assert {p["cache"] for p in record["points"]} == {"cold", "warm"}


def test_the_vfile_keys_shape_the_test() -> None:
    prof = load_profile(
        "vfile",
        [
            "tests.vfile.nodes=1000",
            "tests.vfile.node_size=4k",
            "tests.vfile.page_size=16k",
            'tests.vfile.operations=["random-read"]',
            "tests.vfile.thread_counts=[2]",
            'tests.vfile.caches=["warm"]',
        ],
    )
    (test,) = planmod.build(prof, _info()).tests
    assert test.active_bytes == 1000 * 4096
    assert [(p.bs, p.numjobs, p.cache, p.rw) for p in test.points] == [
        (16 * K, 2, "warm", "randread")
    ]


# --------------------------------------------------------------------------- cache states


def test_one_cache_option_per_state_and_the_sweep_uses_it() -> None:
    assert cache.fio_options("cold") == {"invalidate": True}
    assert cache.fio_options("warm") == {"pre_read": True, "invalidate": False}
    assert cache.fio_options("as-is") == cache.fio_options("") == {}
    # the bulk-I/O sweep's points are cold through the same code
    (sweep,) = planmod.build(load_profile("bulk-sweep"), _info()).tests
    assert {p.cache for p in sweep.points} == {"cold"}
    # a stored sweep's points that state no cache ran cold; others as-is, and a direct
    # test's unstated points had none in play
    assert cache.states_of(["", ""], True, kinds.named("sweep").unstated_cache) == ["cold"]
    assert cache.states_of([""], False) == ["as-is"] and cache.states_of([""], True) == []


@pytest.mark.parametrize(
    ("state", "present", "absent"),
    [
        ("as-is", (), ("invalidate", "pre_read")),
        ("cold", ("invalidate=1",), ("pre_read",)),
        ("warm", ("pre_read=1", "invalidate=0"), ()),
    ],
)
def test_an_ordinary_tests_cache_reaches_its_job_file(
    state: str, present: tuple[str, ...], absent: tuple[str, ...]
) -> None:
    prof = load_profile("ars", [f"tests.4k.cache={state}", "tests.4k.repeat=1"])
    test = next(t for t in planmod.build(prof, _info()).tests if t.name == "4k")
    job = jobfile.round_jobfile(test, {"ioengine": "posixaio", "directory": "/w"}, None)
    for text in present:
        assert text in job
    for key in absent:
        assert f"{key}=" not in job
    lines = planmod.describe(planmod.build(prof, _info())).splitlines()
    assert f"  cache     {cache.describe(state)}" in lines


def test_the_default_leaves_the_job_files_as_they_were() -> None:
    """cache = "as-is" and the random pattern add nothing: existing profiles and their
    stored runs keep their job files and records."""
    for name in ("ars", "quick"):
        info = _info() if name == "ars" else planmod.TargetInfo("/t", "file", 64 * GiB, 512)
        for test in planmod.build(load_profile(name), info).tests:
            job = jobfile.round_jobfile(test, {"ioengine": "libaio", "filename": "/t"}, None)
            keys = {k for opts in _sections(job).values() for k in opts}
            for key in ("invalidate", "pre_read", "sync", "overwrite", "buffer_compress_chunk"):
                assert key not in keys, (name, test.name, key)
            record = dump(test.record())
            assert "cache" not in json.dumps(record["points"])
            assert set(record["workload"]) == {
                "numjobs", "iodepth", "data_pattern", "direct", "ioengine", "fsync", "end_fsync",
            }  # fmt: skip


def test_vfile_points_are_stonewalled_and_drop_caches_goes_into_the_hand_off() -> None:
    prof = load_profile(
        "vfile", ["tests.vfile.drop_caches=true", "tests.vfile.thread_counts=[1, 2]"]
    )
    (test,) = planmod.build(prof, _info()).tests
    job = jobfile.round_jobfile(
        test, {"ioengine": "psync", "directory": "/w"}, jobfile.Handoff("/h", python="py")
    )
    sec = _sections(job)
    for p in test.points:
        opts = sec[p.job_name]
        prerun = opts.get("exec_prerun", "")
        if p.cache == "cold":  # after the previous point, drops once
            assert prerun.endswith(f" /h {p.index}"), prerun
        else:  # a virtual file's points follow each other by fio's stonewall
            assert not prerun
        assert opts.get("stonewall") == ("1" if p.index else None)
        # started when the point before ends, not at a planned time (a cold point of
        # one pass ends early); a cold point is one pass, size-based
        assert ("startdelay" in opts) == (p.index == 0)
        assert opts["time_based"] == ("0" if p.cache == "cold" else "1")
        assert opts["exec_postrun"].startswith(": > /h/done.")  # markers all the same
    first = sec[test.points[0].job_name]["exec_prerun"]
    margin = f"{jobfile.STALL_MARGIN:.0f}"
    assert f" /h -1 0 {margin} /h 0" in first  # nothing to wait for before the first point
    # without drop_caches no point waits in the hand-off
    (plain,) = planmod.build(load_profile("vfile"), _info()).tests
    job = jobfile.round_jobfile(
        plain, {"ioengine": "psync", "directory": "/w"}, jobfile.Handoff("/h", python="py")
    )
    assert "exec_prerun" not in job and job.count("stonewall=1") == 15
    # a round started ahead: only its first point waits for the round before
    follow = jobfile.Follow("/prev", plain.points[-1], 1.0)
    job = jobfile.round_jobfile(
        plain, {"directory": "/w"}, jobfile.Handoff("/h", python="py"), follow=follow
    )
    assert job.count("exec_prerun") == 1 and " /prev 15 128 " in job


def test_drop_caches_is_refused_without_root_or_with_fio_servers() -> None:
    prof = load_profile("vfile", ["tests.vfile.drop_caches=true"])
    plan = planmod.build(prof, _info())
    check_drop_caches(plan, euid=0)  # root: fine
    with pytest.raises(InputError) as err:
        check_drop_caches(plan, euid=1000)
    assert "only root" in str(err.value) and "tests.vfile.drop_caches" in str(err.value)
    with pytest.raises(InputError, match="--fio-server"):
        check_drop_caches(plan, ["host1"], euid=0)
    check_drop_caches(planmod.build(load_profile("vfile"), _info()), euid=1000)
    # a copy test's drop_caches (it drops the caches itself, before every copy): root
    # only, the same check; fio servers do not matter to it
    copy = planmod.build(load_profile("copy", ["tests.copy.drop_caches=true"]), _info())
    check_drop_caches(copy, ["host1"], euid=0)
    with pytest.raises(InputError, match="only root"):
        check_drop_caches(copy, euid=1000)


def test_a_copy_tests_drop_caches_and_data_patterns_stay_its_own() -> None:
    """The copy test (kind copy) shares the key drop_caches: no cache state needed for
    it, no page-cache words from this side, and the fio pattern name "compressible"
    is not one of its data patterns (those are compressible-NN)."""
    prof = load_profile("copy", ["tests.copy.drop_caches=true"])
    assert prof.test("copy").drop_caches and prof.test("copy").cache == "as-is"
    with pytest.raises(ProfileError, match=r"tests\.copy\.cache: a copy test does not take"):
        load_profile("copy", ["tests.copy.cache=cold"])
    with pytest.raises(ProfileError, match=r"tests\.copy\.data_patterns"):
        load_profile("copy", ['tests.copy.data_patterns=["compressible"]'])
    (test,) = planmod.build(prof, _info()).tests
    assert kinds.of_plan(test.record()).cache_states(test.record()) == []
    # one check for every drop_caches, the copy test's too (root only)
    with pytest.raises(InputError, match="only root"):
        check_drop_caches(planmod.build(prof, _info()), euid=1000)


# --------------------------------------------------------------------------- data patterns


def test_a_compressible_pattern_asks_fio_for_its_percentage() -> None:
    prof = load_profile(
        "ars", ["workload.data_pattern=compressible", "tests.4k.workload.compress_percentage=75"]
    )
    tests = {t.name: t for t in planmod.build(prof, _info()).tests}
    g = _sections(jobfile.round_jobfile(tests["4k"], {"directory": "/w"}, None))["global"]
    assert g["buffer_compress_percentage"] == "75" and g["buffer_compress_chunk"] == "512"
    assert g["refill_buffers"] == "1"
    g = _sections(jobfile.round_jobfile(tests["64k"], {"directory": "/w"}, None))["global"]
    assert g["buffer_compress_percentage"] == "50"  # the default percentage
    assert "compressible 75 % data" in planmod.describe(planmod.build(prof, _info()))
    # a test that picks another pattern drops the percentage it inherited
    prof = load_profile(
        "ars", ["workload.data_pattern=compressible", "tests.4k.workload.data_pattern=zero"]
    )
    assert prof.test("4k").workload.compress_percentage == 0


# --------------------------------------------------------------------------- bad input


def _profile(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "p.toml"
    p.write_text(body)
    return p


VOLUME = """
scope = "volume"
[workload]
direct = false
[tests.t]
kind = "fixed"
purge = false
precondition = false
file_size = "16m"
mixes = ["100/0"]
block_sizes = ["4k"]
[tests.v]
kind = "fixed"
purge = false
precondition = false
nodes = 4096
"""


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ("tests.t.cache=lukewarm", "tests.t.cache", "not one of"),
        ("tests.t.workload.direct=true", "", ""),  # cold-less default: fine
        ("workload.direct=true", "tests.v.caches", "buffered I/O"),
        ("tests.t.drop_caches=true", "tests.t.drop_caches", "cold"),
        ("workload.compress_percentage=50", "workload.compress_percentage", "compressible"),
        ("workload.compress_percentage=100", "workload.compress_percentage", "out of range 1..99"),
        ("workload.compress_percentage=0", "workload.compress_percentage", "out of range 1..99"),
        ("workload.data_pattern=dense", "workload.data_pattern", "not one of"),
        ("tests.v.nodes=2", "tests.v.nodes", "smaller than a page"),
        ('tests.v.caches=["as-is"]', "tests.v.caches", "not one of"),
        ('tests.v.operations=["delete"]', "tests.v.operations", "not one of"),
        ("tests.v.thread_counts=[]", "tests.v.thread_counts", "at least 1"),
        ("tests.t.page_size=8k", "tests.t.page_size", "set nodes too"),
        ("scope=device;tests.t.enabled=false", "tests.v.nodes", "volume benchmark"),
    ],
)
def test_bad_cache_pattern_and_vfile_keys_are_one_line_naming_the_key(
    tmp_path: Path, change: str, key: str, words: str
) -> None:
    path = _profile(tmp_path, VOLUME)
    load_profile(str(path))  # the profile itself is good
    if not key:
        load_profile(str(path), change.split(";"))
        return
    with pytest.raises(ProfileError) as err:
        load_profile(str(path), change.split(";"))
    assert key in str(err.value) and words in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ('cache = "warm"\n', "tests.t.cache"),
        ('block_sizes = ["4k"]\n', "tests.v.block_sizes"),
        ('file_size = "1m"\n', "tests.v.file_size"),
        ('cache = "cold"\n', "tests.v.cache"),
    ],
)
def test_keys_a_test_cannot_have_are_refused(tmp_path: Path, extra: str, key: str) -> None:
    section = key.split(".")[1]
    body = VOLUME.replace("[workload]\ndirect = false\n", "")
    body = body.replace(f"[tests.{section}]\n", f"[tests.{section}]\n{extra}")
    with pytest.raises(ProfileError) as err:
        load_profile(str(_profile(tmp_path, body)))
    assert key in str(err.value) and "\n" not in str(err.value)


def test_a_warm_direct_test_on_the_command_line_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", "--profile", "ars", "--target", str(tmp_path)]
    assert cli.main([*args, "--set", "tests.4k.cache=warm", "--set", "workload.direct=true"]) == 2
    line = _one_error(capsys.readouterr().err)
    assert "tests.4k.cache" in line and "buffered" in line
    assert cli.main([*args, "--set", "workload.compress_percentage=120"]) == 2
    assert "compress_percentage" in _one_error(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []  # plan touched nothing


# --------------------------------------------------------------------------- real fio

SMALL = [
    "tests.vfile.nodes=8192",  # a 4 MiB database file
    "tests.vfile.point_runtime=0.2s",
    "volume.reserve=1m",
    "volume.min_file_size=1m",
]


def _run(mnt: Path, out: Path, sets: list[str], profile: str = "vfile") -> None:
    args = ["run", "--profile", profile, "--target", str(mnt), "--out", str(out)]
    for s in sets:
        args += ["--set", s]
    assert cli.main([*args, "--no-history", "--no-report"]) == 0


def _sectors_read(dev: str) -> int:
    return int(Path(f"/sys/block/{Path(dev).name}/stat").read_text().split()[2])


def _round(out: Path, test: str) -> tuple[TestPlan, Round]:
    t = next(t for t in load_run(out).tests if t.name == test)
    return t.plan, t.rounds[0]


@needs_root
@pytest.mark.fio
def test_a_cold_read_comes_from_the_device_and_a_warm_one_from_the_cache(
    ext4: tuple[Path, str], tmp_path: Path
) -> None:
    """Reads of the database file, one thread.  A cold point is one pass over the file
    from an emptied cache (drop_caches, and fio drops the file's pages when it opens
    it), every page once, in order or at random: what fio reads, the device reads --
    no page is read twice and served from the cache (a time-based random read of a
    small file would have been cached within a fraction of a second).  The warm file
    was read in before the measurement, so for 0.5 s of reads the device reads about
    one file's worth however often fio reads it."""
    mnt, dev = ext4
    read: dict[str, tuple[float, int]] = {}
    for state, op in (("cold", "sequential"), ("cold", "random"), ("warm", "sequential")):
        out = tmp_path / f"{state}-{op}"
        before = _sectors_read(dev)
        sets = [*SMALL[:1], *SMALL[2:], "tests.vfile.point_runtime=0.5s"]
        sets.append("tests.vfile.thread_counts=[1]")
        sets += [f'tests.vfile.operations=["{op}-read"]', f'tests.vfile.caches=["{state}"]']
        if state == "cold":
            sets.append("tests.vfile.drop_caches=true")
        _run(mnt, out, sets)
        device = (_sectors_read(dev) - before) * 512
        plan, rnd = _round(out, "vfile")
        (point,) = rnd.points
        assert point.cache == state and plan.points[0].once == (state == "cold")
        read[f"{state}-{op}"] = (point.read.io_bytes, device)
    file_bytes = 8192 * 512
    for key in ("cold-sequential", "cold-random"):
        fio_cold, dev_cold = read[key]
        assert fio_cold == file_bytes, read  # one pass: every page once
        assert dev_cold >= 0.9 * fio_cold, read  # every page from the device
    fio_warm, dev_warm = read["warm-sequential"]
    assert fio_warm > 4 * file_bytes
    assert dev_warm < 0.25 * fio_warm and dev_warm < 2 * file_bytes, read


@needs_root
@pytest.mark.fio
def test_written_data_compresses_as_its_pattern_says(
    ext4: tuple[Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Three tests write a 2 MiB file front to back (several passes) with random,
    zero and 50 %-compressible data; before tkbench deletes each test's file, zlib
    compresses it."""
    mnt, _ = ext4
    ratios: dict[str, float] = {}
    original = VolumeTarget.test_done

    def measure(self: VolumeTarget, name: str) -> None:
        assert self.workdir is not None
        (f,) = [p for p in self.workdir.iterdir() if not p.name.startswith(".")]
        data = f.read_bytes()
        ratios[name] = len(zlib.compress(data, 6)) / len(data)
        original(self, name)

    monkeypatch.setattr(VolumeTarget, "test_done", measure)
    body = """
scope = "volume"
[volume]
reserve = "1m"
min_file_size = "1m"
[workload]
numjobs = 1
iodepth = 4
direct = false
ioengine = "libaio"
"""
    for name, pattern in (("rand", "random"), ("zero", "zero"), ("half", "compressible")):
        body += f"""
[tests.{name}]
kind = "fixed"
purge = false
precondition = false
pattern = "sequential"
file_size = "2m"
mixes = ["0/100"]
block_sizes = ["64k"]
point_runtime = "500ms"
end_fsync = true
workload = {{ data_pattern = "{pattern}" }}
"""
    prof = tmp_path / "patterns.toml"
    prof.write_text(body)
    out = tmp_path / "run"
    before = _snapshot(mnt)
    args = ["run", "--profile", str(prof), "--target", str(mnt), "--out", str(out)]
    assert cli.main([*args, "--no-history"]) == 0
    assert _snapshot(mnt) == before
    for name in ("rand", "zero", "half"):
        _, rnd = _round(out, name)
        assert rnd.points[0].write.io_bytes >= 2 * M  # the whole file written
    assert ratios["rand"] > 0.98, ratios  # incompressible (measured: 0.993)
    assert ratios["zero"] < 0.01, ratios  # next to nothing
    assert 0.45 <= ratios["half"] <= 0.6, ratios  # about half (measured: 0.51)
    job = (out / "tests" / "half" / "rounds" / "0001.fio").read_text()
    assert "buffer_compress_percentage=50" in job
    capsys.readouterr()
    assert cli.main(["show", str(out), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    by = {t["name"]: t for t in shown["tests"]}
    assert by["half"]["compress_percentage"] == 50 and "compress_percentage" not in by["rand"]
    assert by["half"]["cache"] == ["as-is"]  # buffered, not controlled: said so
    page = " ".join((out / "report.html").read_text().split())
    assert "compressible 50 %" in page


@needs_root
@pytest.mark.fio
def test_a_reduced_vfile_run_touches_nothing_but_its_database_file(
    ext4: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mnt, _ = ext4
    before = _snapshot(mnt)
    out = tmp_path / "run"
    args = ["run", "--profile", "vfile", "--target", str(mnt), "--out", str(out)]
    for s in [*SMALL, "tests.vfile.thread_counts=[1, 4]"]:
        args += ["--set", s]
    assert cli.main([*args, "--no-history"]) == 0
    assert _snapshot(mnt) == before  # nothing changed, nothing left behind
    job = (out / "tests" / "vfile" / "rounds" / "0001.fio").read_text()
    assert job.count(f"filename={FILE}") == 16 and "sync=1" in job
    log = capsys.readouterr().err
    # a fixed test has no steady-state criterion: its progress line claims no state
    assert "round done test=vfile round=1" in log and "state=" not in log
    assert cli.main(["show", str(out), "--json"]) == 0
    (t,) = json.loads(capsys.readouterr().out)["tests"]
    assert t["cache"] == ["cold", "warm"] and "points" not in t
    vf = t["vfile"]
    assert vf["unit"] == "nodes/s" and vf["node_size"] == 512 and vf["nodes"] == 8192
    assert vf["write_through"] is True and vf["page_size"] == 8 * K
    assert [(r["operation"], r["threads"]) for r in vf["rows"]] == [
        (op, n)
        for op in ("random-write", "random-read", "sequential-write", "sequential-read")
        for n in (1, 4)
    ]
    for r in vf["rows"]:
        for state in ("cold", "warm"):
            c = r[state]
            assert c["cache"] == state and c["nodes_s"] > 0
            assert c["nodes_s"] == pytest.approx(c["mb_s"] * 1e6 / 512)
    assert len(vf["points"]) == 16
    plan, rnd = _round(out, "vfile")
    result = vfile_of(plan, [rnd])
    assert result is not None
    p = rnd.points[0]  # random-write x1 cold: the round record's own bytes/s
    assert result.rows[0].cells["cold"].nodes_s == pytest.approx(p.bw_bytes / 512)
    assert cli.main(["show", str(out)]) == 0
    text = capsys.readouterr().out
    assert "page cache cold, warm" in text and "Random read, 4 thr." in text
    pdf = layout_text(out / "report.pdf")
    flat = " ".join(pdf.split())
    assert "Min (cold) Max (warm)" in flat and "Sequential read 4" in flat
    assert "4 interleaved streams, not one sequential stream" in flat
    assert "write-through" in flat and "Page cache cold:" in flat
    assert "A database of 8,192 nodes in one file on this volume" in flat
    assert "Headline results" not in flat  # no row of dashes: the numbers are above
