"""What the engine and the targets read of a target's identity: through its typed facts
(the same :class:`tkbench.rundir.records.run.DeviceFacts` the manifest's readers see),
with the results they always had: a resume refused for another serial, a block
device's proof by serial, the one-line description of a target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tkbench.engine.runs import _same_target
from tkbench.engine.targetproof import prove_node
from tkbench.errors import InputError, SafetyError
from tkbench.rundir.records import TargetRecord
from tkbench.targets.base import Target
from tkbench.targets.block import BlockTarget
from tkbench.targets.volume import VolumeTarget

CAP = 1 << 30


def stored(identity: dict[str, Any], **kw: Any) -> TargetRecord:
    return TargetRecord(spec="/dev/x", kind="block", capacity_bytes=CAP, identity=identity, **kw)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"serial": "S1"}, {"serial": "S1"}),
        ({"serial": "S1"}, {"serial": "unknown"}),
        ({"serial": "unknown"}, {"serial": "S2"}),
        ({}, {"serial": "S2"}),
        ({"serial": "S1"}, {}),
        ({"serial": ""}, {"serial": "S2"}),
    ],
)
def test_a_resume_on_the_same_or_an_unknown_serial_goes_on(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    _same_target(stored(old), Target("/dev/x", "/dev/x", CAP, 512, new))


def test_a_resume_on_another_serial_is_refused() -> None:
    with pytest.raises(InputError, match=r"^target /dev/x has serial S2, the run was .* S1$"):
        _same_target(
            stored({"serial": "S1"}), Target("/dev/x", "/dev/x", CAP, 512, {"serial": "S2"})
        )


def test_a_block_device_moved_to_another_path_is_proven_by_its_serial(tmp_path: Path) -> None:
    node = tmp_path / "sdb"
    node.touch()
    record = stored({"serial": "S1"}, resolved=str(tmp_path / "sda"))
    said = prove_node(record, BlockTarget(str(node), str(node), CAP, 512, {"serial": "S1"}))
    assert said == [f"{node} is {node}, the device the run wrote (serial S1)"]
    for other in ({"serial": "S2"}, {"serial": "unknown"}, {}):
        with pytest.raises(SafetyError, match="is not the device this run wrote"):
            prove_node(record, BlockTarget(str(node), str(node), CAP, 512, other))


def test_a_target_describes_itself_by_its_model_and_filesystem() -> None:
    assert Target("t", "/t", CAP, 512, {"model": "M 1"}).describe() == "t ( M 1, 1.00 GiB)"
    assert Target("t", "/t", CAP, 512, {"model": "unknown"}).describe() == "t (, 1.00 GiB)"
    assert Target("t", "/t", CAP, 512, {}).describe() == "t (, 1.00 GiB)"
    volume = VolumeTarget("v", "/v", CAP, 512, {"filesystem": "ext4"}, free=CAP // 2)
    assert volume.describe() == "v (volume, ext4, 512.00 MiB free of 1.00 GiB)"
    assert VolumeTarget("v", "/v", CAP, 512, {}).describe().startswith("v (volume, unknown, ")
