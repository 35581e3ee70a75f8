"""The fio side of a workload with real fio on file targets: the native replay does
the trace's I/Os one for one at the mapped offsets, and the applied workload's one
job does the main streams' mix (read from fio's JSON and from the iolog fio wrote)."""

from __future__ import annotations

import json
import random
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tkbench.errors import InputError
from tkbench.workload import fiojobs, reduce, tkw
from tkbench.workload.trace import DIRECTIONS, READ, WRITE, Trace

pytestmark = pytest.mark.fio

MIB = 1 << 20


def fio(target: Path, options: dict[str, object], *extra: str) -> dict[str, Any]:
    """One fio job on ``target`` with ``options``; its JSON job entry."""
    argv = ["fio", "--name=job", f"--filename={target}", "--ioengine=libaio", "--direct=1"]
    argv += [f"--{k}={int(v) if isinstance(v, bool) else v}" for k, v in options.items()]
    done = subprocess.run(
        [*argv, *extra, "--output-format=json"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    job: dict[str, Any] = json.loads(done.stdout[done.stdout.index("{") :])["jobs"][0]
    assert job["error"] == 0
    return job


def read_iolog(path: Path) -> Trace:
    """The reads and writes of a fio version 3 iolog as a trace."""
    rows = []
    for line in path.read_text().splitlines()[1:]:
        parts = line.split()
        if len(parts) == 5 and parts[2] in ("read", "write"):
            op = DIRECTIONS.index(parts[2])
            rows.append((int(parts[0]) * 1000, -1, int(parts[3]), int(parts[4]), op))
    return Trace.from_rows(rows)


def target_file(tmp_path: Path, size: int) -> Path:
    path = tmp_path / "target.img"
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def captured(
    n: int = 3000, capacity: int = 64 * MIB, seed: int = 5, latency: int = 40_000
) -> tkw.Workload:
    """A capture of ``n`` I/Os 50 µs apart, each done in ``latency`` ns (more than 50 µs:
    several outstanding): 4 KiB random reads and writes (60/40) over the whole device
    and a 128 KiB sequential write stream, one I/O in four."""
    rng = random.Random(seed)
    rows, seq = [], 0
    for i in range(n):
        if i % 4 == 0:
            rows.append((i * 50_000, latency, seq, 131072, WRITE))
            seq = (seq + 131072) % capacity
        else:
            op = READ if rng.random() < 0.6 else WRITE
            rows.append((i * 50_000, latency, rng.randrange(0, capacity, 4096), 4096, op))
    trace = Trace.from_rows(rows)
    header = {
        "device": {"capacity_bytes": capacity},
        "reduction": reduce.reduce(trace, capacity, n * 50e-6),
    }
    return tkw.Workload(header, trace)


@pytest.mark.parametrize(
    ("timing", "latency"),
    [("fast", 40_000), ("captured", 40_000), ("fast", 190_000), ("captured", 190_000)],
)
def test_native_replay_does_the_traces_ios_one_for_one_at_the_mapped_offsets(
    tmp_path: Path, timing: str, latency: int
) -> None:
    """One at a time, and four outstanding (fio 3.33 drops the last iodepth - 1 I/Os
    of a log: the log's padding takes that loss)."""
    w = captured(1500, latency=latency)
    pad = fiojobs.replay_depth(w) - 1
    assert pad == (0 if latency < 50_000 else 3)
    target = target_file(tmp_path, 16 * MIB)  # a quarter of the captured device
    iolog = tmp_path / "replay.iolog"
    fiojobs.write_iolog(iolog, fiojobs.iolog_text(w, str(target), 16 * MIB, mapping="scale"))
    job = fio(target, fiojobs.replay_options(w, str(target), iolog, timing=timing),
              f"--write_lat_log={tmp_path / 'done'}", "--log_offset=1")  # fmt: skip
    trace = w.trace
    # fio counts every entry of the log, the padding's reads too
    reads, writes = trace.op == READ, trace.op == WRITE
    assert job["read"]["total_ios"] == int(reads.sum()) + pad
    assert job["write"]["total_ios"] == int(writes.sum())
    # and does them all but those in flight at the end: at most the padding's number
    done: Counter[tuple[int, int, int]] = Counter()
    ends = []
    for line in (tmp_path / "done_clat.1.log").read_text().splitlines():
        _, _, ddir, bs, offset, *_ = (int(v) for v in line.split(","))
        ends.append(offset + bs)
        if bs != 512:  # not the padding
            done[(ddir, bs, offset)] += 1
    want = fiojobs.map_offsets(trace.offset, trace.size, 64 * MIB, 16 * MIB, "scale", 512)
    planned = Counter(zip(trace.op.tolist(), trace.size.tolist(), want.tolist(), strict=True))
    assert not done - planned
    assert sum((planned - done).values()) <= pad
    assert max(ends) <= 16 * MIB


def test_the_replay_refuses_a_log_that_would_pass_the_target_unscaled(tmp_path: Path) -> None:
    w = captured(100)
    with pytest.raises(InputError, match="scale or wrap"):
        fiojobs.iolog_text(w, str(tmp_path / "t"), 16 * MIB, mapping="keep")


def test_the_applied_workload_runs_the_main_streams_mix_as_one_job(tmp_path: Path) -> None:
    w = captured(4000)
    applied = fiojobs.applied_options(w, coverage=0.9)
    red = w.reduction
    assert {(s.rw, s.bs) for s in applied.streams} == {
        ("read", 4096), ("write", 4096), ("write", 131072)
    }  # fmt: skip
    target = target_file(tmp_path, 64 * MIB)
    log = tmp_path / "applied.iolog"
    job = fio(target, applied.options, "--number_ios=6000", "--io_size=10g", f"--write_iolog={log}")
    reads, writes = job["read"]["total_ios"], job["write"]["total_ios"]
    kept = [s for s in red.streams if s in applied.streams]
    held = sum(s.share_ios for s in kept)
    want_read = 100 * sum(s.share_ios for s in kept if s.rw == "read") / held
    assert 100 * reads / (reads + writes) == pytest.approx(want_read, abs=2)
    did = reduce.reduce(read_iolog(log), 64 * MIB, 1.0)
    by_bs: dict[tuple[str, int], float] = {}
    for s in did["streams"]:
        key = (s["rw"], s["bs"])
        by_bs[key] = by_bs.get(key, 0.0) + s["share_ios"]
    want_bs: dict[tuple[str, int], float] = {}
    for k in kept:
        want_bs[(k.rw, k.bs)] = want_bs.get((k.rw, k.bs), 0.0) + 100 * k.share_ios / held
    for key, share in want_bs.items():
        assert by_bs[key] == pytest.approx(share, abs=2)
    want_random = 100 * sum(k.share_ios for k in kept if k.pattern == "rand") / held
    assert did["random_pct"] == pytest.approx(want_random, abs=3)
    assert np.count_nonzero(did["heat"]) > 90  # random over the whole target
