"""The page cache at the start of a point (a test's ``cache``; docs/volume.md).

One place says what each state asks of fio, for every point that states one: an
ordinary test's points (the test's ``cache``), a bulk-I/O sweep's (always cold) and
a virtual-file test's (each operation once per state).

=========  ==============================================================================
state      fio
=========  ==============================================================================
``as-is``  nothing: the page cache is not controlled (fio's own default applies; fio
           3.33 drops a file's clean cached pages when it opens it, ``invalidate=1``)
``cold``   ``invalidate=1``: when a job opens its file, after the hand-off from the
           previous point, the pages of its region are dropped from the page cache
           (``posix_fadvise(POSIX_FADV_DONTNEED)``; again at every pass over the file);
           with ``drop_caches`` also root's ``/proc/sys/vm/drop_caches`` (after a
           ``sync``), once per point, before any of its jobs opens the file
``warm``   ``pre_read=1``: every job reads its region of the file into the page cache
           before its runtime clock starts (fio then skips ``invalidate``); buffered I/O
           only, O_DIRECT would bypass the cache
=========  ==============================================================================
"""

from __future__ import annotations

from collections.abc import Iterable

STATES = ("as-is", "cold", "warm")
DROP_CACHES = "/proc/sys/vm/drop_caches"


def fio_options(state: str) -> dict[str, object]:
    """The job options of a point with the page cache ``state`` ("" or "as-is": none)."""
    if state == "cold":
        return {"invalidate": True}
    if state == "warm":
        return {"pre_read": True, "invalidate": False}
    return {}


def describe(state: str, drop_caches: bool = False) -> str:
    """A cache state in words, for the plan and the report."""
    if state == "cold":
        text = "cold: the test file's pages dropped from the page cache when fio opens it"
        if drop_caches:
            text += ", and every page cache of the host dropped before (drop_caches)"
        return text
    if state == "warm":
        return "warm: the test file read into the page cache before the measurement"
    return "as-is: not controlled (fio's defaults)"


def states_of(caches: Iterable[str], direct: bool, unstated: str = "as-is") -> list[str]:
    """The states a stored test's points ran with, in plan order, from their ``cache``
    (``unstated``: the state of a point that states none; a bulk-I/O sweep's points
    ran cold before they said so, tkbench.kinds.sweep); none for a test whose points
    all bypassed the page cache without stating one (direct I/O: the cache was not in
    play)."""
    pts = list(caches)
    if not pts or (direct and unstated == "as-is" and not any(pts)):
        return []
    return list(dict.fromkeys(c or unstated for c in pts))
