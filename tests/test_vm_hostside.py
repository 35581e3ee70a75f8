"""The host-side halves of what the QEMU guest showed (tests/test_vm_drives.py): the
hand-off's markers in a private local directory, never the run directory; refusals
naming the strongest reason first; udev's short probe not taken for a user."""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path

import pytest

from tests._helpers import TWO_IOPS_ROUNDS, merged
from tests.fakes.fio_runner import parse_jobfile
from tkbench.device import safety
from tkbench.device.safety import Refusal, strongest_first
from tkbench.engine.runs import RunRequest, start
from tkbench.fio.handoff import private_dir

MiB = 1024 * 1024


def test_private_dir_is_0700_in_the_runtime_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = Path(private_dir({"XDG_RUNTIME_DIR": str(tmp_path)}))
    assert d.parent == tmp_path and stat.S_IMODE(d.stat().st_mode) == 0o700
    other = Path(private_dir({}))  # no runtime directory: /dev/shm, /run or /tmp
    try:
        assert other.parent in (Path("/dev/shm"), Path("/run"), Path("/tmp"))
    finally:
        other.rmdir()


@pytest.mark.fio
def test_a_run_keeps_no_hand_off_markers_in_its_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real fio: every hook of every round names the private directory below
    $XDG_RUNTIME_DIR, which the run removes at its end."""
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    req = RunRequest(
        profile="quick",
        target=str(tmp_path / "t.img"),
        size=16 * MiB,
        out=tmp_path / "run",
        overrides=merged(*TWO_IOPS_ROUNDS),
        assume_yes=True,
    )
    out, manifest = start(req)
    assert manifest.status == "complete"
    hooks = []
    for f in sorted((out / "tests/iops/rounds").glob("*.fio")):
        for section in parse_jobfile(f.read_text()).values():
            hooks += [section[k] for k in ("exec_prerun", "exec_postrun") if k in section]
    assert len(hooks) >= 3
    for hook in hooks:
        words = shlex.split(hook.removeprefix(": > "))
        marker_dirs = [w for w in words if w.startswith(str(runtime))]
        assert marker_dirs, hook
        inside = [w for w in words if w.startswith(f"{out}/") and "tkbench-run=" not in w]
        assert not inside, hook
    assert list(runtime.iterdir()) == []  # removed at the end of the run


def test_the_strongest_reason_comes_first() -> None:
    sig = Refusal("signature", "vda holds a filesystem signature (ext4)", force_overrides=True)
    mounted = Refusal("mounted", "vda is mounted at /mnt")
    swap = Refusal("swap", "vda is in use as swap")
    opened = Refusal("open", "/dev/vda is open in sleep (pid 7)")
    assert strongest_first([sig, opened, swap, mounted]) == [mounted, swap, opened, sig]


def test_a_mounted_disk_is_refused_as_mounted_without_offering_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reasons as the guest's kernel gave them for a mounted ext4 disk, in the order
    they were found: the message named the signature and offered --force."""
    found = [
        Refusal("signature", "vda holds a filesystem signature (ext4)", force_overrides=True),
        Refusal("mounted", "vda is mounted at /tmp/mnt"),
    ]
    monkeypatch.setattr(safety, "refusal_reasons", lambda *a, **k: list(found))
    with pytest.raises(safety.SafetyError) as err:
        safety.check_target("/dev/vda")
    assert str(err.value).startswith("refusing to write /dev/vda: vda is mounted at /tmp/mnt")
    assert "--force" not in str(err.value)


def _fake_proc(root: Path, pid: int, comm: str, target: Path) -> Path:
    (root / str(pid) / "fd").mkdir(parents=True)
    (root / str(pid) / "comm").write_text(comm + "\n")
    link = root / str(pid) / "fd" / "3"
    link.symlink_to(target)
    return link


def test_udevs_probe_is_waited_for_and_a_real_user_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """udev's worker holds the file until `udevadm settle` returns (a stand-in for
    udevadm that ends the probe): not a user.  A sleep holding it is one."""
    target = tmp_path / "disk"
    target.write_bytes(b"\0" * 4096)
    proc = tmp_path / "proc"
    probe = _fake_proc(proc, 4242, "(udev-worker)", target)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    udevadm = bin_dir / "udevadm"
    udevadm.write_text(f"#!{sys.executable}\nimport os\nos.unlink({str(probe)!r})\n")
    udevadm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    st = target.stat()
    assert safety._open_elsewhere(str(target), st, proc) == []
    _fake_proc(proc, 4343, "sleep", target)
    (reason,) = safety._open_elsewhere(str(target), st, proc)
    assert reason.message == f"{target} is open in sleep (pid 4343)"
