"""Back-to-back hand-off between the points of a round (runs inside fio).

fio (3.33, backend.c ``thread_main``) runs a job's ``exec_prerun`` just before
it starts the job's runtime clock, and ``exec_postrun`` only after the job's
I/O has completed.  tkbench uses both:

* every clone of point *i* runs ``: > done.<i>.$$`` as ``exec_postrun``, a shell
  builtin that leaves one marker file per clone once its I/O is over;
* every clone of point *i+1* runs this script as ``exec_prerun``: it waits until
  all clones of point *i* have left their marker, then returns, and fio starts
  the point's I/O at once.

The same hand-off joins two rounds: the next round's fio is started while a
round runs, and its first point waits for the markers the current round's last
point leaves in the current round's directory (tkbench.fio.jobfile.Follow).

``startdelay`` brings each point's threads up ahead of time, so the wait is
all that separates two points: the next point can never overlap the previous
one, and the idle time is the hand-off alone (a few ms, measured by
benchmarks/round_overhead.py).  A stalled I/O delays the points after it; if
the markers do not come within ``timeout`` seconds (tkbench.fio.jobfile.STALL_MARGIN
beyond the previous point's runtime: a clone died, or I/O hung), the script exits
non-zero:
fio then skips the point instead of starting it over the previous one, and
tkbench fails the round because the point did no I/O.

The wait blocks on inotify (libc through ctypes) and so costs no CPU while
the previous point runs; busy polling here took ~5 % of the IOPS of a
CPU-bound device on a 2-core machine.  Where inotify is unavailable it polls
every millisecond.

A point that starts with a cold page cache and ``drop_caches`` (tkbench.cache)
passes two more arguments, its hand-off directory and its index: after the wait,
the first of its clones to get there writes ``1`` to ``/proc/sys/vm/drop_caches``
(after a ``sync``, so that the page cache holds nothing dirty) and leaves a marker;
the other clones wait for that marker, so that no clone starts its I/O (and so
fills the cache) before the drop is done.  A failed drop fails the point.

The markers live in a private directory on a local filesystem (:func:`private_dir`),
not in the run directory: on a run directory shared over 9p (a QEMU guest's share; NFS
and CIFS alike) the first round's hand-off waited ten minutes for markers and failed.

Standard library only; started as ``python -S -I handoff.py ...``.
"""

from __future__ import annotations

import ctypes
import os
import select
import sys
import time

POLL = 0.001
DROP_CACHES = "/proc/sys/vm/drop_caches"
IN_CREATE = 0x100
IN_MOVED_TO = 0x80


def count(directory: str, point: int | str) -> int:
    prefix = f"done.{point}."
    return sum(1 for name in os.listdir(directory) if name.startswith(prefix))


def markers_time(directory: str, point: int) -> float | None:
    """When the last clone of ``point`` left its marker (epoch seconds, the markers'
    modification time), or None if there is none: for tkbench, the moment the
    point's I/O was over."""
    prefix = f"done.{point}."
    times = []
    try:
        with os.scandir(directory) as entries:
            times = [e.stat().st_mtime_ns for e in entries if e.name.startswith(prefix)]
    except OSError:
        return None
    return max(times) / 1e9 if times else None


def _inotify(directory: str) -> int | None:
    """An inotify descriptor watching ``directory`` for new files, or None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = int(libc.inotify_init1(os.O_CLOEXEC))
        if fd < 0:
            return None
        if libc.inotify_add_watch(fd, os.fsencode(directory), IN_CREATE | IN_MOVED_TO) < 0:
            os.close(fd)
            return None
        return fd
    except (OSError, AttributeError):
        return None


def wait(directory: str, prev_point: int | str, clones: int, timeout: float) -> bool:
    """Block until ``clones`` markers of ``prev_point`` exist; False on timeout."""
    limit = time.monotonic() + timeout
    fd = _inotify(directory)
    try:
        # the watch is in place before the first count: no marker can slip by
        while count(directory, prev_point) < clones:
            left = limit - time.monotonic()
            if left <= 0:
                return False
            if fd is None:
                time.sleep(min(POLL, left))
                continue
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                os.read(fd, 65536)
        return True
    finally:
        if fd is not None:
            os.close(fd)


def drop_caches(directory: str, point: int, timeout: float) -> str:
    """Drop the host's page cache once for ``point`` however many clones ask; the
    error in words, or "" when it was dropped."""
    marker = f"done.d{point}.0"
    try:
        fd = os.open(os.path.join(directory, f"drop.{point}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:  # another clone drops it: wait until it has
        if not wait(directory, f"d{point}", 1, timeout):
            return f"the page cache was not dropped within {timeout:g} s"
        with open(os.path.join(directory, marker), encoding="utf-8") as fh:
            return fh.read().strip()
    os.close(fd)
    error = ""
    try:
        os.sync()
        with open(DROP_CACHES, "w", encoding="ascii") as fh:
            fh.write("1\n")
    except OSError as exc:
        error = f"cannot write {DROP_CACHES}: {exc.strerror}"
    tmp = os.path.join(directory, f"drop.{point}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(error)
    os.rename(tmp, os.path.join(directory, marker))  # seen whole (IN_MOVED_TO)
    return error


def private_dir(environ: dict[str, str] | None = None) -> str:
    """A new directory for one run's hand-off markers, mode 0700, on a local
    filesystem: ``$XDG_RUNTIME_DIR``, else /dev/shm, else /run, else the temporary
    directory.  Never the run directory: on a shared filesystem (NFS, CIFS, 9p) the
    markers of a point came late or not at all, and the first round waited out the
    whole stall margin (ten minutes) before it failed."""
    import tempfile

    env = os.environ if environ is None else environ
    problems = []
    for base in (env.get("XDG_RUNTIME_DIR"), "/dev/shm", "/run", tempfile.gettempdir()):
        if not base or not os.path.isdir(base):
            continue
        try:
            return tempfile.mkdtemp(prefix="tkbench-handoff-", dir=base)
        except OSError as exc:
            problems.append(f"{base}: {exc.strerror or exc}")
    raise OSError("no local directory for the hand-off: " + "; ".join(problems or ["none"]))


def main(argv: list[str]) -> int:
    directory, prev_point, clones, timeout = argv[0], int(argv[1]), int(argv[2]), float(argv[3])
    if not wait(directory, prev_point, clones, timeout):
        sys.stderr.write(f"tkbench hand-off: point {prev_point} did not finish in {timeout:g} s\n")
        return 1
    if len(argv) > 5:
        error = drop_caches(argv[4], int(argv[5]), timeout)
        if error:
            sys.stderr.write(f"tkbench hand-off: {error}\n")
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))  # a script fio runs, not library code
