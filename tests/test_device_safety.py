"""check_target() and confirm() on real loop devices: every refusal leaves the
device's bytes unchanged."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes import helpers
from fakes.helpers import LoopDevices, sha256_of

from tkbench.device import DeviceIdentity, check_target, confirm, identify, refusal_reasons
from tkbench.errors import InputError, SafetyError


def codes(path: str, **kw: object) -> set[str]:
    return {r.code for r in refusal_reasons(path, **kw)}  # type: ignore[arg-type]


# --------------------------------------------------------------------------- check_target


@pytest.mark.root
def test_blank_loop_device_passes(loops: LoopDevices) -> None:
    dev = loops.create(16)
    assert refusal_reasons(dev) == []
    check_target(dev)  # no exception


@pytest.mark.root
def test_filesystem_signature_refused_unless_force(loops: LoopDevices) -> None:
    dev = loops.create(32)
    loops.mkfs(dev)
    before = sha256_of(dev)
    with pytest.raises(SafetyError) as err:
        check_target(dev)
    msg = str(err.value)
    assert "filesystem signature (ext4)" in msg
    assert "--force overrides this" in msg
    assert "\n" not in msg
    check_target(dev, force=True)  # force overrides the signature check
    assert sha256_of(dev) == before  # the checks only read


@pytest.mark.root
def test_mounted_refused_even_with_force(loops: LoopDevices) -> None:
    dev = loops.create(32)
    loops.mkfs(dev)
    mnt = loops.mount(dev)
    reasons = refusal_reasons(dev)
    assert {"mounted", "signature"} <= {r.code for r in reasons}
    mounted = next(r for r in reasons if r.code == "mounted")
    assert str(mnt) in mounted.message and not mounted.force_overrides
    with pytest.raises(SafetyError, match=f"is mounted at {mnt}") as err:
        check_target(dev, force=True)
    assert "--force overrides" not in str(err.value)


@pytest.mark.root
def test_mounted_partition_refuses_whole_disk(loops: LoopDevices) -> None:
    dev = loops.create(32, partscan=True)
    part = loops.partition(dev)
    loops.mkfs(part)
    mnt = loops.mount(part)
    with pytest.raises(SafetyError) as err:
        check_target(dev, force=True)
    assert f"{os.path.basename(part)} is mounted at {mnt}" in str(err.value)


@pytest.mark.root
def test_partitioned_device_refused_unless_force(loops: LoopDevices) -> None:
    dev = loops.create(32, partscan=True)
    part = loops.partition(dev)
    before = sha256_of(dev)
    reasons = refusal_reasons(dev)
    by_code = {r.code: r for r in reasons}
    assert "partition table (dos)" in by_code["signature"].message
    assert os.path.basename(part) in by_code["partitions"].message
    assert all(r.force_overrides for r in reasons)
    with pytest.raises(SafetyError, match="has partitions"):
        check_target(dev)
    check_target(dev, force=True)
    assert sha256_of(dev) == before


@pytest.mark.root
def test_partition_as_target_needs_force(loops: LoopDevices) -> None:
    dev = loops.create(32, partscan=True)
    part = loops.partition(dev)
    reasons = refusal_reasons(part)
    assert [r.code for r in reasons] == ["partition"]
    assert reasons[0].force_overrides
    check_target(part, force=True)


@pytest.mark.root
def test_swap_refused_even_with_force(loops: LoopDevices) -> None:
    dev = loops.create(32)
    try:
        loops.swapon(dev)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"swapon not possible here: {exc.stderr}")
    assert "swap" in codes(dev)
    with pytest.raises(SafetyError, match="in use as swap"):
        check_target(dev, force=True)


@pytest.mark.root
def test_read_only_device_refused(loops: LoopDevices, tmp_path: Path) -> None:
    img = tmp_path / "ro.img"
    img.write_bytes(b"\0" * (4 << 20))
    dev = helpers.run(["losetup", "--find", "--show", "--read-only", str(img)]).stdout.strip()
    loops.devices.append(dev)
    with pytest.raises(SafetyError, match="read-only"):
        check_target(dev, force=True)


@pytest.mark.root
def test_holders_refused_even_with_force(loops: LoopDevices, tmp_path: Path) -> None:
    # device-mapper is not available here: present the real device through a
    # sysfs copy whose holders/ lists a dm device.
    dev = loops.create(16)
    root = helpers.fake_sysfs_for_real_device(tmp_path / "sys", dev, holders=["dm-7"])
    reasons = refusal_reasons(dev, sysfs_root=root)
    held = [r for r in reasons if r.code == "holders"]
    assert len(held) == 1 and "dm-7" in held[0].message and not held[0].force_overrides
    with pytest.raises(SafetyError, match="held by dm-7"):
        check_target(dev, force=True, sysfs_root=root)
    assert refusal_reasons(dev) == []  # the real sysfs has no holders


def _root_disk() -> str | None:
    out = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE", "--target", "/"], capture_output=True, text=True
    ).stdout.strip()
    src = out.split("[", 1)[0]
    return src if src.startswith("/dev/") and os.path.exists(src) else None


def test_disk_holding_root_filesystem_refused_even_with_force() -> None:
    disk = _root_disk()
    if disk is None:
        pytest.skip("/ is not on a block device here")
    reasons = refusal_reasons(disk)
    system = [r for r in reasons if r.code == "system-disk"]
    assert system, reasons
    assert "holds the running system" in system[0].message and "/" in system[0].message
    with pytest.raises(SafetyError, match="running system"):
        check_target(disk, force=True)


def test_regular_files(tmp_path: Path) -> None:
    new = tmp_path / "new.img"
    check_target(new)  # does not exist yet: nothing to destroy
    plain = tmp_path / "plain.img"
    plain.write_bytes(os.urandom(1 << 16))
    check_target(plain)
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("mkfs.ext4 missing")
    fs = tmp_path / "fs.img"
    with open(fs, "wb") as fh:
        fh.truncate(8 << 20)
    helpers.run(["mkfs.ext4", "-q", "-F", str(fs)])
    before = sha256_of(str(fs))
    with pytest.raises(SafetyError, match="filesystem signature"):
        check_target(fs)
    check_target(fs, force=True)
    assert sha256_of(str(fs)) == before


@pytest.mark.root
def test_backing_file_of_loop_device_refused(loops: LoopDevices, tmp_path: Path) -> None:
    dev = loops.create(16)
    img = tmp_path / "loop0.img"
    with pytest.raises(SafetyError, match=f"backs {dev}"):
        check_target(img, force=True)


def test_not_a_block_device_or_file() -> None:
    with pytest.raises(SafetyError, match="neither a block device nor a regular file"):
        check_target("/dev/null", force=True)


def test_missing_device_path_is_input_error() -> None:
    with pytest.raises(InputError, match="no such device"):
        check_target("/dev/tkbench-does-not-exist")


# --------------------------------------------------------------------------- confirm


def _nvme_identity() -> DeviceIdentity:
    return DeviceIdentity(
        path="/dev/nvme0n1", kernel_name="nvme0n1", is_block_device=True, interface="nvme",
        model="Samsung SSD 980 PRO 1TB", serial="S5GXNF0R912345F", capacity_bytes=960_197_124_096,
    )  # fmt: skip


@pytest.mark.root
def test_unconfirmed_block_device_refused_and_untouched(loops: LoopDevices) -> None:
    dev = loops.create(16)
    ident = identify(dev)
    before = sha256_of(dev)
    with pytest.raises(SafetyError, match="needs --confirm <kernel name>") as err:
        confirm(ident, None, assume_yes=False, is_block_device=True, interactive=False)
    assert "no terminal" in str(err.value)
    with pytest.raises(SafetyError, match="--yes is not enough for a block device"):
        confirm(ident, None, assume_yes=True, is_block_device=True)
    assert sha256_of(dev) == before


@pytest.mark.root
def test_confirm_loop_device_by_kernel_name(loops: LoopDevices) -> None:
    dev = loops.create(16)
    ident = identify(dev)
    name = os.path.basename(dev)
    confirm(ident, name, assume_yes=False, is_block_device=True)
    confirm(ident, f" {name}\n", assume_yes=False, is_block_device=True)  # whitespace ignored
    before = sha256_of(dev)
    with pytest.raises(SafetyError, match="expected its kernel name"):
        confirm(ident, "loop999", assume_yes=False, is_block_device=True)
    with pytest.raises(SafetyError):
        confirm(ident, dev, assume_yes=True, is_block_device=True)  # the path is not the ID
    assert sha256_of(dev) == before


def test_confirm_needs_the_serial_when_there_is_one() -> None:
    ident = _nvme_identity()
    confirm(ident, "S5GXNF0R912345F", assume_yes=False, is_block_device=True)
    with pytest.raises(SafetyError) as err:
        confirm(ident, "nvme0n1", assume_yes=False, is_block_device=True)
    msg = str(err.value)
    assert "expected the serial number shown by `tkbench devices`" in msg
    assert "S5GXNF0R912345F" not in msg  # the expected ID is not echoed


def test_interactive_prompt_shows_drive_and_accepts_typed_serial() -> None:
    ident = _nvme_identity()
    seen: list[str] = []

    def typed(answer: str) -> Callable[[str], str]:
        def prompt(text: str) -> str:
            seen.append(text)
            return answer

        return prompt

    confirm(ident, None, False, True, interactive=True, prompt=typed("S5GXNF0R912345F\n"))
    assert "Samsung SSD 980 PRO 1TB" in seen[0]
    assert "S5GXNF0R912345F" in seen[0]
    assert "960.2 GB" in seen[0]
    with pytest.raises(SafetyError, match="did not match"):
        confirm(ident, None, False, True, interactive=True, prompt=typed("yes"))
    # An explicit --confirm wins over the prompt; the prompt is not shown.
    seen.clear()
    confirm(ident, "S5GXNF0R912345F", False, True, interactive=True, prompt=typed("x"))
    assert seen == []


def test_yes_is_enough_for_files_and_emulators(tmp_path: Path) -> None:
    f = tmp_path / "t.img"
    f.write_bytes(b"x")
    ident = identify(f)
    confirm(ident, None, assume_yes=True, is_block_device=False)
    with pytest.raises(SafetyError, match="without --yes"):
        confirm(ident, None, assume_yes=False, is_block_device=False)
    confirm(ident, None, False, False, interactive=True, prompt=lambda _t: "yes")
    with pytest.raises(SafetyError, match="not confirmed"):
        confirm(ident, None, False, False, interactive=True, prompt=lambda _t: "no")
    # An emulator target is a block device node the caller vouches for:
    confirm(_nvme_identity(), None, assume_yes=True, is_block_device=False)
