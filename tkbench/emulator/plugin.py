"""nbdkit Python plugin: an emulated SSD (run via ``python -m tkbench.emulator``).

Runs inside nbdkit's embedded interpreter (Debian: /usr/bin/python3), so only
the standard library and the sibling module ``ssdmodel`` are imported.  All
parameters arrive as nbdkit ``key=value`` arguments; see docs/emulator.md::

    nbdkit -f -U /tmp/ssd.sock python tkbench/emulator/plugin.py capacity=256M seed=1

Every request takes the model lock just long enough to update the flash model
and compute its completion time, copies its data, then sleeps until that time
(sleeping releases the GIL, so requests overlap as on a real device).
"""

from __future__ import annotations

import builtins
import errno
import json
import os
import sys
import threading
import time

import nbdkit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ssdmodel

API_VERSION = 2

_settings: dict[str, str] = {}
_settings_plugin: dict[str, str] = {"tracebacks": "0"}
_stats_file = ""
_cfg: ssdmodel.EmulatorConfig | None = None
_model: ssdmodel.SsdModel | None = None
_faults: ssdmodel.FaultInjector | None = None
_store: ssdmodel.DataStore | None = None
_lock = threading.Lock()
_clock = time.monotonic
_sleep = time.sleep

# Sleeps wake up late (timer slack, scheduling).  Each nbdkit thread asks for
# a 1 ns timer slack once, and _wait() subtracts a running average of the
# remaining lateness, so requests complete at the modelled time on average.
_PR_SET_TIMERSLACK = 29
_thread_state = threading.local()
_late = 0.0
try:
    import ctypes

    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (ImportError, OSError, AttributeError):  # pragma: no cover - exotic platforms
    _prctl = None


EMULATOR_DESCRIPTION = "tkbench SSD emulator"


def config(key: str, value: str) -> None:
    global _stats_file
    if key == "stats_file":  # written at exit: the model's counters as JSON
        _stats_file = value
    elif key == "tracebacks":  # 1: full Python tracebacks in nbdkit's error messages
        _settings_plugin["tracebacks"] = value
    else:
        _settings[key] = value


def config_complete() -> None:
    global _cfg
    if _settings_plugin["tracebacks"] not in ("1", "yes", "true", "on"):
        # nbdkit logs every exception with its traceback; an injected I/O
        # error is expected, so log it as one line ("OSError: [Errno 5] ...").
        sys.tracebacklimit = 0
    try:
        _cfg = ssdmodel.EmulatorConfig.from_strings(_settings)
    except ValueError as exc:
        raise RuntimeError(f"tkbench emulator: {exc}") from None


def thread_model() -> int:
    return int(nbdkit.THREAD_MODEL_PARALLEL)


def get_ready() -> None:
    global _model, _faults, _store
    assert _cfg is not None
    _model = ssdmodel.SsdModel(_cfg)
    _faults = ssdmodel.FaultInjector(_cfg)
    _store = ssdmodel.DataStore(_cfg.capacity, enabled=_cfg.store_data)
    nbdkit.debug(
        f"tkbench emulator: {ssdmodel.format_size(_cfg.capacity)}, "
        f"{_model.n_blocks} blocks of {_cfg.block_pages} pages "
        f"({_model.spare_blocks} spare), {_cfg.describe()}"
    )


def default_export(readonly: bool, is_tls: bool) -> str:
    """A client asking for the default export ("") gets the drive's own name."""
    assert _cfg is not None
    return _cfg.export_name()


def list_exports(readonly: bool, is_tls: bool) -> list[str]:
    assert _cfg is not None
    return [_cfg.export_name()]


def export_description(h: object) -> str:
    """Sent to clients that ask (NBD_INFO_DESCRIPTION): tkbench records it as the drive."""
    assert _cfg is not None
    return f"{EMULATOR_DESCRIPTION}: {ssdmodel.format_size(_cfg.capacity)}, {_cfg.describe()}"


def _disconnect() -> None:
    nbdkit.debug("tkbench emulator: injected disconnect, shutting down")
    sys.stderr.write("tkbench emulator: injected disconnect: shutting the server down\n")
    sys.stderr.flush()
    nbdkit.shutdown()


def open(readonly: bool) -> dict[str, int]:
    assert _faults is not None and _cfg is not None
    asked = nbdkit.export_name()
    if asked not in ("", _cfg.export_name()):
        # the name says which drive this is: a client naming another drive must not
        # write this one (and record it under the other's name)
        nbdkit.set_error(errno.ENOENT)
        raise OSError(errno.ENOENT, f"no export {asked!r}: this is {_cfg.export_name()!r}")
    with _lock:
        first = _faults.arm(_clock())
    if first and _cfg.disconnect_after is not None:
        timer = threading.Timer(_cfg.disconnect_after, _disconnect)
        timer.daemon = True
        timer.start()
    return {}


def cleanup() -> None:
    if _model is None:
        return
    stats = _model.stats()
    if _faults is not None:
        stats["injected_errors"] = _faults.errors
        stats["injected_spikes"] = _faults.spikes
    nbdkit.debug("tkbench emulator: " + json.dumps(stats, sort_keys=True))
    if _stats_file:
        tmp = _stats_file + ".tmp"
        with builtins.open(tmp, "w", encoding="utf-8") as fh:
            json.dump(stats, fh, indent=1, sort_keys=True)
        os.replace(tmp, _stats_file)
    if _store is not None:
        _store.close()


def get_size(h: object) -> int:
    assert _cfg is not None
    return int(_cfg.capacity)


def block_size(h: object) -> tuple[int, int, int]:
    return (512, ssdmodel.PAGE, 32 * ssdmodel.MIB)


def is_rotational(h: object) -> bool:
    return False


def can_multi_conn(h: object) -> bool:
    return True


def can_write(h: object) -> bool:
    return True


def can_flush(h: object) -> bool:
    return True


def can_trim(h: object) -> bool:
    return True


def can_zero(h: object) -> bool:
    return True


def can_fua(h: object) -> int:
    return int(nbdkit.FUA_NATIVE)


def _fail(reason: str) -> None:
    nbdkit.set_error(errno.EIO)
    raise OSError(errno.EIO, reason)


def _wait(done: float) -> None:
    global _late
    if not getattr(_thread_state, "tuned", False):
        _thread_state.tuned = True
        if _prctl is not None:
            _prctl(_PR_SET_TIMERSLACK, 1, 0, 0, 0)
    now = _clock()
    delay = done - now - _late
    if delay > 0.0:
        _sleep(delay)
        overshoot = _clock() - now - delay
        _late += 0.02 * (min(overshoot, 0.002) - _late)


def _stall(now: float) -> None:
    assert _faults is not None and _model is not None
    until = _faults.stall(now)
    if until is not None:
        _model.stall_until(until)


def pread(h: object, buf: bytearray, offset: int, flags: int) -> None:
    assert _model is not None and _faults is not None and _store is not None
    n = len(buf)
    with _lock:
        now = _clock()
        reason = _faults.error(offset, n, now)
        if reason is None:
            _stall(now)
            done = _model.read(offset, n, now)
    if reason is not None:
        _fail(reason)
    _store.read(buf, offset)
    _wait(done)


def pwrite(h: object, buf: bytes, offset: int, flags: int) -> None:
    assert _model is not None and _faults is not None and _store is not None
    n = len(buf)
    with _lock:
        now = _clock()
        reason = _faults.error(offset, n, now)
        if reason is None:
            _stall(now)
            done = _model.write(offset, n, now)
            _store.write(buf, offset)
    if reason is not None:
        _fail(reason)
    _wait(done)


def trim(h: object, count: int, offset: int, flags: int) -> None:
    assert _model is not None and _store is not None
    with _lock:
        now = _clock()
        _stall(now)
        done = _model.trim(offset, count, now)
        _store.zero(offset, count)
    _wait(done)


def zero(h: object, count: int, offset: int, flags: int) -> None:
    assert _model is not None and _store is not None
    with _lock:
        now = _clock()
        _stall(now)
        if flags & nbdkit.FLAG_MAY_TRIM:
            done = _model.trim(offset, count, now)
        else:
            done = _model.write(offset, count, now)
        _store.zero(offset, count)
    _wait(done)


def flush(h: object, flags: int) -> None:
    assert _model is not None
    with _lock:
        done = _model.flush(_clock())
    _wait(done)
