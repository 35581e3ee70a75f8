"""Workload-independent preconditioning writes 2 x the user capacity, all of it inside
the ActiveRange (real fio on a regular file; every I/O's offset read back from fio's
per-I/O latency logs, and the bytes past the ActiveRange compared before and after)."""

from __future__ import annotations

import collections
import subprocess
from pathlib import Path

import pytest

from tkbench.fio import jobfile
from tkbench.fio.output import parse
from tkbench.plan import build as plan
from tkbench.profile.build import load as load_profile

pytestmark = pytest.mark.fio

MiB = 1024 * 1024


def test_pts_c_preconditioning_writes_twice_the_capacity_within_the_range(
    tmp_path: Path,
) -> None:
    size = 64 * MiB
    target = tmp_path / "t.img"
    tail = bytes(range(256)) * 4096  # 1 MiB of a pattern fio's random data never repeats
    with target.open("wb") as fh:
        fh.write(b"\0" * (size - 16 * MiB) + tail * 16)
    # pts-c's ActiveRange (75 %) and preconditioning (2x capacity, 128k, 2 jobs)
    p = load_profile("pts-c")
    pl = plan.build(p, plan.TargetInfo(str(target), "file", size))
    iops = pl.tests[0]
    pre = iops.precondition
    assert pre is not None and (pre.bs, pre.numjobs) == (128 * 1024, 2)
    assert iops.active_bytes == 48 * MiB and pre.total_bytes == 2 * size

    text = jobfile.precondition_jobfile(
        iops, {"filename": jobfile.filename_value(str(target)), "ioengine": "libaio"}
    )
    log = tmp_path / "io"
    text = text.replace("[global]\n", f"[global]\nwrite_lat_log={log}\nlog_offset=1\n", 1)
    (tmp_path / "pre.fio").write_text(text)
    done = subprocess.run(
        ["fio", "--output-format=json", str(tmp_path / "pre.fio")],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    out = parse(done.stdout)
    assert sum(j.write.io_bytes for j in out.jobs) == pre.total_bytes == 128 * MiB

    writes: collections.Counter[int] = collections.Counter()
    for i in (1, 2):
        for line in (tmp_path / f"io_lat.{i}.log").read_text().splitlines():
            fields = line.split(",")
            assert int(fields[2]) == 1 and int(fields[3]) == pre.bs  # writes of 128k
            writes[int(fields[4])] += 1
    assert sum(writes.values()) * pre.bs == pre.total_bytes
    # every block of the ActiveRange written (2 x 64 MiB over 48 MiB: 2 or 3 times),
    # and nothing past it
    blocks = list(range(0, iops.active_bytes, pre.bs))
    assert sorted(writes) == blocks
    assert set(writes.values()) == {2, 3}
    with target.open("rb") as fh:
        fh.seek(iops.active_bytes)
        assert fh.read() == tail * 16
