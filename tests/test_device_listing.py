"""list_devices() / format_devices(): `tkbench devices`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fakes import helpers
from fakes.helpers import FakeTools, LoopDevices

from tkbench.device import format_devices, list_devices
from tkbench.device.listing import candidate_names
from tkbench.device.sysfs import Sysfs


@pytest.mark.root
def test_lists_attached_loop_devices_with_all_reasons(loops: LoopDevices) -> None:
    clean = loops.create(16)
    busy = loops.create(32)
    loops.mkfs(busy)
    mnt = loops.mount(busy)
    rows = {r.identity.path: r for r in list_devices()}
    assert clean in rows and busy in rows
    ok = rows[clean]
    assert ok.status == "ok" and ok.refusals == []
    assert ok.confirm_id == os.path.basename(clean)
    bad = rows[busy]
    assert bad.status == "refused"
    assert {r.code for r in bad.refusals} >= {"mounted", "signature"}  # every reason, not one
    text = format_devices(list(rows.values()))
    header = text.splitlines()[0]
    for col in ("DEVICE", "TYPE", "SIZE", "MODEL", "SERIAL", "CONFIRM WITH", "STATUS"):
        assert col in header
    assert f"is mounted at {mnt}" in text
    assert "holds a filesystem signature (ext4) (--force overrides)" in text
    data = json.loads(json.dumps([r.to_dict() for r in rows.values()]))
    entry = next(d for d in data if d["path"] == busy)
    assert entry["confirm_id"] == os.path.basename(busy)
    assert entry["confirm_kind"] == "kernel name"
    assert entry["status"] == "refused"
    assert any(r["code"] == "mounted" and not r["force_overrides"] for r in entry["refusals"])


@pytest.mark.root
def test_formatted_only_device_needs_force(loops: LoopDevices) -> None:
    dev = loops.create(32)
    loops.mkfs(dev)
    row = next(r for r in list_devices() if r.identity.path == dev)
    assert row.status == "needs --force"


@pytest.mark.root
def test_detached_loop_devices_are_not_listed(loops: LoopDevices) -> None:
    dev = loops.create(8)
    name = os.path.basename(dev)
    assert name in candidate_names(Sysfs())
    helpers.run(["losetup", "-d", dev])
    loops.devices.remove(dev)
    assert name not in candidate_names(Sysfs())


def test_skips_ram_zram_and_partitions() -> None:
    names = candidate_names(Sysfs())
    assert not any(n.startswith(("ram", "zram")) for n in names)
    assert not any(Sysfs().is_partition(n) for n in names)


def test_fake_nvme_listed_with_serial_as_confirm_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = helpers.fake_nvme_sysfs(tmp_path / "sys")
    FakeTools(tmp_path, monkeypatch)
    rows = list_devices(sysfs_root=root, dev_dir=tmp_path / "dev")
    assert [r.identity.kernel_name for r in rows] == ["nvme0n1"]
    row = rows[0]
    assert row.identity.interface == "nvme"
    assert row.confirm_id == "S5GXNF0R912345F"
    text = format_devices(rows)
    assert "Samsung SSD 980 PRO 1TB" in text and "1.0 TB" in text
    # the node does not exist in this fake: that is a reason, not a crash
    assert row.status == "refused"
    assert [r.code for r in row.refusals] == ["no-node"]


def test_format_empty() -> None:
    assert format_devices([]) == "no block devices found"
