"""Rounds back to back with real fio: the next round's fio is started while a round
runs and takes over when its last point ends -- never before (docs/methodology.md,
"Rounds back to back").

Every I/O is read back from fio's own per-I/O latency logs (``write_lat_log`` per
point, ``log_unix_epoch``): an entry is stamped with its completion time in whole
milliseconds, computed by fio as a truncated epoch plus truncated elapsed
milliseconds, so the true completion lies in [t, t + 2 ms); the I/O was issued its
latency before that.  "Round 2 never began before round 1 ended" is therefore
checked strictly: the earliest possible issue of round 2's first I/O is later than
the latest possible completion of round 1's last one.  The bound on the gap is
generous (a shared machine); the speed is claimed by benchmarks/round_overhead.py.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import STAGED_OFF, TWO_IOPS_ROUNDS, merged
from tests.fakes.fio_runner import parse_jobfile
from tkbench.engine import runs
from tkbench.engine.runs import RunRequest, start
from tkbench.fio.runner import LocalFio, LocalFioProcess
from tkbench.rundir.store import load_run

pytestmark = pytest.mark.fio

MiB = 1024 * 1024
SECTION = re.compile(r"^\[(p\d{3})_[^\]]*\]$", re.MULTILINE)
STAMP_ERROR_MS = 2  # fio's log stamps run up to this much behind the true time


class LoggingFio(LocalFio):
    """Real fio; every round's job file gets a per-I/O latency log per point,
    ``LOGS/rNNN_pXXX_lat.J.log``, rounds numbered in the order they are started."""

    def __init__(self, logs: Path) -> None:
        super().__init__()
        self.logs, self.rounds = logs, 0

    def start(self, jobfile: Path, workdir: Path, **kw: Any) -> LocalFioProcess:
        text = jobfile.read_text()
        if "[precondition]" not in text:
            self.rounds += 1
            prefix = f"{self.logs}/r{self.rounds:03d}"
            text = SECTION.sub(lambda m: f"{m.group(0)}\nwrite_lat_log={prefix}_{m.group(1)}", text)
            jobfile.write_text(text)
        return super().start(jobfile, workdir, **kw)


def _run(tmp: Path, monkeypatch: pytest.MonkeyPatch, *overrides: str) -> Path:
    logs = tmp / "logs"
    logs.mkdir()
    monkeypatch.setattr(runs, "make_runner", lambda servers: LoggingFio(logs))
    req = RunRequest(
        profile="quick",
        target=str(tmp / "t.img"),
        size=16 * MiB,
        out=tmp / "run",
        overrides=merged(*overrides),
        assume_yes=True,
    )
    out, manifest = start(req)
    assert manifest.status == "complete"
    return out


def _ios(logs: Path, rnd: int) -> list[tuple[float, float, int, int]]:
    """Round ``rnd``'s I/Os: (earliest issue, latest completion, direction, bytes), ms."""
    out = []
    for f in logs.glob(f"r{rnd:03d}_p*_lat.*.log"):
        for line in f.read_text().splitlines():
            t, lat_ns, ddir, bs = (int(x) for x in line.split(",")[:4])
            out.append((t - lat_ns / 1e6, t + STAMP_ERROR_MS, ddir, bs))
    return out


def _gap_ms(logs: Path, before: int, after: int) -> float:
    """From the latest possible completion of round ``before``'s last I/O to the
    earliest possible issue of round ``after``'s first: > 0 means no overlap."""
    first = min(issue for issue, _, _, _ in _ios(logs, after))
    last = max(done for _, done, _, _ in _ios(logs, before))
    return first - last


def _ahead_of(jobfile: Path) -> str | None:
    """The hand-off directory a round's first point waits in, if it was started ahead."""
    first = next(s for name, s in parse_jobfile(jobfile.read_text()).items() if name != "global")
    prerun = first.get("exec_prerun")
    return None if prerun is None else shlex.split(prerun)[4]


def test_round_2_begins_after_round_1_s_last_io_and_close_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _run(tmp_path, monkeypatch, *TWO_IOPS_ROUNDS)
    rounds = load_run(out).test("iops").rounds
    assert [r.round for r in rounds] == [1, 2]
    # round 2's fio was started while round 1 ran, and waited for round 1's last point
    rdir = out / "tests/iops/rounds"
    assert _ahead_of(rdir / "0001.fio") is None
    handoff = _ahead_of(rdir / "0002.fio")
    last = [n for n in parse_jobfile((rdir / "0001.fio").read_text()) if n != "global"][-1]
    postrun = parse_jobfile((rdir / "0001.fio").read_text())[last]["exec_postrun"]
    assert handoff is not None and postrun.startswith(f": > {handoff}/done.")
    assert rounds[1].fio.started < rounds[0].ended  # two fio processes at once
    gap = _gap_ms(tmp_path / "logs", 1, 2)
    assert gap > 0, f"round 2 overlapped round 1 by up to {-gap:.1f} ms"
    assert gap < 2000, f"{gap:.0f} ms between the rounds"
    assert not list((tmp_path / "logs").glob("r003_*"))  # round 2 was the last: none after it


def test_a_round_started_ahead_then_discarded_is_never_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # write saturation with a 0.3 s time limit: round 1 (one 0.2 s point) ends the test,
    # round 2 was started with it and has taken over from it by the time round 1 is read
    out = _run(
        tmp_path,
        monkeypatch,
        "tests.iops.enabled=false",
        "tests.throughput.enabled=false",
        "tests.latency.enabled=false",
        *STAGED_OFF,
        "tests.wsat.max_duration=0.3s",
    )
    t = load_run(out).test("wsat")
    assert [r.round for r in t.rounds] == [1]
    assert not list((out / "tests/wsat/rounds").glob("0002.*"))
    log = (out / "events.log").read_text()
    assert "test wsat: round 2, started ahead, discarded: round 1 ended the test" in log
    logs = tmp_path / "logs"
    written = {n: sum(bs for *_, ddir, bs in _ios(logs, n) if ddir == 1) for n in (1, 2)}
    # what round 1 wrote, by fio's logs, is all that counts; round 2's writes are not
    assert written[1] > 0
    assert t.rounds[0].written_bytes == t.rounds[0].total_written_bytes == written[1]
    assert t.result is not None and t.result.total_written_bytes == written[1]
    if written[2]:  # it had begun its I/O when it was stopped: after round 1, never with it
        assert _gap_ms(logs, 1, 2) > 0
    # nothing of either fio is left running
    left = subprocess.run(["pgrep", "-f", str(out)], capture_output=True)
    assert left.returncode == 1, left.stdout
