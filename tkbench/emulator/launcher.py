"""Start and stop the emulator: nbdkit running the Python plugin on a Unix socket.

:class:`Emulator` wraps the one long-running child of tkbench (short commands go
through :func:`tkbench.proc.run`); :func:`start_emulator` is the helper for tests
and scripts.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any
from urllib.parse import quote

from tkbench import proc
from tkbench.emulator.ssdmodel import EmulatorConfig, format_size
from tkbench.errors import DeviceError, InputError, ToolMissingError

PLUGIN_PATH = Path(__file__).with_name("plugin.py")
INSTALL_HINT = "install Debian packages nbdkit nbdkit-plugin-python"
DEFAULT_READY_TIMEOUT = 20.0
DEFAULT_THREADS = 16


def socket_uri(socket_path: str | os.PathLike[str]) -> str:
    """``nbd+unix:///?socket=PATH`` for an absolute socket path."""
    path = os.path.abspath(os.fspath(socket_path))
    return "nbd+unix:///?socket=" + quote(path, safe="/")


@functools.lru_cache(maxsize=4)
def check_nbdkit(nbdkit: str = "nbdkit") -> str:
    """Path of nbdkit with a working python plugin, or ToolMissingError."""
    path = proc.which(nbdkit)
    if path is None:
        raise ToolMissingError(f"'{nbdkit}' not found on PATH: {INSTALL_HINT}")
    done = proc.run([path, "python", "--dump-plugin"], timeout=30.0, check=False)
    if done.returncode != 0:
        raise ToolMissingError(f"nbdkit's python plugin is not available: {INSTALL_HINT}")
    return path


def nbdkit_argv(
    nbdkit: str,
    socket_path: str,
    cfg: EmulatorConfig,
    *,
    pidfile: str,
    stats_file: str | None = None,
    threads: int = DEFAULT_THREADS,
    verbose: bool = False,
) -> list[str]:
    """The nbdkit command line serving ``cfg`` on ``socket_path`` (foreground)."""
    argv = [
        nbdkit,
        "--foreground",
        "--exit-with-parent",
        "--unix",
        socket_path,
        "--pidfile",
        pidfile,
        "--threads",
        str(threads),
    ]
    if verbose:
        argv.append("--verbose")
    argv += ["python", str(PLUGIN_PATH), f"capacity={cfg.capacity}"]
    argv += [f"{k}={v}" for k, v in cfg.to_strings().items() if k != "capacity"]
    if stats_file:
        argv.append(f"stats_file={stats_file}")
    if verbose:
        argv.append("tracebacks=1")
    return argv


def memory_needed(cfg: EmulatorConfig) -> tuple[int, int]:
    """(bytes the model's page maps take, bytes the data can grow to): the maps hold
    4 bytes per logical and per physical 4 KiB page; kept data grows up to the
    capacity as it is written (a purge hands it back)."""
    pages = cfg.capacity // 4096
    maps = 4 * pages + 4 * int(pages * (1 + cfg.over_provisioning))
    return maps, cfg.capacity if cfg.store_data else 0


def available_memory(meminfo: str = "/proc/meminfo") -> int | None:
    """MemAvailable in bytes, or None where the kernel does not say."""
    try:
        with open(meminfo, encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_memory(cfg: EmulatorConfig, available: int | None = None) -> None:
    """Refuse an emulated drive this machine cannot hold, before nbdkit starts: the
    model would be killed by the kernel halfway through a run instead."""
    free = available if available is not None else available_memory()
    if free is None:
        return
    maps, data = memory_needed(cfg)
    size = format_size(cfg.capacity).replace(" ", "")
    if maps > free // 2:
        raise InputError(
            f"--capacity {size} needs {format_size(maps)} of memory for the emulator's page "
            f"maps; {format_size(free)} is available: choose a smaller capacity"
        )
    if maps + data > free:
        raise InputError(
            f"--capacity {size} keeps up to {format_size(data)} of written data in memory; "
            f"{format_size(free)} is available: pass --no-data or a smaller capacity"
        )


# sun_path holds 108 bytes on Linux, the last one a NUL
MAX_SOCKET_PATH = 107


def _bound(socket_path: str) -> bool:
    """Whether a live process holds a Unix socket bound to ``socket_path``, listening
    or not yet (``/proc/net/unix`` lists every bound socket by path)."""
    want = os.path.abspath(socket_path)
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="surrogateescape") as fh:
            next(fh, None)
            return any(
                len(parts := line.split(None, 7)) == 8 and parts[7].rstrip("\n") == want
                for line in fh
            )
    except OSError:
        return False


def prepare_socket(socket_path: str) -> None:
    """Refuse a path in use; remove a stale socket left by a killed server."""
    if len(os.fsencode(os.path.abspath(socket_path))) > MAX_SOCKET_PATH:
        raise InputError(
            f"socket path {socket_path} is too long for a Unix socket "
            f"(at most {MAX_SOCKET_PATH} bytes); choose a shorter one"
        )
    try:
        st = os.stat(socket_path)
    except FileNotFoundError:
        parent = os.path.dirname(socket_path) or "."
        if not os.path.isdir(parent):
            raise InputError(f"socket directory {parent} does not exist") from None
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise InputError(f"{socket_path} exists and is not a socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(socket_path)
        except ConnectionRefusedError:
            if _bound(socket_path):
                raise InputError(
                    f"socket {socket_path} is bound by a running program; choose another path"
                ) from None
            os.unlink(socket_path)  # stale: nobody listens, nobody holds it
            return
        except OSError as exc:
            raise InputError(f"socket {socket_path}: {exc.strerror}; choose another path") from None
    raise InputError(f"socket {socket_path} is in use by a running server")


class Emulator:
    """A running nbdkit serving the emulated SSD; stop() or use as a context manager."""

    def __init__(
        self,
        socket_path: str | os.PathLike[str],
        cfg: EmulatorConfig,
        *,
        threads: int = DEFAULT_THREADS,
        verbose: bool = False,
        capture_log: bool = True,
        nbdkit: str = "nbdkit",
    ) -> None:
        self.socket_path = os.path.abspath(os.fspath(socket_path))
        self.cfg = cfg
        self.uri = socket_uri(self.socket_path)
        self._threads = threads
        self._verbose = verbose
        self._capture = capture_log
        self._nbdkit = nbdkit
        self._tmpdir: str | None = None
        self._log: IO[bytes] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._stats: dict[str, Any] | None = None
        self._log_text = ""
        self._socket_id: tuple[int, int] | None = None  # the socket our nbdkit made

    # -- lifecycle ------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc else None

    def start(self, timeout: float = DEFAULT_READY_TIMEOUT) -> Emulator:
        """Start nbdkit and return once the socket accepts connections."""
        if self._proc is not None:
            raise RuntimeError("emulator already started")
        nbdkit = check_nbdkit(self._nbdkit)
        check_memory(self.cfg)
        prepare_socket(self.socket_path)
        self._tmpdir = tempfile.mkdtemp(prefix="tkbench-emu-")
        pidfile = os.path.join(self._tmpdir, "nbdkit.pid")
        argv = nbdkit_argv(
            nbdkit,
            self.socket_path,
            self.cfg,
            pidfile=pidfile,
            stats_file=os.path.join(self._tmpdir, "stats.json"),
            threads=self._threads,
            verbose=self._verbose,
        )
        if self._capture:
            self._log = open(os.path.join(self._tmpdir, "nbdkit.log"), "w+b")  # noqa: SIM115
        try:
            # The one long-running child of tkbench: not via proc.run, which
            # waits for completion.  Own session: a terminal's Ctrl-C reaches
            # us, and we stop nbdkit in order; --exit-with-parent covers a
            # parent killed without cleanup.
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log if self._log else None,
                stderr=self._log if self._log else None,
                start_new_session=True,
            )
        except OSError as exc:
            self._cleanup_files()
            raise ToolMissingError(f"cannot start nbdkit ({exc}): {INSTALL_HINT}") from None
        try:
            self._wait_ready(pidfile, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, pidfile: str, timeout: float) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while True:
            rc = self._proc.poll()
            if rc is not None:
                lines = self.log_tail().strip().splitlines()
                msg = f"nbdkit exited with code {rc} before serving {self.socket_path}"
                if lines:
                    msg += ": " + lines[-1][:300]
                raise DeviceError(msg)
            with contextlib.suppress(OSError):
                if os.path.getsize(pidfile) > 0:
                    st = os.stat(self.socket_path)
                    self._socket_id = (st.st_dev, st.st_ino)
                    return
            if time.monotonic() > deadline:
                lines = self.log_tail().strip().splitlines()
                raise DeviceError(
                    f"nbdkit did not serve {self.socket_path} within {timeout:g} s"
                    + (f": {lines[-1][:300]}" if lines else "")
                )
            time.sleep(0.02)

    def wait(self, timeout: float | None = None) -> int:
        """Wait for nbdkit to exit (e.g. after an injected disconnect); its exit code."""
        assert self._proc is not None
        return self._proc.wait(timeout)

    def terminate(self) -> None:
        """Ask nbdkit to shut down (SIGTERM) without waiting."""
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 10.0) -> int | None:
        """Stop nbdkit (SIGTERM, then SIGKILL), remove the socket; idempotent."""
        rc: int | None = None
        if self._proc is not None:
            self.terminate()
            try:
                rc = self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self._proc.pid, signal.SIGKILL)
                rc = self._proc.wait()
        self._collect_stats()
        self._remove_own_socket()
        self._cleanup_files()
        return rc

    def _remove_own_socket(self) -> None:
        """Remove the socket only if it is the one this emulator's nbdkit created: never
        a live socket of another server that made start() refuse the path."""
        if self._socket_id is None:
            return
        with contextlib.suppress(FileNotFoundError):
            st = os.stat(self.socket_path)
            if stat.S_ISSOCK(st.st_mode) and (st.st_dev, st.st_ino) == self._socket_id:
                os.unlink(self.socket_path)
        self._socket_id = None

    def _collect_stats(self) -> None:
        if self._tmpdir is None or self._stats is not None:
            return
        path = os.path.join(self._tmpdir, "stats.json")
        with contextlib.suppress(OSError, ValueError), open(path, encoding="utf-8") as fh:
            self._stats = json.load(fh)

    def _cleanup_files(self) -> None:
        if self._log is not None:
            self._log_text = self.log_tail(limit=1 << 20)
            self._log.close()
            self._log = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    # -- diagnostics ----------------------------------------------------------

    def log_tail(self, limit: int = 4000) -> str:
        """The last ``limit`` characters nbdkit wrote (when the log is captured)."""
        if self._log is None:
            return self._log_text[-limit:]
        self._log.flush()
        self._log.seek(0, os.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(0, size - limit))
        data = self._log.read()
        return data.decode("utf-8", "replace")

    def stats(self) -> dict[str, Any] | None:
        """The model's counters (write amplification etc.), available after stop()."""
        return self._stats

    def __enter__(self) -> Emulator:
        if self._proc is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_emulator(
    socket_path: str | os.PathLike[str],
    capacity: int | str = "256M",
    seed: int = 0,
    *,
    threads: int = DEFAULT_THREADS,
    verbose: bool = False,
    timeout: float = DEFAULT_READY_TIMEOUT,
    **model: Any,
) -> Emulator:
    """Start the emulator and return once it serves ``socket_path``.

    ``model`` takes any :class:`EmulatorConfig` field (``over_provisioning=0.2``,
    ``error_after=1.5``, ``error_range="16M:1M"`` ...), typed or as strings.
    Raises InputError for bad parameters, ToolMissingError when nbdkit or its
    python plugin is missing, DeviceError when nbdkit fails to start.
    """
    try:
        cfg = EmulatorConfig.create(capacity=capacity, seed=seed, **model)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return Emulator(socket_path, cfg, threads=threads, verbose=verbose).start(timeout)
