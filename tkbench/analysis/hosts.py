"""Each fio server's share of a test's measurement window (fio's client/server mode).

A round's point holds the numbers of all hosts together and, since per-host results
are kept, each host's (``PointResult.hosts``).  The window means of one host are
formed exactly as those of the whole point (:func:`.window.point_means`), over that
host's part of the window rounds; a host is listed for a point only where it has
results in every window round of that point, so no host's mean covers fewer rounds
than the point's without saying so (``rounds``).  Of several points of one block size
and mix (the stages of a procedure), as for the point's own means, only the one a
tracking variable reads (no ``role``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tkbench.analysis.window import PointMean, point_means
from tkbench.rundir.records import PointResult, Round


@dataclass(frozen=True)
class HostMean:
    """One host's share of one point over the window rounds."""

    label: str  # the point's label, "4k 0/100"
    host: str  # "HOST,PORT" or "sock:PATH" as fio reported it
    mean: PointMean
    share: float  # this host's IOPS / all hosts' IOPS of the point (0..1)

    def to_dict(self) -> dict[str, Any]:
        """For ``tkbench show --json`` (a view, kept by hand: the point mean's figures
        flattened into the host's row)."""
        m = self.mean
        return {
            "label": self.label,
            "bs": m.bs,
            "read_pct": m.read_pct,
            "host": self.host,
            "rounds": m.rounds,
            "iops": m.iops,
            "bw_mbs": m.bw_mbs,
            "lat_mean_ms": m.lat_mean_ms,
            "lat_max_ms": m.lat_max_ms,
            "iops_share": self.share,
        }


def _as_point(point: PointResult, host: int) -> PointResult:
    h = point.hosts[host]
    return dataclasses.replace(
        point,
        error=h.error,
        iops=h.iops,
        bw_bytes=h.bw_bytes,
        lat_mean_ns=h.lat_mean_ns,
        lat_max_ns=h.lat_max_ns,
        read=h.read,
        write=h.write,
        hosts=(),
    )


def host_means(records: Sequence[Round]) -> list[HostMean]:
    """Per point (in the order of the rounds' points) and host (sorted): the
    window means of that host.  Empty when no window round kept per-host results."""
    hosts: dict[tuple[int, int], list[str]] = {}
    labels: dict[tuple[int, int], str] = {}
    for r in records:
        for p in r.points:
            if p.hosts and not p.role:  # the points point_means reads, with hosts kept
                labels.setdefault(p.key, p.label)
                seen = hosts.setdefault(p.key, [])
                seen += [h.host for h in p.hosts if h.host not in seen]
    out: list[HostMean] = []
    for key, names in hosts.items():
        points = [p for r in records for p in r.points if p.key == key and not p.role]
        totals = point_means([Round(round=0, points=tuple(points), tracking={})])[key]
        for name in names:
            mine = []
            for p in points:
                index = next((i for i, h in enumerate(p.hosts) if h.host == name), None)
                if index is not None:
                    mine.append(_as_point(p, index))
            if len(mine) < len(points):
                continue  # not in every window round: no mean comparable with the point's
            mean = point_means([Round(round=0, points=tuple(mine), tracking={})])[key]
            share = mean.iops / totals.iops if totals.iops else 0.0
            out.append(HostMean(label=labels[key], host=name, mean=mean, share=share))
    return out
