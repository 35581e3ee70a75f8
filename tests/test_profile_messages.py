"""Every one-line message of the profile loader's checks, as the loader gave it
before it was rewritten as tables (issue 23): each case below is a bundled profile
with ``--set`` overrides, built twice, once with the overrides as ``--set`` options
(the message names the option) and once written into the profile's TOML (the
message names the file and the key).

``tests/data/profile-specs/messages.json`` was written once by running this module
as a script (``PYTHONPATH=. python tests/test_profile_messages.py``) on the loader
before the rewrite (commit 08dd024)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tkbench.errors import ProfileError
from tkbench.profile.build import build, load
from tkbench.profile.finding import load_raw, parse_override

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "profile-specs" / "messages.json"

OFF = tuple(f"tests.{t}.enabled=false" for t in ("hir", "xsr", "cbw", "dirth"))
# (profile, overrides): each breaks one rule of the loader
CASES: list[tuple[str, tuple[str, ...]]] = [
    ("quick", ("scope=3",)),
    ("quick", ("pts_variant=X",)),
    ("quick", ("name=3",)),
    ("quick", ("workload=3",)),
    ("quick", ("workload.numjobs=0",)),
    ("quick", ("workload.direct=1",)),
    ("quick", ("rounds.max=x",)),
    ("quick", ("rounds.window=30", "rounds.max=10")),
    ("quick", ("purge.method=nope",)),
    ("quick", ("precondition.bs=1000",)),
    ("quick", ("report.paper=A5",)),
    ("quick", ("acceptance.criteria=['x']",)),
    ("quick", ("volume.reserve=x",)),
    ("quick", ("tests=3",)),
    ("quick", ("tests.iops=3",)),
    ("quick", ("tests.iops.point_runtime=0s",)),
    ("quick", ("tests.iops.kind=nope",)),
    ("quick", ("tests.iops.workload=3",)),
    ("quick", ("tests.iops.workload.iodepth=0",)),
    ("quick", ("tests.iops.rounds.window=1",)),
    ("quick", ("tests.iops.rounds.window=20",)),
    ("quick", ("tests.iops.workload.write_cache=on",)),
    ("quick", ("workload.compress_percentage=30",)),
    ("quick", ("tests.iops.workload.compress_percentage=30",)),
    ("quick", ("workload.data_pattern=compressible", "tests.iops.workload.data_pattern=zero",
               "tests.iops.workload.compress_percentage=30")),
    ("quick", ("tests.iops.bssplit=['4k/50', '8k/40']",)),
    ("quick", ("tests.iops.zones=['50/5', '30/15']",)),
    ("quick", ("tests.iops.zones=['50/50', '30/30', '20/30']",)),
    ("quick", ("tests.iops.wsat_workload=oltp",)),
    ("quick", ("tests.iops.mixes=[]",)),
    ("quick", ("tests.hir.wait_states=[]",)),
    ("quick", ("tests.cbw.threads=[]",)),
    ("quick", ("tests.dirth.mixes=['0/100', '100/0']",)),
    ("quick", ("tests.hir.precondition=true",)),
    ("quick", ("tests.iops.procedure=hir",)),
    ("quick", ("tests.iops.procedure=xsr",)),
    ("quick", ("tests.iops.procedure=cbw",)),
    ("quick", ("tests.iops.procedure=dirth",)),
    ("quick", ("tests.iops.procedure=dirth", "tests.iops.threads=[1]", "tests.iops.iodepths=[1]")),
    ("quick", ("tests.dirth.block_sizes=['4k', '8k']",)),
    ("quick", ("tests.xsr.precondition=true",)),
    ("quick", ("tests.cbw.cache=cold",)),
    ("quick", ("tests.iops.buffer_sizes=['4k']",)),
    ("quick", ("tests.iops.modes=['unbuffered-read']",)),
    ("quick", ("tests.iops.sets=['iso 2 1g']",)),
    ("quick", ("tests.iops.kind=copy",)),
    ("quick", ("tests.iops.node_size=4k",)),
    ("quick", ("tests.iops.nodes=100",)),
    ("quick", ("tests.iops.capture=x.tkw",)),
    ("quick", ("tests.iops.replay=true",)),
    ("quick", ("tests.iops.replay=true", "tests.iops.threads=[1]", "tests.iops.iodepths=[1]",
               "tests.iops.bssplit=['4k/100']")),
    ("quick", ("tests.hir.cache=cold",)),
    ("quick", ("tests.iops.cache=warm",)),
    ("quick", ("tests.iops.drop_caches=true",)),
    ("quick", ("tests.iops.tracking=['iops 8k 0/100']",)),
    ("quick", ("tests.iops.tracking=[]",)),
    ("quick", ("tests.iops.file_size=1g",)),
    ("quick", ("tests.iops.repeat_until='3%'",)),
    ("quick", ("tests.iops.repeat_until=3",)),
    ("quick", ("tests.iops.kind=fixed", "tests.iops.repeat_until='3%'",
               "tests.iops.repeat_max=1")),
    ("quick", ("tests.hir.kind=fixed", "tests.hir.repeat_until='3%'")),
    ("quick", tuple(f"tests.{t}.enabled=false" for t in
                    ("iops", "throughput", "latency", "wsat", "hir", "xsr", "cbw", "dirth"))),
    ("quick", ("acceptance.criteria=['nope iops 4k 0/100 >= 1']",)),
    ("quick", ("acceptance.criteria=['iops best_write_mb_s >= 1']",)),
    ("quick", ("tests.iops.title=3", "tests.iops.mixes=3")),
    ("ars", ("tests.4k.purge=true",)),
    ("ars", ("tests.4k.precondition=true",)),
    ("ars", ("tests.4k.kind=steady",)),
    ("ars", ("tests.4k.file_size=0",)),
    ("ars", ("tests.4k.repeat_until='3%'", "tests.4k.repeat_max=1")),
    ("bulk-sweep", ("tests.sweep.buffer_counts=[]",)),
    ("bulk-sweep", ("tests.sweep.block_sizes=['4k']",)),
    ("bulk-sweep", ("tests.sweep.pattern=random",)),
    ("bulk-sweep", ("tests.sweep.workload.numjobs=2",)),
    ("bulk-sweep", ("tests.sweep.bssplit=['4k/100']",)),
    ("bulk-sweep", ("tests.sweep.max_buffer_space=4k",)),
    ("bulk-sweep", ("tests.sweep.cache=cold",)),
    ("bulk-sweep", ("tests.sweep.repeat_until='3%'",)),
    ("bulk-sweep", ("scope=device",)),
    ("bulk-sweep", ("acceptance.criteria=['sweep nope_mb_s >= 1']",)),
    ("copy", ("tests.copy.sets=[]",)),
    ("copy", ("tests.copy.sets=['iso 2 1g', 'iso 3 1g']",)),
    ("copy", ("tests.copy.block_sizes=['4k']",)),
    ("copy", ("tests.copy.cache=cold",)),
    ("copy", ("scope=device",)),
    ("copy", ("acceptance.criteria=['copy iso.zero.nodes_s >= 1']",)),
    ("vfile", ("tests.vfile.block_sizes=['4k']",)),
    ("vfile", ("tests.vfile.modes=['unbuffered-read']",)),
    ("vfile", ("tests.vfile.nodes=1",)),
    ("vfile", ("scope=device",)),
    ("rwsw", ("tests.rwsw.threads=[]",)),
    ("rwsw", ("tests.rwsw.modes=['unbuffered-read']",)),
    ("rwsw", ("scope=volume",)),
    ("rwsw", ("tests.rwsw.coverage=0.5",)),
]  # fmt: skip


def _set(data: dict[str, Any], key: str, value: Any) -> None:
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = value


def messages(profile: str, overrides: tuple[str, ...]) -> tuple[str, str]:
    """The message with the overrides given as --set options, and written in the file
    (a bundled profile's path relative to the checkout)."""
    out: list[str] = []
    try:
        load(profile, overrides)
        out.append("")
    except ProfileError as exc:
        out.append(str(exc))
    data, _ = load_raw(profile)
    for text in overrides:
        _set(data, *parse_override(text))
    try:
        build(data, f"{profile}.toml")
        out.append("")
    except ProfileError as exc:
        out.append(str(exc))
    return out[0].replace(f"{ROOT}/", ""), out[1]


def _key(profile: str, overrides: tuple[str, ...]) -> str:
    return " ".join((profile, *overrides))


@pytest.mark.parametrize("case", CASES, ids=[_key(*c) for c in CASES])
def test_a_bad_profile_gives_the_same_one_line_message(case: tuple[str, tuple[str, ...]]) -> None:
    want = json.loads(DATA.read_text())[_key(*case)]
    got = messages(*case)
    assert list(got) == want
    assert all(m and "\n" not in m for m in got)


if __name__ == "__main__":
    DATA.write_text(
        json.dumps({_key(*c): messages(*c) for c in CASES}, indent=1, ensure_ascii=False) + "\n"
    )
