"""The records a run begins with and keeps of its host and target: the manifest, the
host, the target (with what proves it on a resume), a purge; and whether a run
directory can be resumed."""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import sys
import uuid
from typing import Any

from tkbench import __version__
from tkbench.device.owndata import identify_node
from tkbench.device.purge import PurgeRecord
from tkbench.engine import clock
from tkbench.errors import RunDirError
from tkbench.plan.build import Plan
from tkbench.rundir.records import Host, Manifest, ProfileRef, Purge, TargetRecord
from tkbench.targets.base import Target


def host_info() -> Host:
    uname = platform.uname()
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    os_name = "unknown"
    try:
        with open("/etc/os-release", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    os_name = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    mem = 0
    with contextlib.suppress(OSError, ValueError):
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return Host(
        hostname=socket.gethostname(),
        kernel=uname.release,
        os=os_name,
        machine=uname.machine,
        cpu=cpu,
        cpus=os.cpu_count(),
        memory_bytes=mem,
        python=sys.version.split()[0],
    )


def new_manifest(
    plan: Plan, target: Target, fio_version: str, command_line: list[str], hosts: list[str]
) -> Manifest:
    return Manifest(
        run_id=str(uuid.uuid4()),  # survives copying or moving the run directory
        tkbench_version=__version__,
        fio_version=fio_version,
        host=host_info(),
        fio_servers=tuple(hosts),
        command_line=tuple(command_line),
        profile=ProfileRef(
            name=plan.profile.name, source=plan.profile.source, resolved=plan.profile.resolved
        ),
        target=target_record(target),
        active_bytes=plan.active_bytes,
        tests=tuple(t.name for t in plan.tests),
        plan_notes=tuple(plan.notes),
        status="running",
        started=clock.time(),
    )


def target_record(target: Target) -> TargetRecord:
    """The manifest's record of ``target``, with what proves it on a resume: the
    resolved path of a file or block device, a regular file's device and inode."""
    resolved = node = None
    if target.kind == "block":
        resolved = os.path.realpath(target.path)
    elif target.kind == "file":  # it exists: a run creates it before its manifest
        resolved, node, _ = identify_node(target.path)
    return TargetRecord(
        spec=target.spec,
        kind=target.kind,
        path=target.path,
        capacity_bytes=target.capacity,
        logical_sector=target.logical_sector,
        identity=target.identity,
        resolved=resolved,
        st_dev=node[0] if node else None,
        st_ino=node[1] if node else None,
        st_gen=node[2] if node else None,
    )


def purge_record(
    done: PurgeRecord, started: float, ended: float, segment: int, error: str | None = None
) -> Purge:
    """A purge (or a failed one, with ``error``) as the run directory keeps it."""
    return Purge(
        method=done.method,
        pts_compliant=done.pts_compliant,
        device=done.device,
        interface=done.interface,
        requested_method=done.requested_method,
        commands=tuple(done.commands),
        seconds=done.seconds,
        started_at=done.started_at,
        notes=tuple(done.notes),
        started=started,
        ended=ended,
        segment=segment,
        error=error,
    )


def check_resumable(data: Any) -> None:
    status = data.manifest.status
    if status == "complete":
        raise RunDirError(f"{data.root}: the run is already complete; nothing to resume")
