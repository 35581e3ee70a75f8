"""Malformed input: every case exits 2 with one line on stderr and no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tkbench import cli
from tkbench.rundir.store import SCHEMA


def _setup_none(tmp: Path) -> None:
    pass


def _write(name: str, text: str) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)

    return make


def _run_dir(manifest: object, extra: dict[str, str] | None = None) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        d = tmp / "run"
        d.mkdir()
        (d / "manifest.json").write_text(
            manifest if isinstance(manifest, str) else json.dumps(manifest)
        )
        for rel, text in (extra or {}).items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(text)

    return make


GOOD_MANIFEST = {"kind": "tkbench-run", "schema": SCHEMA, "status": "complete", "tests": ["iops"]}
RUN = ["run", "--target", "{tmp}/t.img", "--size", "16M", "--yes", "--no-report"]
WRONG_POINT_PLAN = '{"kind": "steady", "points": [{"bs": "4k", "read_pct": 0}]}'

CASES: list[tuple[str, list[str], Callable[[Path], None]]] = [
    ("no command", [], _setup_none),
    ("unknown command", ["frobnicate"], _setup_none),
    ("unknown option", ["run", "--bogus"], _setup_none),
    ("run without target", ["run", "--yes"], _setup_none),
    ("plan without target", ["plan"], _setup_none),
    ("plan --json without target", ["plan", "--json"], _setup_none),
    (
        "plan --json, bad --set",
        ["plan", "--json", "--target", "{tmp}/t.img", "--size", "16M", "--set", "rounds.max=x"],
        _setup_none,
    ),
    ("plan --json twice", ["plan", "--json", "--json", "--target", "{tmp}/t.img"], _setup_none),
    ("unknown profile", [*RUN, "--profile", "no-such-profile"], _setup_none),
    ("missing profile file", [*RUN, "--profile", "{tmp}/nope.toml"], _setup_none),
    ("profile syntax error", [*RUN, "--profile", "{tmp}/p.toml"], _write("p.toml", "[x\n")),
    (
        "profile unknown key",
        [*RUN, "--profile", "{tmp}/p.toml"],
        _write("p.toml", "extends = 'quick'\n[workload]\nspeed = 3\n"),
    ),
    (
        "profile wrong type",
        [*RUN, "--profile", "{tmp}/p.toml"],
        _write("p.toml", "extends = 'quick'\n[rounds]\nmax = '25'\n"),
    ),
    (
        "profile impossible value",
        [*RUN, "--profile", "{tmp}/p.toml"],
        _write("p.toml", "extends = 'quick'\n[rounds]\nwindow = 50\n"),
    ),
    (
        "profile bad mix",
        [*RUN, "--profile", "{tmp}/p.toml"],
        _write("p.toml", "extends = 'quick'\n[tests.iops]\nmixes = ['70/20']\n"),
    ),
    (
        "profile extends itself",
        [*RUN, "--profile", "{tmp}/p.toml"],
        _write("p.toml", "extends = 'p.toml'\n"),
    ),
    ("--set without =", [*RUN, "--set", "rounds.max"], _setup_none),
    (
        "--set of one key twice",
        [*RUN, "--set", "rounds.max=10", "--set", "rounds.max=12"],
        _setup_none,
    ),
    (
        "--set nested too deeply",
        [*RUN, "--set", "rounds.max=" + "[" * 5000 + "]" * 5000],
        _setup_none,
    ),
    ("IPv6 NBD URI cut short", ["run", "--target", "nbd://[::1", "--yes"], _setup_none),
    ("--out not UTF-8", [*RUN, "--out", "{tmp}/o\udcfe"], _setup_none),
    ("--set unknown key", [*RUN, "--set", "rounds.maximum=3"], _setup_none),
    ("--set unknown test", [*RUN, "--set", "tests.foo.repeat=3"], _setup_none),
    ("--set wrong type", [*RUN, "--set", "workload.direct=maybe"], _setup_none),
    ("--set impossible value", [*RUN, "--set", "rounds.max=-1"], _setup_none),
    ("--set bad tracking", [*RUN, "--set", 'tests.iops.tracking=["speed 4k 0/100"]'], _setup_none),
    ("--set bad block size", [*RUN, "--set", 'tests.iops.block_sizes=["4x"]'], _setup_none),
    ("bad --size", ["run", "--target", "{tmp}/t.img", "--size", "lots", "--yes"], _setup_none),
    ("zero --size", ["run", "--target", "{tmp}/t.img", "--size", "0", "--yes"], _setup_none),
    ("missing file without --size", ["run", "--target", "{tmp}/absent.img", "--yes"], _setup_none),
    (
        "target in a missing directory",
        ["run", "--target", "{tmp}/no/such/dir/t.img", "--size", "16M", "--yes"],
        _setup_none,
    ),
    (
        "unreachable NBD target",
        ["run", "--target", "nbd+unix:///?socket={tmp}/none.sock", "--yes"],
        _setup_none,
    ),
    ("malformed NBD URI", ["run", "--target", "nbd+unix:///?sock={tmp}/x", "--yes"], _setup_none),
    (
        "existing file, other --size",
        ["run", "--target", "{tmp}/f.img", "--size", "32M", "--yes"],
        _write("f.img", "x" * 4096),
    ),
    ("--out is a file", [*RUN, "--out", "{tmp}/out.txt"], _write("out.txt", "x")),
    ("--out holds a run", [*RUN, "--out", "{tmp}/run"], _run_dir(GOOD_MANIFEST)),
    ("--resume-gap not a number", [*RUN, "--resume-gap", "soon"], _setup_none),
    (
        "target path with ';' (fio would cut it)",
        ["run", "--target", "{tmp}/a;b.img", "--size", "16M", "--yes"],
        _setup_none,
    ),
    ("--out with '#' (fio comment)", [*RUN, "--out", "{tmp}/lab#3"], _setup_none),
    ("--out with '${' (fio expands it)", [*RUN, "--out", "{tmp}/x${HOME}"], _setup_none),
    ("show missing run dir", ["show", "{tmp}/nothing"], _setup_none),
    ("show a directory that is no run", ["show", "{tmp}"], _setup_none),
    ("show corrupt manifest", ["show", "{tmp}/run"], _run_dir("{not json")),
    ("show foreign manifest", ["show", "{tmp}/run"], _run_dir({"kind": "fio-plot", "schema": 1})),
    ("show newer schema", ["show", "{tmp}/run"], _run_dir({**GOOD_MANIFEST, "schema": SCHEMA + 1})),
    (
        "show corrupt round",
        ["show", "{tmp}/run"],
        _run_dir(
            GOOD_MANIFEST,
            {"tests/iops/test.json": "{}", "tests/iops/rounds/0001.json": '{"round": 1,'},
        ),
    ),
    ("resume a complete run", ["run", "--resume", "{tmp}/run", "--yes"], _run_dir(GOOD_MANIFEST)),
    (
        "show a JSON round that is no record",
        ["show", "{tmp}/run"],
        _run_dir(
            GOOD_MANIFEST, {"tests/iops/test.json": "{}", "tests/iops/rounds/0001.json": "{}"}
        ),
    ),
    ("resume a missing dir", ["run", "--resume", "{tmp}/gone", "--yes"], _setup_none),
    (
        "manifest field of the wrong type",
        ["show", "{tmp}/run"],
        _run_dir({**GOOD_MANIFEST, "target": {"capacity_bytes": "big"}}),
    ),
    (
        "manifest tests not a list",
        ["compare", "{tmp}/run"],
        _run_dir({**GOOD_MANIFEST, "tests": 3}),
    ),
    (
        "history of a run with a wrong-typed round",
        ["history", "--history", "{tmp}/h.sqlite", "--add", "{tmp}/run"],
        _run_dir(GOOD_MANIFEST, {"tests/iops/test.json": WRONG_POINT_PLAN}),
    ),
    (
        "report of a run whose result has the wrong shape",
        ["report", "{tmp}/run", "--out", "{tmp}/r.pdf"],
        _run_dir(
            GOOD_MANIFEST,
            {
                "tests/iops/test.json": '{"kind": "steady", "points": []}',
                "tests/iops/result.json": '{"window": "1-5"}',
            },
        ),
    ),
    (
        "resume a run without profile",
        ["run", "--resume", "{tmp}/run", "--yes"],
        _run_dir({**GOOD_MANIFEST, "status": "interrupted"}),
    ),
]


# `tkbench run` asks `fio --version` (runs.start) before it looks at --target and
# --out: without fio these cases stop there, with exit 4 and the fio hint.
NEEDS_FIO = {
    "zero --size",
    "missing file without --size",
    "target in a missing directory",
    "unreachable NBD target",
    "malformed NBD URI",
    "existing file, other --size",
    "--out is a file",
    "--out holds a run",
    "target path with ';' (fio would cut it)",
    "--out with '#' (fio comment)",
    "--out with '${' (fio expands it)",
}
PARAMS = [
    pytest.param(*case, id=case[0], marks=[pytest.mark.fio] if case[0] in NEEDS_FIO else [])
    for case in CASES
]


@pytest.mark.parametrize(("name", "argv", "setup"), PARAMS)
def test_bad_input_exits_2_with_one_line(
    name: str,
    argv: list[str],
    setup: Callable[[Path], None],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    setup(tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code = cli.main(args)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, f"{name}: exit {code}: {err}"
    assert "Traceback" not in err
    assert len(lines) == 1, err
    assert lines[0].startswith("tkbench: error:")
    # nothing was created for a refused run
    assert not (tmp_path / "t.img").exists()


def test_at_least_thirty_cases() -> None:
    assert len(CASES) >= 30
    assert NEEDS_FIO.issubset(c[0] for c in CASES)


@pytest.mark.parametrize(
    "argv",
    [["run", "--set", "rounds.max=x", "--target", "/nonexistent"], ["show", "/nonexistent/run"]],
)
def test_real_process_prints_one_line(argv: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tkbench", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "error"},
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_missing_fio_is_a_tool_failure_with_a_hint(tmp_path: Path) -> None:
    # PATH without fio: a real process, as on a machine where fio is not installed
    env = {**os.environ, "PATH": str(tmp_path)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tkbench",
            "run",
            "--target",
            str(tmp_path / "t.img"),
            "--size",
            "16M",
            "--yes",
            "--out",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 4
    assert proc.stderr.strip() == (
        "tkbench: error: required program 'fio' not found on PATH "
        "(install the Debian package 'fio')"
    )
    assert not (tmp_path / "t.img").exists() and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("files", "named"),
    [
        ({"manifest.json": {**GOOD_MANIFEST, "status": 3}}, "manifest.json: field status"),
        (
            {"manifest.json": {**GOOD_MANIFEST, "profile": {"name": ["quick"]}}},
            "manifest.json: field profile.name is a list, expected string",
        ),
        (
            {"tests/iops/test.json": {"kind": "steady", "points": [{"bs": "4k"}]}},
            "test.json: field points[0].bs is a string, expected integer",
        ),
        (
            {
                "tests/iops/test.json": {"kind": "steady", "points": []},
                "tests/iops/rounds/0001.json": {
                    "round": 1,
                    "tracking": {},
                    "points": [{"bs": 4096, "read_pct": 0, "read": {"iops": "fast"}}],
                },
            },
            "0001.json: field points[0].read.iops is a string, expected number",
        ),
        (
            {"tests/iops/test.json": {"points": []}},
            "test.json: field kind is missing",
        ),
        (
            {
                "tests/iops/test.json": {"kind": "steady", "points": []},
                "tests/iops/rounds/0001.json": {
                    "round": 1,
                    "tracking": {},
                    "points": [
                        {"bs": 4096, "read_pct": 0, "write": {"percentiles_ns": {"abc": 1.0}}}
                    ],
                },
            },
            "0001.json: field points[0].write.percentiles_ns has the key 'abc', not a number",
        ),
    ],
)
def test_a_run_directory_of_the_wrong_shape_names_file_and_field(
    files: dict[str, object], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    files = {"manifest.json": GOOD_MANIFEST, **files}
    for rel, data in files.items():
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_text(json.dumps(data))
    for argv in (["show", str(run)], ["compare", str(run), str(run)]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and named in err, err


def test_a_character_device_is_refused_as_a_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # refused always (docs/safety.md): exit 3, like every other safety refusal
    argv = ["run", "--target", "/dev/null", "--yes", "--out", str(tmp_path / "run")]
    assert cli.main(argv) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "neither a regular file nor a block device" in err
    assert not (tmp_path / "run").exists()


def test_a_report_where_no_file_can_be_created_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # /proc is a directory root may write by its permissions, yet no file can be made
    # there: found before rendering, not as a write failure after it
    run = Path(__file__).parent / "data" / "rundirs" / "emu"
    assert cli.main(["report", str(run), "--out", "/proc/tkbench-report.pdf"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot create a file in /proc" in err


def test_an_error_naming_a_path_with_a_newline_stays_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = tmp_path / "a\nb\x1b[31m"
    assert cli.main(["show", str(odd)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a\\nb\\x1b[31m: no such run directory" in err
