"""Several drives in one ``tkbench run``: one independent child run per target
(tkbench/fleet/).  Real fio on tiny files, the emulator for a failing drive."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._helpers import FAST, TWO_IOPS_ROUNDS, sets
from tkbench import cli
from tkbench import fleet as fleetmod
from tkbench.cli.options import given
from tkbench.errors import RunDirError
from tkbench.rundir.records.run import DeviceFacts
from tkbench.rundir.store import load_run

TK = [sys.executable, "-m", "tkbench"]
FAST_RUN = ["--profile", "quick", "--size", "16M", "--yes", "--no-history", *sets(*TWO_IOPS_ROUNDS)]


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=20)


def _emulate(sock: Path, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [*TK, "emulate", "--socket", str(sock), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    limit = time.monotonic() + 30
    while not sock.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < limit, "emulator did not start"
        time.sleep(0.05)
    return proc


def _holder(path: Path) -> subprocess.Popen[str]:
    """Another process with ``path`` open: a target tkbench must refuse."""
    with open(path, "wb") as fh:
        fh.truncate(16 << 20)
    p = subprocess.Popen(
        [sys.executable, "-c", "import sys,time; f=open(sys.argv[1],'rb'); time.sleep(120)", path],
        text=True,
    )
    limit = time.monotonic() + 10
    while not any(
        os.path.realpath(f"/proc/{p.pid}/fd/{fd}") == str(path)
        for fd in os.listdir(f"/proc/{p.pid}/fd")
    ):
        assert time.monotonic() < limit
        time.sleep(0.02)
    return p


# ------------------------------------------------------------------ with fio


@pytest.mark.fio
def test_two_files_finish_beside_a_refused_and_a_failing_drive(
    tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    sock = tmp_path / "S"
    # the emulated drive returns I/O errors after 1 s: its run fails with 4
    procs.append(_emulate(sock, "--capacity", "32M", "--error-after", "1"))
    procs.append(_holder(tmp_path / "held.img"))
    out = tmp_path / "fleet"
    targets = [tmp_path / "a.img", tmp_path / "b.img", tmp_path / "held.img"]
    argv = [*TK, "run", *FAST_RUN, "--out", str(out)]
    argv += ["--set", 'acceptance.criteria=["iops iops 4k 0/100 >= 1"]']
    for t in targets:
        argv += ["--target", str(t)]
    argv += ["--target", f"nbd+unix:///?socket={sock}"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    # the worst of 0, 0, 3 (refused) and 4 (device failure)
    assert run.returncode == 4, run.stderr[-4000:]
    assert "Traceback" not in run.stderr
    rec = json.loads((out / "fleet.json").read_text())
    assert rec["format"] == "tkbench-fleet" and rec["version"] == 1
    codes = {r["name"]: r["exit_code"] for r in rec["runs"]}
    assert codes == {"a.img": 0, "b.img": 0, "held.img": 3, "S": 4}
    assert rec["exit_code"] == 4 and rec["ended"] >= rec["started"]
    held = next(r for r in rec["runs"] if r["name"] == "held.img")
    assert "open" in held["error"] and held["outcome"] == "refused"
    # every child line is tagged with its drive
    assert "[held.img] tkbench: error:" in run.stderr
    assert any(ln.startswith("[a.img] ") and "run done" in ln for ln in run.stderr.splitlines())
    # the refused target was not touched, and got no run directory
    assert not (out / "held.img").exists()
    for name in ("a.img", "b.img"):
        assert load_run(out / name).manifest.status == "complete"
        assert (out / name / "report.pdf").stat().st_size > 10_000
    assert load_run(out / "S").manifest.status == "failed"
    assert (out / "comparison.pdf").read_bytes().startswith(b"%PDF")

    show = subprocess.run(
        [*TK, "show", str(out), "--json"], capture_output=True, text=True, check=False
    )
    assert show.returncode == 0, show.stderr
    s = json.loads(show.stdout)
    drives = {d["name"]: d for d in s["drives"]}
    assert [d["name"] for d in s["drives"]] == ["a.img", "b.img", "held.img", "S"]
    a = drives["a.img"]
    assert a["status"] == "complete" and a["outcome"] == "complete"
    assert a["headline"]["iops: iops 4k 0/100"] > 0
    assert [t["name"] for t in a["tests"]] == ["iops"] and a["tests"][0]["rounds"] == 2
    assert a["checks"] == {"passed": True, "count": 1, "failed": []}
    assert drives["held.img"]["status"] == "not started"
    assert drives["S"]["status"] == "failed" and drives["S"]["outcome"] == "device or fio failure"
    assert s["comparison"] == str(out / "comparison.pdf")
    text = subprocess.run([*TK, "show", str(out)], capture_output=True, text=True, check=False)
    assert "held.img: refused (exit 3)" in text.stdout
    assert "S: device or fio failure (exit 4)" in text.stdout


def _wait(what: str, cond: object, timeout: float = 300) -> None:  # a bound, not a timing
    limit = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < limit, what
        time.sleep(0.05)


def _rounds(run: Path) -> int:
    return len(list(run.glob("tests/*/rounds/*.json")))


def _last_segment_rounds(run: Path) -> int:
    rounds = load_run(run).test("iops").rounds
    return sum(r.segment == rounds[-1].segment for r in rounds)


def _status(run: Path) -> str | None:
    try:
        return load_run(run).manifest.status
    except (RunDirError, OSError):
        return None


@pytest.mark.fio
def test_ctrl_c_stops_all_and_kill_9_of_the_parent_then_resume_completes_all(
    tmp_path: Path,
) -> None:
    out = tmp_path / "fleet"
    long_run = sets("tests.iops.rounds.max_excursion=0.000001", "tests.iops.rounds.max=5")
    argv = [
        *TK,
        "run",
        "--profile",
        "quick",
        "--size",
        "16M",
        "--yes",
        "--no-history",
        "--no-report",
        "--target",
        str(tmp_path / "a.img"),
        "--target",
        str(tmp_path / "b.img"),
        "--out",
        str(out),
        *[a for a in long_run],
        *[x for o in TWO_IOPS_ROUNDS[2:] for x in ("--set", o)],
    ]
    runs = [out / "a.img", out / "b.img"]

    def started(p: subprocess.Popen[str]) -> None:
        _wait("no progress", lambda: p.poll() is None and all(_rounds(r) >= 1 for r in runs))

    # Ctrl-C: every run stops cleanly, the fleet exits 130
    p = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, start_new_session=True)
    started(p)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err[-3000:]
    assert [_status(r) for r in runs] == ["interrupted", "interrupted"]
    assert json.loads((out / "fleet.json").read_text())["exit_code"] == 130
    assert f"--resume {out}" in err.splitlines()[-1]

    # resumed, then the fleet killed with SIGKILL: its runs stop (marked interrupted)
    # the guards and the confirmation apply again, as to one resumed run
    resume = [*TK, "run", "--resume", str(out), "--yes", "--no-history", "--no-report"]
    p = subprocess.Popen(resume, stderr=subprocess.PIPE, text=True, start_new_session=True)
    before = [_rounds(r) for r in runs]
    _wait(
        "resume made no progress",
        lambda: p.poll() is None and all(_rounds(r) > n for r, n in zip(runs, before, strict=True)),
    )
    os.kill(p.pid, signal.SIGKILL)
    p.communicate(timeout=20)
    _wait("runs went on without their fleet", lambda: all(_status(r) != "running" for r in runs))
    assert [_status(r) for r in runs] == ["interrupted", "interrupted"]

    # and resumed again: every run completes
    done = subprocess.run(resume, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [_status(r) for r in runs] == ["complete", "complete"]
    # each resume came after more than --resume-gap (1 s) of idle: the test was
    # preconditioned again and its last segment ran to the round limit of 5
    assert [_last_segment_rounds(r) for r in runs] == [5, 5]
    rec = json.loads((out / "fleet.json").read_text())
    assert rec["exit_code"] == 0 and len(rec["resumes"]) == 2
    again = subprocess.run(resume, capture_output=True, text=True, timeout=60, check=False)
    assert again.returncode == 2 and "nothing to resume" in again.stderr


# ------------------------------------------------------------------ without fio


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], code: int, match: str) -> None:
    assert cli.main(argv) == code
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and match in lines[0], lines


def test_bad_input_of_a_fleet_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, out = tmp_path / "a.img", tmp_path / "b.img", tmp_path / "fleet"
    base = ["run", *FAST_RUN, "--no-report", "--target", str(a), "--target", str(b)]
    base += ["--out", str(out)]
    _refused([*base, "--confirm", "S123"], capsys, 2, "--confirm S123 names none of the block")
    _refused([*base, "--junit", str(tmp_path / "j.xml")], capsys, 2, "--junit names one file")
    _refused([*base, "--set", "tests.iops.nope=1"], capsys, 2, "nope")
    os.symlink(a, tmp_path / "link.img")
    a.write_bytes(b"\0" * 4096)
    _refused(
        ["run", *FAST_RUN, "--target", str(a), "--target", str(tmp_path / "link.img")],
        capsys,
        2,
        "are the same target",
    )
    assert not out.exists() and not b.exists() and a.stat().st_size == 4096


def test_one_target_keeps_refusing_two_confirm_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--target", str(tmp_path / "a.img"), "--size", "16M"]
    argv += ["--confirm", "x", "--confirm", "y", "--out", str(tmp_path / "r")]
    _refused(argv, capsys, 2, "--confirm given twice with different values (x and y)")
    assert not (tmp_path / "r").exists()


def test_an_option_given_is_told_from_its_default() -> None:
    """What run --resume and the fleet's resume check: --profile typed, even with the
    default's own value, is given; left out, it is not."""
    parser = cli.build_parser()
    assert not given(parser.parse_args(["run", "--target", "x"]), "profile")
    assert given(parser.parse_args(["run", "--target", "x", "--profile", "quick"]), "profile")


def test_plan_of_several_drives_prints_each_and_warns_of_oversubscription(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["plan", "--size", "16M", "--no-jobs", *sets(*FAST)]
    argv += ["--target", str(tmp_path / "a.img"), "--target", str(tmp_path / "b.img")]
    monkeypatch.setattr(fleetmod, "cpu_cores", lambda: 64)
    assert cli.main(argv) == 0
    got = capsys.readouterr()
    assert "drive 1 of 2: " + str(tmp_path / "a.img") in got.out
    assert "drive 2 of 2: " + str(tmp_path / "b.img") in got.out
    assert "oversubscribed" not in got.err
    monkeypatch.setattr(fleetmod, "cpu_cores", lambda: 1)
    assert cli.main([*argv, "--json"]) == 0
    got = capsys.readouterr()
    doc = json.loads(got.out)
    assert [d["target"] for d in doc["drives"]] == [str(tmp_path / n) for n in ("a.img", "b.img")]
    assert doc["drives"][0]["plan"]["tests"]
    tests = doc["drives"][0]["plan"]["tests"]
    jobs = max(p["numjobs"] for t in tests for p in t["points"])
    want = f"oversubscribed: {2 * jobs} fio jobs at once ({jobs} + {jobs}) on 1 CPU core"
    assert want in doc["warnings"][0]
    assert "tkbench: warning: the host is oversubscribed" in got.err
    assert not (tmp_path / "a.img").exists()  # plan touches nothing


def _pci_dev(sys_root: Path, name: str, *chain: str) -> None:
    real = sys_root / "devices" / "pci0000:00"
    for c in chain:
        real = real / c
    real = real / "nvme" / name
    real.mkdir(parents=True)
    (sys_root / "block" / name).mkdir(parents=True)
    (sys_root / "block" / name / "device").symlink_to(real)


def test_drives_sharing_a_controller_or_a_link_are_named(tmp_path: Path) -> None:
    sysfs = tmp_path / "sys"
    _pci_dev(sysfs, "nvme0n1", "0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0")
    _pci_dev(sysfs, "nvme1n1", "0000:00:01.0", "0000:01:00.0", "0000:02:01.0", "0000:04:00.0")
    _pci_dev(sysfs, "nvme2n1", "0000:00:1d.0", "0000:3b:00.0")
    _pci_dev(sysfs, "nvme3n1", "0000:00:1d.0", "0000:3b:00.0")  # a second namespace's path
    got = fleetmod.sharing_warnings(
        ["/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1", "/dev/nvme3n1", "/tmp/f.img"], sysfs
    )
    assert got == [
        "/dev/nvme0n1 and /dev/nvme1n1 share the PCIe link of 0000:01:00.0",
        "/dev/nvme2n1 and /dev/nvme3n1 share the controller 0000:3b:00.0",
    ]
    assert fleetmod.sharing_warnings(["/dev/nvme0n1", "/dev/nvme2n1"], sysfs) == []


def test_the_worst_exit_code_wins() -> None:
    assert fleetmod.worst([]) == 0
    assert fleetmod.worst([0, 1, 0]) == 1
    assert fleetmod.worst([1, 2]) == 2
    assert fleetmod.worst([2, 3, 1]) == 3
    assert fleetmod.worst([3, 4]) == 4
    assert fleetmod.worst([4, 5, 3]) == 5
    assert fleetmod.worst([5, 130, 0]) == 130
    assert fleetmod.worst([0, -9]) == 5  # a run killed by a signal said nothing: internal
    assert fleetmod.outcome(-9) == "killed by signal 9"


def test_run_directory_names_are_unique_and_safe() -> None:
    ident = DeviceFacts(model="Samsung PM1733", serial="S4X/1")
    assert fleetmod.run_name("/dev/nvme0n1", "block", ident) == "Samsung_PM1733-S4X_1"
    unknown = DeviceFacts(model="unknown", serial="unknown")
    assert fleetmod.run_name("/dev/nvme0n1", "block", unknown) == "nvme0n1"
    assert fleetmod.run_name("/x/t.img", "file", DeviceFacts()) == "t.img"
    assert fleetmod.run_name("nbd+unix:///?socket=/tmp/s.sock", "nbd", DeviceFacts()) == "s.sock"
    assert fleetmod.unique(["t", "t", "t-2", "u"]) == ["t", "t-2", "t-2-2", "u"]


def test_a_fleet_record_from_elsewhere_is_refused(tmp_path: Path) -> None:
    (tmp_path / "fleet.json").write_text('{"format": "tkbench-fleet", "version": 99}')
    with pytest.raises(RunDirError, match="newer tkbench"):
        fleetmod.FleetRecord.load(tmp_path)
    bad = {"format": "tkbench-fleet", "version": 1, "profile": "quick"}
    bad["runs"] = [{"name": "a", "target": "a", "run_dir": "../elsewhere"}]  # type: ignore[list-item]
    (tmp_path / "fleet.json").write_text(json.dumps(bad))
    with pytest.raises(RunDirError, match="outside the fleet directory"):
        fleetmod.FleetRecord.load(tmp_path)


def test_a_fleet_record_is_read_typed_and_written_back_as_it_was(tmp_path: Path) -> None:
    """fleet.json as tkbench 1 writes it loads and saves to the same text; a field of
    the wrong type is one line naming it, not a value that breaks a reader later."""
    text = (
        '{\n "format": "tkbench-fleet",\n "version": 1,\n "profile": "quick",\n'
        ' "command_line": [\n  "tkbench",\n  "run"\n ],\n "host": "rig",\n'
        ' "started": 1700000000.5,\n "ended": null,\n "exit_code": null,\n'
        ' "resumes": [\n  1700000100.0\n ],\n "runs": [\n  {\n   "name": "a",\n'
        '   "target": "/x/a.img",\n   "run_dir": "a",\n   "kind": "file",\n'
        '   "started": 1700000001.0,\n   "ended": 1700000002.0,\n   "exit_code": 0,\n'
        '   "outcome": "complete",\n   "error": null\n  }\n ]\n}\n'
    )
    (tmp_path / "fleet.json").write_text(text)
    rec = fleetmod.FleetRecord.load(tmp_path)
    assert rec.runs[0].exit_code == 0 and rec.resumes == [1700000100.0]
    rec.save(tmp_path)
    assert (tmp_path / "fleet.json").read_text() == text
    bad = json.loads(text)
    bad["runs"][0]["exit_code"] = "0"
    (tmp_path / "fleet.json").write_text(json.dumps(bad))
    with pytest.raises(RunDirError, match=r"field runs\[0\]\.exit_code is a string"):
        fleetmod.FleetRecord.load(tmp_path)


@pytest.mark.root
@pytest.mark.fio
def test_each_confirm_goes_to_the_loop_device_it_names(tmp_path: Path) -> None:
    from fakes import helpers
    from fakes.helpers import sha256_of

    with helpers.loop_devices(tmp_path) as loops:
        confirmed, other = loops.create(16), loops.create(16)
        before = sha256_of(other)
        out = tmp_path / "fleet"
        argv = [*TK, "run", "--profile", "quick", "--no-history", "--no-report"]
        argv += [*sets(*TWO_IOPS_ROUNDS), "--out", str(out)]
        argv += ["--target", confirmed, "--target", other]
        argv += ["--confirm", os.path.basename(confirmed)]  # loop devices: the kernel name
        run = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode == 3, run.stderr[-3000:]
        rec = json.loads((out / "fleet.json").read_text())
        assert [r["exit_code"] for r in rec["runs"]] == [0, 3]
        assert "confirm" in rec["runs"][1]["error"]
        assert load_run(out / rec["runs"][0]["run_dir"]).manifest.status == "complete"
        assert sha256_of(other) == before  # the unconfirmed device was not written


def _imports(root: Path) -> dict[str, set[str]]:
    """Every tkbench module and the tkbench modules it imports, anywhere in it
    (function-local and TYPE_CHECKING imports counted): ``from P import N`` is an
    import of the module P.N where there is one, else of P."""
    names = {}
    for path in (root / "tkbench").rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out |= {a.name for a in node.names if a.name in names}
            elif isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                mod = (
                    (f"{base}.{node.module}" if node.module else base)
                    if node.level
                    else node.module
                )
                for a in node.names:
                    full = f"{mod}.{a.name}"
                    out.add(full if full in names else str(mod))
        graph[name] = {m for m in out if m in names and m != name}
    return graph


def test_the_fleet_and_engine_packages_and_the_cli_fleet_sit_in_no_import_cycle() -> None:
    graph = _imports(Path(__file__).resolve().parent.parent)
    mine = [m for m in graph if m.startswith(("tkbench.fleet", "tkbench.engine", "tkbench.cli."))]
    for start in mine:
        # every module ``start`` reaches; a cycle through it reaches ``start`` again
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo += graph[m]
        assert start not in seen, f"{start} imports itself through {sorted(seen)}"
