"""Back-to-back hand-off between the points of a round (runs inside fio).

fio (3.33, backend.c ``thread_main``) runs a job's ``exec_prerun`` just before
it starts the job's runtime clock, and ``exec_postrun`` only after the job's
I/O has completed.  tkbench uses both:

* every clone of point *i* runs ``: > done.<i>.$$`` as ``exec_postrun``, a shell
  builtin that leaves one marker file per clone once its I/O is over;
* every clone of point *i+1* runs this script as ``exec_prerun``: it waits until
  all clones of point *i* have left their marker, then returns, and fio starts
  the point's I/O at once.

``startdelay`` brings each point's threads up ahead of time, so the wait is
all that separates two points: the next point can never overlap the previous
one, and the idle time is the hand-off alone (a few ms, measured by
benchmarks/round_overhead.py).  If a clone of point *i* dies without its
marker, the wait ends after ``timeout`` seconds and the round fails on the
job's error.

Standard library only; started as ``python -S -I handoff.py ...``.
"""

from __future__ import annotations

import os
import sys
import time

POLL = 0.0005


def count(directory: str, point: int) -> int:
    prefix = f"done.{point}."
    return sum(1 for name in os.listdir(directory) if name.startswith(prefix))


def wait(directory: str, prev_point: int, clones: int, timeout: float) -> bool:
    """Block until ``clones`` markers of ``prev_point`` exist; False on timeout."""
    limit = time.monotonic() + timeout
    while count(directory, prev_point) < clones:
        if time.monotonic() >= limit:
            return False
        time.sleep(POLL)
    return True


def main(argv: list[str]) -> int:
    directory, prev_point, clones, timeout = argv[0], int(argv[1]), int(argv[2]), float(argv[3])
    wait(directory, prev_point, clones, timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
