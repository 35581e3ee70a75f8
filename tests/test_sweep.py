"""The bulk-I/O sweep (profile ``bulk-sweep``, docs/volume.md): its plan and fio job
options, the skip rule, the best-combination logic with synthetic numbers, and a
reduced sweep with real fio on a mounted ext4 filesystem that must change nothing
outside tkbench's working directory."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.test_volume import _one_error, _snapshot, ext4, needs_root
from tkbench import cli
from tkbench.errors import ProfileError
from tkbench.fio import jobfile
from tkbench.kinds.results.sweep import DEFAULT, Cell, best_cell, result
from tkbench.kinds.sweep import FILE, MODES, combinations, own
from tkbench.plan import build as planmod
from tkbench.profile.build import load as load_profile

__all__ = ["ext4"]  # the fixture, shared with test_volume

K, M = 1024, 1024 * 1024
GiB = 1024 * M


def _info(free: int = 100 * GiB, direct: bool = True) -> planmod.TargetInfo:
    return planmod.TargetInfo("/srv/data", "volume", 200 * GiB, 512, free, direct)


# --------------------------------------------------------------------------- plan


def test_the_bundled_sweep_runs_every_combination_within_64_mib_of_buffers() -> None:
    prof = load_profile("bulk-sweep")
    assert prof.scope == "volume"
    plan = planmod.build(prof, _info())
    (test,) = plan.tests
    spec = test.spec
    assert [size // K for size in spec.block_sizes] == [8 << i for i in range(12)]
    assert own(spec).buffer_counts == (1, 2, 4, 8, 16)
    assert own(spec).modes == tuple(MODES)
    # 12 x 5 = 60 combinations; 8M x 16, 16M x 8, 16M x 16 exceed 64 MiB
    run, skipped = combinations(spec.block_sizes, own(spec).buffer_counts, 64 * M)
    assert skipped == [(8 * M, 16), (16 * M, 8), (16 * M, 16)]
    assert (16 * M, 4) in run and (4 * M, 16) in run  # exactly 64 MiB: run
    assert len(test.points) == 57 * 5
    assert test.active_bytes == 2 * GiB
    assert any("3 buffer size x count combination(s) skipped" in n for n in test.notes)
    lo, hi = plan.estimate()
    assert lo == hi == pytest.approx(285.0)  # "about 5 minutes plus file creation"
    text = planmod.describe(plan)
    assert "57 combination(s)" in text and text.count("\n") < 60  # not a line per point


def test_each_mode_asks_fio_for_its_caching_and_hint() -> None:
    prof = load_profile("bulk-sweep")
    (test,) = planmod.build(prof, _info()).tests
    job = jobfile.round_jobfile(test, {"ioengine": "libaio", "directory": "/w"}, None)
    sections = {}
    for block in job.split("\n\n")[1:]:
        lines = block.strip().splitlines()
        sections[lines[0].strip("[]")] = dict(x.split("=", 1) for x in lines[1:])
    by_tag = {p.tag: sections[p.job_name] for p in test.points}
    want = {
        "unbuffered-read": ("read", "1", "0"),
        "unbuffered-write": ("write", "1", "0"),
        "unbuffered-seq-read": ("read", "1", "sequential"),
        "unbuffered-seq-write": ("write", "1", "sequential"),
        "buffered-seq-read": ("read", "0", "sequential"),
    }
    for mode, (rw, direct, hint) in want.items():
        opts = by_tag[f"x8 {mode}"]
        assert (opts["rw"], opts["direct"], opts["fadvise_hint"]) == (rw, direct, hint), mode
        assert opts["filename"] == FILE and opts["invalidate"] == "1"
        assert opts["iodepth"] == "8" and opts["numjobs"] == "1"
        assert opts["offset"] == "0" and opts["size"] == str(2 * GiB)  # front to back
    # every point, in every round, starts at the file's beginning
    assert jobfile.stream_starts(test.points, [], test.active_bytes) == {}


def test_the_test_file_shrinks_to_a_small_volume() -> None:
    prof = load_profile("bulk-sweep")
    (test,) = planmod.build(prof, _info(free=1536 * M)).tests
    assert test.active_bytes < 2 * GiB and test.active_bytes % (16 * M) == 0
    assert any("shrunk" in n for n in test.notes)


# --------------------------------------------------------------------------- the best


def _cell(mode: str, size: int, count: int, mb_s: float) -> Cell:
    return Cell(mode, size, count, mb_s, (mb_s,))


def test_the_best_combination_per_mode_direction_and_overall() -> None:
    cells = [
        _cell("unbuffered-read", 128 * K, 1, 500.0),  # the default
        _cell("unbuffered-read", 1 * M, 4, 2000.0),
        _cell("unbuffered-read", 1 * M, 8, 1900.0),
        _cell("buffered-seq-read", 128 * K, 1, 1500.0),
        _cell("buffered-seq-read", 2 * M, 2, 2500.0),
        _cell("unbuffered-write", 128 * K, 1, 400.0),
        _cell("unbuffered-write", 64 * K, 16, 1000.0),
        _cell("unbuffered-seq-write", 4 * M, 1, 1200.0),  # no default in this mode
    ]
    sizes = (64 * K, 128 * K, M, 2 * M, 4 * M)
    res = result(cells, sizes, (1, 2, 4, 8, 16), [(4 * M, 16)])
    by_mode = {t.mode: t for t in res.modes}
    assert [t.mode for t in res.modes] == [
        "unbuffered-read",
        "unbuffered-write",
        "unbuffered-seq-write",
        "buffered-seq-read",
    ]  # the modes in their fixed order
    ur = by_mode["unbuffered-read"].best
    assert (ur.cell.buffer_size, ur.cell.buffer_count, ur.cell.mb_s) == (M, 4, 2000.0)
    assert ur.default is not None and ur.default.mb_s == 500.0
    assert ur.gain_pct == pytest.approx(300.0)
    # the best read is buffered; its gain is against 1 x 128K buffered
    read = res.best["read"]
    assert read.cell.mode == "buffered-seq-read" and read.gain_pct == pytest.approx(100 * 1 / 1.5)
    write = res.best["write"]
    assert write.cell.mode == "unbuffered-seq-write" and write.default is None
    assert write.gain_pct is None
    assert res.overall.cell.mb_s == 2500.0
    assert by_mode["unbuffered-read"].value(64 * K, 1) is None  # not measured
    d = res.to_dict()
    assert d["best"]["write"]["gain_pct"] is None and d["best_overall"]["mb_s"] == 2500.0
    assert d["skipped"] == [{"buffer_size": 4 * M, "buffer_count": 16}]
    assert d["default"] == {"buffer_size": DEFAULT[0], "buffer_count": DEFAULT[1]}


def test_of_equally_fast_combinations_the_one_with_less_buffer_space_wins() -> None:
    a = _cell("unbuffered-read", 1 * M, 4, 1000.0)  # 4 MiB of buffers
    b = _cell("unbuffered-read", 256 * K, 4, 1000.0)  # 1 MiB
    c = _cell("unbuffered-read", 512 * K, 2, 1000.0)  # 1 MiB, a larger buffer
    assert best_cell([a, b, c]) is b
    assert best_cell([a, _cell("unbuffered-read", 8 * K, 1, 1000.1)]).buffer_size == 8 * K
    with pytest.raises(ValueError):
        best_cell([])


# --------------------------------------------------------------------------- bad input


def _profile(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "bad.toml"
    p.write_text(body)
    return p


SWEEP = """
scope = "volume"
[workload]
numjobs = 1
[tests.s]
kind = "fixed"
purge = false
precondition = false
pattern = "sequential"
file_size = "64m"
buffer_sizes = ["64k"]
buffer_counts = [1]
modes = ["unbuffered-read"]
"""


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ("scope=device", "tests.s.modes", "volume benchmark"),
        ("tests.s.workload.numjobs=2", "numjobs", "one job"),
        ("tests.s.max_buffer_space=32k", "max_buffer_space", "skips every"),
        ('tests.s.block_sizes=["4k"]', "block_sizes", "sets it"),
        ('tests.s.modes=["fast"]', "modes", "not one of"),
        ("tests.s.pattern=random", "pattern", "front to back"),
        ("tests.s.modes=[]", "modes", "at least 1"),
    ],
)
def test_a_bad_sweep_is_one_error_naming_the_key(
    tmp_path: Path, change: str, key: str, words: str
) -> None:
    path = _profile(tmp_path, SWEEP)
    load_profile(str(path))  # the profile itself is good
    with pytest.raises(ProfileError) as err:
        load_profile(str(path), [change])
    assert key in str(err.value) and words in str(err.value)
    assert "\n" not in str(err.value)


def test_a_bad_sweep_on_the_command_line_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", "--profile", "bulk-sweep", "--target", str(tmp_path)]
    assert cli.main([*args, "--set", "tests.sweep.max_buffer_space=4k"]) == 2
    assert "max_buffer_space" in _one_error(capsys.readouterr().err)
    assert cli.main([*args, "--set", 'tests.sweep.modes=["sideways"]']) == 2
    assert "modes" in _one_error(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []  # plan touched nothing


# --------------------------------------------------------------------------- real fio

REDUCED = [
    'tests.sweep.buffer_sizes=["64k", "1m"]',
    "tests.sweep.buffer_counts=[1, 4]",
    'tests.sweep.modes=["unbuffered-seq-write", "buffered-seq-read"]',
    "tests.sweep.point_runtime=0.2s",
    "tests.sweep.file_size=32m",
    "tests.sweep.max_buffer_space=1m",  # 1M x 4 is skipped
    "volume.reserve=1m",
]


@needs_root
@pytest.mark.fio
def test_a_reduced_sweep_touches_nothing_but_its_own_file(
    ext4: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mnt, _ = ext4
    before = _snapshot(mnt)
    out = tmp_path / "run"
    args = ["run", "--profile", "bulk-sweep", "--target", str(mnt), "--out", str(out)]
    for s in REDUCED:
        args += ["--set", s]
    assert cli.main([*args, "--no-history"]) == 0
    assert _snapshot(mnt) == before  # nothing changed, nothing left behind
    job = (out / "tests" / "sweep" / "rounds" / "0001.fio").read_text()
    assert job.count(f"filename={FILE}") == 6  # 3 combinations x 2 modes, one file
    capsys.readouterr()
    assert cli.main(["show", str(out), "--json"]) == 0
    (t,) = json.loads(capsys.readouterr().out)["tests"]
    sw = t["sweep"]
    assert sw["unit"] == "MB/s" and "points" not in t
    assert sw["buffer_sizes"] == [64 * K, M] and sw["buffer_counts"] == [1, 4]
    assert sw["skipped"] == [{"buffer_size": M, "buffer_count": 4}]
    assert [m["mode"] for m in sw["modes"]] == ["unbuffered-seq-write", "buffered-seq-read"]
    for m in sw["modes"]:
        cells = {(c["buffer_size"], c["buffer_count"]): c["mb_s"] for c in m["table"]}
        assert set(cells) == {(64 * K, 1), (64 * K, 4), (M, 1)}
        assert all(v > 0 for v in cells.values())
        best = m["best"]
        assert best["mb_s"] == max(cells.values())
        assert best["default"] is None  # no 128K in this sweep
    assert set(sw["best"]) == {"read", "write"}
    assert sw["best"]["read"]["mode"] == "buffered-seq-read"
    for key in ("mode", "buffer_size", "buffer_count", "mb_s"):
        assert key in sw["best"]["write"]
    assert sw["best_overall"]["mb_s"] == max(b["mb_s"] for b in sw["best"].values())
    pdf = subprocess.run(
        ["pdftotext", str(out / "report.pdf"), "-"], capture_output=True, text=True, check=True
    ).stdout
    text = " ".join(pdf.split())
    assert "Heat map of unbuffered sequential write." in text
    assert "Heat map of buffered sequential read." in text
    assert "1 combination(s) were not run" in text and "4 × 1M" in text
