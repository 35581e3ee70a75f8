"""A QEMU guest with real storage controllers, for the ``vm`` tests.

One guest boot serves every ``vm`` test of a pytest worker (:class:`SharedGuest`: the
first test that asks boots it with every disk kind of DISKS, and tests/conftest.py
powers it off after the worker's last ``vm`` test, which run one after another in one
worker).  virtme-ng (``vng``) boots Debian's own
kernel (``/boot/vmlinuz-*``, package linux-image-amd64) over this host's root
filesystem, read-only, with software emulation (TCG: nested KVM hangs here).  QEMU
adds one small sparse raw image per device kind, each behind its own controller
and with its own serial:

========  =========================================  ===================
kind      controller                                 in the guest
========  =========================================  ===================
nvme      QEMU NVMe controller                       /dev/nvme0n1
sata      AHCI + ide-hd                              /dev/sd? (ata)
vscsi     virtio-scsi + scsi-hd                      /dev/sd? (virtio)
megasas   LSI MegaRAID SAS HBA + scsi-hd             /dev/sd? (megasas)
vblk      virtio-blk                                 /dev/vd?
========  =========================================  ===================

Python is slow to start in the guest: every file it opens crosses the 9p root
filesystem under TCG (``python -c pass`` ~10 s, ``import tkbench.cli`` ~30 s).  So the
Python trees (the standard library, the virtualenv, this checkout's tkbench) go to the
guest as one uncompressed squashfs image on a virtio-blk disk (serial TOOLS_SERIAL,
built in a few seconds), bind-mounted over their own paths, and the guest runs this
file as its agent (``python tests/_vm.py agent SHARE``): it imports tkbench once, then
polls the shared directory ``SHARE`` (``vng --rwdir``, 9p) for command files.
matplotlib and WeasyPrint are not loaded (~80 s more): runs in the guest pass
``--no-report`` and their report is written on the host from the shared run
directory.  A tkbench command
runs in a forked child of the agent (``tkbench.cli.main``), a shell command through
bash; each in its own session, so a test can ``kill -9`` the whole of it.  The
agent writes each command's argv, exit code, stdout and stderr back as JSON.

Every wait is bounded: a guest that does not boot, a command that does not finish
or an agent that dies fails the test with the end of the guest's console log;
pytest never hangs.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
IMAGE_SIZE = 64 * 1024 * 1024
BOOT_TIMEOUT = 900.0  # a bound against a hung guest, not a timing: ~60 s on a quiet
# 2-core machine, several minutes beside make test's other workers (TCG emulation)
POLL = 0.05
TOOLS_SERIAL = "TKVMTOOLS"
MARGIN = 30.0  # beyond a command's own timeout, for the agent to report it


@dataclass(frozen=True)
class Disk:
    """One device kind: its image, its controller and the serial it reports."""

    kind: str
    serial: str

    def qemu_opts(self, image: Path) -> list[str]:
        drive = f"file={image},if=none,id=d{self.kind},format=raw,cache=writeback"
        dev = f"d{self.kind}"
        per_kind = {
            "nvme": [f"-device nvme,serial={self.serial},drive={dev}"],
            "sata": [
                "-device ahci,id=ahci",
                f"-device ide-hd,bus=ahci.0,drive={dev},serial={self.serial}",
            ],
            "vscsi": [
                "-device virtio-scsi-pci,id=vscsi",
                f"-device scsi-hd,bus=vscsi.0,drive={dev},serial={self.serial}",
            ],
            "megasas": [
                "-device megasas,id=mega",
                f"-device scsi-hd,bus=mega.0,drive={dev},serial={self.serial}",
            ],
            "vblk": [f"-device virtio-blk-pci,drive={dev},serial={self.serial}"],
        }[self.kind]
        return [f"-drive {drive}", *per_kind]


DISKS = (
    Disk("nvme", "TKNVME0001"),
    Disk("sata", "TKSATA0001"),
    Disk("vscsi", "TKVSCSI001"),
    Disk("megasas", "TKMEGA0001"),
    Disk("vblk", "TKVBLK0001"),
)


class GuestError(AssertionError):
    """The guest failed (did not boot, died, a command never came back): a test
    failure carrying the end of the console log."""


@dataclass
class Result:
    argv: list[str]
    returncode: int | None  # None: timed out (the agent killed it)
    stdout: str
    stderr: str
    seconds: float

    def __str__(self) -> str:
        return (
            f"{shlex.join(self.argv)} -> {self.returncode} in {self.seconds:.1f} s\n"
            f"--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"
        )


def kernel() -> str:
    """Debian's kernel image (linux-image-amd64): the newest /boot/vmlinuz-*."""
    found = sorted(glob.glob("/boot/vmlinuz-*"), key=os.path.getmtime)
    if not found:
        raise GuestError("no /boot/vmlinuz-*: install linux-image-amd64 (make deps)")
    return found[-1]


def vng() -> str:
    """virtme-ng's launcher, from the virtualenv pytest runs in, else PATH."""
    here = Path(sys.executable).parent / "vng"
    if here.exists():
        return str(here)
    found = shutil.which("vng")
    if found is None:
        raise GuestError("vng not found: pip install virtme-ng (make deps installs it)")
    return found


class Guest:
    """A booted guest and its agent; see the module docstring."""

    def __init__(
        self,
        workdir: Path,
        disks: tuple[Disk, ...] = DISKS,
        memory: str = "1G",
        boot_timeout: float = BOOT_TIMEOUT,
    ):
        self.workdir = workdir
        self.boot_timeout = boot_timeout
        self.disks = disks
        self.memory = memory
        self.share = workdir / "share"
        self.console = workdir / "console.log"
        self.images = {d.kind: workdir / f"{d.kind}.img" for d in disks}
        self._proc: subprocess.Popen[bytes] | None = None
        self._ids = itertools.count(1)
        self.boot_seconds = 0.0

    # ----------------------------------------------------------------- lifetime
    def start(self) -> None:
        for kind in ("cmd", "res"):
            (self.share / kind).mkdir(parents=True, exist_ok=True)
        for image in self.images.values():
            with open(image, "wb") as fh:
                fh.truncate(IMAGE_SIZE)  # sparse
        qemu = " ".join(o for d in self.disks for o in d.qemu_opts(self.images[d.kind]))
        qemu += (
            f" -drive file={self._tools_image()},if=none,id=tools,format=raw,readonly=on"
            f" -device virtio-blk-pci,drive=tools,serial={TOOLS_SERIAL}"
        )
        launcher = self.share / "agent.sh"
        launcher.write_text(self._launcher())
        argv = [
            vng(),
            "--run",
            kernel(),
            "--disable-kvm",
            "--cpus",
            "2",
            "--memory",
            self.memory,
            "--rwdir",
            str(self.share),
            f"--qemu-opts={qemu}",  # one word: its value starts with a dash
            "--exec",
            f"bash {launcher}",
        ]
        env = dict(os.environ)
        env["PATH"] = f"{Path(argv[0]).parent}:{env.get('PATH', '/usr/bin:/bin')}"
        started = time.monotonic()
        with open(self.console, "wb") as log:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.workdir,
                start_new_session=True,
            )
        self._wait_for(self.share / "ready", self.boot_timeout, "the guest's agent to start")
        self.boot_seconds = time.monotonic() - started

    @staticmethod
    def _trees() -> dict[str, Path]:
        """What the tools image holds: its top-level name -> the path it is mounted on
        (mksquashfs names each source directory by its last component)."""
        stdlib = Path(os.__file__).resolve().parent
        trees = [stdlib, Path(sys.prefix).resolve(), ROOT / "tkbench"]
        return {p.name: p for p in trees}

    def _tools_image(self) -> Path:
        image = self.workdir / "tools.sqfs"
        argv = [
            "mksquashfs", *(str(p) for p in self._trees().values()), str(image),
            "-noI", "-noD", "-noF", "-noX", "-no-progress", "-quiet", "-noappend",
            "-wildcards", "-e", "python3.11/site-packages", "python3.11/test",
        ]  # fmt: skip
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise GuestError(f"mksquashfs failed: {done.stderr.strip()[-500:]}")
        return image

    def _launcher(self) -> str:
        """The guest's first command: mount the tools image over the trees it copies
        (found by its serial), then become the agent."""
        binds = "\n".join(
            f"mount --bind /run/tkbench-vm/{n} {shlex.quote(str(p))} || exit 1"
            for n, p in self._trees().items()
        )
        agent = shlex.join(
            [sys.executable, str(Path(__file__).resolve()), "agent", str(self.share)]
        )
        return f"""set -x
link=/dev/disk/by-id/virtio-{TOOLS_SERIAL}
for i in $(seq 100); do [ -b "$link" ] && break; sleep 0.1; done
tools=$(readlink -f "$link")
mkdir -p /run/tkbench-vm && mount -t squashfs -o ro "$tools" /run/tkbench-vm || exit 1
{binds}
export PYTHONPATH={shlex.quote(str(ROOT))} TKBENCH_HISTORY=/tmp/tkbench-vm-history.sqlite
exec {agent}
"""

    def stop(self) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            with contextlib.suppress(OSError):
                self._send({"op": "poweroff"})
            try:
                self._proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait(timeout=30)
        self._proc = None

    def console_tail(self, chars: int = 4000) -> str:
        try:
            return self.console.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no console log)"

    def _wait_for(self, path: Path, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise GuestError(
                    f"the guest exited ({self._proc.returncode}) while waiting for {what};"
                    f" console:\n{self.console_tail()}"
                )
            if time.monotonic() > deadline:
                raise GuestError(
                    f"no answer within {timeout:g} s while waiting for {what};"
                    f" console:\n{self.console_tail()}"
                )
            time.sleep(POLL)

    # ----------------------------------------------------------------- commands
    def _send(self, cmd: dict[str, Any]) -> str:
        ident = f"{next(self._ids):05d}"
        tmp = self.share / "cmd" / f".{ident}.tmp"
        tmp.write_text(json.dumps({**cmd, "id": ident}))
        tmp.rename(self.share / "cmd" / f"{ident}.json")
        return ident

    def _call(self, cmd: dict[str, Any], timeout: float) -> dict[str, Any]:
        ident = self._send({**cmd, "timeout": timeout})
        res = self.share / "res" / f"{ident}.json"
        self._wait_for(res, timeout + MARGIN, f"{cmd.get('argv') or cmd.get('op')}")
        data: dict[str, Any] = json.loads(res.read_text())
        if "error" in data:
            raise GuestError(f"the agent failed: {data['error']}")
        return data

    @staticmethod
    def _result(data: dict[str, Any]) -> Result:
        return Result(
            list(data["argv"]),
            data["returncode"],
            data["stdout"],
            data["stderr"],
            float(data["seconds"]),
        )

    def tkbench(self, *argv: str, timeout: float = 120.0, cwd: str = "/tmp") -> Result:
        """``tkbench ARGV`` in the guest (a fork of the agent, which has tkbench loaded)."""
        return self._result(self._call({"op": "run", "tkbench": list(argv), "cwd": cwd}, timeout))

    def sh(self, script: str, timeout: float = 60.0) -> Result:
        """A bash script in the guest."""
        return self._result(self._call({"op": "run", "sh": script, "cwd": "/tmp"}, timeout))

    def spawn_tkbench(self, *argv: str, cwd: str = "/tmp") -> int:
        """Start ``tkbench ARGV`` in the guest and return at once: its process group id."""
        data = self._call({"op": "spawn", "tkbench": list(argv), "cwd": cwd}, 30.0)
        return int(data["pid"])

    def wait(self, pid: int, timeout: float = 120.0) -> Result:
        """The end of a spawned command (killed when ``timeout`` passes first)."""
        return self._result(self._call({"op": "wait", "pid": pid}, timeout))

    def kill(self, pid: int, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the whole process group of a spawned command."""
        self._call({"op": "kill", "pid": pid, "signal": int(sig)}, 30.0)


# =========================================================================== agent
# Runs inside the guest, started by Guest.start.  Standard library and tkbench only.


class SharedGuest:
    """One guest for the ``vm`` tests of a session (the ``vm_guests`` fixture): booted
    when a test first asks for it (:meth:`get`), powered off by :meth:`stop`; a test
    that asks after that boots a new one."""

    def __init__(self) -> None:
        self.guest: Guest | None = None

    def get(self, workdir: Callable[[], Path]) -> Guest:
        """The running guest, or one booted now in ``workdir()``."""
        if self.guest is None:
            guest = Guest(workdir())
            try:
                guest.start()
            except BaseException:
                guest.stop()
                raise
            self.guest = guest
        return self.guest

    def stop(self) -> None:
        if self.guest is not None:
            self.guest.stop()
            self.guest = None


def _preload() -> None:
    """Import once what every tkbench command would import again over 9p."""
    import importlib

    for name in ("tkbench.cli", "tkbench.engine.runs", "tkbench.engine", "tkbench.device.purge"):
        importlib.import_module(name)


class _Child:
    def __init__(self, argv: list[str], pid: int, out: str, err: str) -> None:
        self.argv, self.pid, self.out, self.err = argv, pid, out, err
        self.started = time.monotonic()
        self.returncode: int | None = None
        self.done = False

    def poll(self) -> bool:
        if not self.done:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == 0:
                return False
            self.returncode = os.waitstatus_to_exitcode(status)
            self.done = True
        return True

    def report(self) -> dict[str, Any]:
        def read(p: str) -> str:
            try:
                with open(p, encoding="utf-8", errors="replace") as fh:
                    return fh.read()
            except OSError:
                return ""

        return {
            "argv": self.argv,
            "returncode": self.returncode,
            "stdout": read(self.out),
            "stderr": read(self.err),
            "seconds": time.monotonic() - self.started,
        }


def _start(cmd: dict[str, Any], scratch: str) -> _Child:
    out = os.path.join(scratch, f"{cmd['id']}.out")
    err = os.path.join(scratch, f"{cmd['id']}.err")
    argv = ["bash", "-c", cmd["sh"]] if "sh" in cmd else ["tkbench", *cmd["tkbench"]]
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: its own session, so that a kill reaches all it started
        code = 99
        try:
            os.setsid()
            os.chdir(cmd.get("cwd") or "/tmp")
            fd0 = os.open(os.devnull, os.O_RDONLY)
            fd1 = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            fd2 = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            for src, dst in ((fd0, 0), (fd1, 1), (fd2, 2)):
                os.dup2(src, dst)
            if "sh" in cmd:
                os.execvp("bash", argv)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            sys.argv = argv
            import faulthandler

            # a command that times out is sent SIGUSR1 first: where it hung, on stderr
            faulthandler.register(signal.SIGUSR1, all_threads=True)
            from tkbench import cli

            code = cli.main(cmd["tkbench"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)
    return _Child(argv, pid, out, err)


def _finish(child: _Child, timeout: float) -> dict[str, Any]:
    deadline = child.started + timeout
    while not child.poll():
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGUSR1)  # tkbench: its traceback (faulthandler)
                time.sleep(2)
                os.killpg(child.pid, signal.SIGKILL)
            os.waitpid(child.pid, 0)
            child.done = True
            child.returncode = None
            break
        time.sleep(POLL)
    return child.report()


def agent(share: str) -> None:
    scratch = "/tmp/tkbench-vm-agent"
    os.makedirs(scratch, exist_ok=True)
    started = time.monotonic()
    _preload()
    with open(os.path.join(share, "ready"), "w") as fh:
        fh.write(f"{time.monotonic() - started:.1f}\n")
    children: dict[int, _Child] = {}
    cmd_dir, res_dir = os.path.join(share, "cmd"), os.path.join(share, "res")
    while True:
        names = sorted(n for n in os.listdir(cmd_dir) if n.endswith(".json"))
        if not names:
            time.sleep(POLL)
            continue
        for name in names:
            path = os.path.join(cmd_dir, name)
            with open(path) as fh:
                cmd = json.load(fh)
            os.unlink(path)
            if cmd["op"] == "poweroff":
                for child in children.values():
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child.pid, signal.SIGKILL)
                return
            try:
                if cmd["op"] == "run":
                    res = _finish(_start(cmd, scratch), float(cmd["timeout"]))
                elif cmd["op"] == "spawn":
                    child = _start(cmd, scratch)
                    children[child.pid] = child
                    res = {"pid": child.pid}
                elif cmd["op"] == "wait":
                    child = children.pop(int(cmd["pid"]))
                    child.started = time.monotonic()
                    res = _finish(child, float(cmd["timeout"]))
                elif cmd["op"] == "kill":
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(int(cmd["pid"]), int(cmd["signal"]))
                    res = {}
                else:
                    res = {"error": f"unknown op {cmd['op']!r}"}
            except Exception as exc:
                res = {"error": f"{type(exc).__name__}: {exc}"}
            tmp = os.path.join(res_dir, f".{cmd['id']}.tmp")
            with open(tmp, "w") as fh:
                json.dump(res, fh)
            os.rename(tmp, os.path.join(res_dir, f"{cmd['id']}.json"))


if __name__ == "__main__":
    if sys.argv[1:2] == ["agent"]:
        agent(sys.argv[2])
