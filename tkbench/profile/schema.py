"""The keys of a profile: each section's keys with their converter and default
(docs/profiles.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tkbench.device.cacherecord import SETTINGS as WRITE_CACHE_SETTINGS
from tkbench.profile.convert import (
    DAY,
    Conv,
    _block_size,
    _bool,
    _choice,
    _duration,
    _float,
    _int,
    _list,
    _percent_limit,
    _size,
    _str,
)
from tkbench.profile.model import (
    CACHE_STATES,
    DATA_PATTERNS,
    KINDS,
    PATTERNS,
    PROCEDURES,
    PTS_VARIANTS,
    PURGE_METHODS,
    SWEEP_MODES,
    VFILE_OPERATIONS,
    CopySet,
    Criterion,
    Group,
    Mix,
    Share,
    Tracking,
    VolumeSpec,
    copy_data,
)

WORKLOAD_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "numjobs": (_int(1, 1024), 4),
    "iodepth": (_int(1, 65536), 32),
    "active_range": (_float(0.0, 100.0, lo_open=True), 100.0),
    "data_pattern": (_choice(DATA_PATTERNS), "random"),
    "ioengine": (_choice(("auto", "libaio", "io_uring", "psync", "posixaio", "sync")), "auto"),
    "direct": (_bool, True),
    "write_cache": (_choice(WRITE_CACHE_SETTINGS), "unchanged"),
    "compress_percentage": (_int(1, 99), 0),
}
ROUNDS_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "max": (_int(1, 100000), 25),
    "window": (_int(2, 1000), 5),
    "max_excursion": (_float(0.0, 10.0, lo_open=True), 0.20),
    "max_slope_excursion": (_float(0.0, 10.0, lo_open=True), 0.10),
}
PURGE_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "method": (_choice(PURGE_METHODS), "auto"),
    "allow_fallback": (_bool, False),
}
PRECONDITION_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "capacity_multiple": (_float(0.0, 100.0), 2.0),
    "bs": (_block_size, 128 * 1024),
    "max_duration": (_duration(0.0, lo_open=False), 0.0),
}
REPORT_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "title": (_str, "SSD Performance Report"),
    "operator": (_str, ""),
    "organisation": (_str, ""),
    "logo": (_str, ""),
    "paper": (_choice(("A4", "Letter")), "A4"),
}


def _precondition_bs(v: Any) -> int:
    if v == "match":
        return 0
    return _block_size(v)


# Write Saturation's optional workloads: what ``wsat_workload`` sets (docs/profiles.md)
COMPOSITE_SIZES: tuple[str, ...] = ("512/4", "1k/1", "1536/1", "2k/1", "2560/1", "3k/1")
COMPOSITE_SIZES += ("3584/1", "4k/67", "8k/10", "16k/7", "32k/3", "64k/3")


def _preset(pattern: str, bs: int, read: int, track: str) -> dict[str, Any]:
    return {"pattern": pattern, "block_sizes": (bs,), "mixes": (Mix(read),), "track": track}


WSAT_WORKLOADS: dict[str, dict[str, Any]] = {
    "oltp": _preset("random", 8192, 65, "8k"),
    "vod": _preset("sequential", 131072, 90, "128k"),
    "metadata": _preset("sequential", 512, 50, "512"),
    "composite": {
        "pattern": "random",
        "mixes": (Mix(0),),
        "bssplit": tuple(Share.parse_bs(x) for x in COMPOSITE_SIZES),
        "zones": tuple(Share.parse_zone(x) for x in ("50/5", "30/15", "20/80")),
        "track": "composite",
    },
}

TEST_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "title": (_str, None),
    "description": (_str, ""),
    "kind": (_choice(KINDS), "steady"),
    "enabled": (_bool, True),
    "pattern": (_choice(PATTERNS), "random"),
    "mixes": (_list(Mix.parse), None),
    "block_sizes": (_list(_block_size), None),
    "point_runtime": (_duration(0.0, hi=DAY), 60.0),
    "purge": (_bool, True),
    "precondition": (_bool, True),
    "precondition_bs": (_precondition_bs, None),
    "split_block_sizes": (_bool, False),
    "tracking": (_list(Tracking.parse, min_len=0), ()),
    "percentiles": (_list(_float(0.0, 100.0, lo_open=True)), (99.0, 99.9, 99.99, 99.999)),
    "histogram": (_bool, False),
    "repeat": (_int(1, 100000), 1),
    "repeat_until": (_percent_limit, 0.0),
    "repeat_max": (_int(1, 100000), 10),
    "stop_written_multiple": (_float(0.0, 1000.0), 4.0),
    "max_duration": (_duration(0.0), 86400.0),
    "file_size": (_size(), 0),
    "fsync": (_int(0, 1 << 20), 0),
    "end_fsync": (_bool, False),
    "response_histogram": (_duration(0.0, lo_open=False, hi=DAY), 0.0),
    "procedure": (_choice(PROCEDURES[1:]), ""),
    "wsat_workload": (_choice(("required", *WSAT_WORKLOADS)), "required"),
    "intervals": (_int(1, 10000), 1),
    "tracking_interval": (_choice(("first", "last")), "last"),
    "threads": (_list(_int(1, 1024)), ()),
    "iodepths": (_list(_int(1, 65536)), ()),
    "bssplit": (_list(Share.parse_bs), ()),
    "zones": (_list(Share.parse_zone), ()),
    "prewrite": (_duration(0.0, lo_open=False, hi=DAY), 0.0),
    "wait_states": (_list(_duration(0.0, hi=DAY)), ()),
    "bursts": (_int(1, 100000), 360),
    "burst": (_duration(0.0, hi=DAY), 5.0),
    "baseline": (_duration(0.0, lo_open=False, hi=DAY), 1800.0),
    "groups": (_list(Group.parse, unique=False), ()),
    "sample": (_duration(0.0, lo_open=False, hi=DAY), 0.0),
    "response_ceiling": (_duration(0.0, hi=60.0), 0.005),
    "operating_prewrite": (_duration(0.0, lo_open=False, hi=DAY), 3600.0),
    "operating_runtime": (_duration(0.0, hi=DAY), 600.0),
    "modes": (_list(_choice(SWEEP_MODES)), ()),
    "buffer_sizes": (_list(_block_size), ()),
    "buffer_counts": (_list(_int(1, 65536)), ()),
    "max_buffer_space": (_size(512), 64 << 20),
    "sets": (_list(CopySet.parse), ()),
    "data_patterns": (_list(copy_data), ()),
    "copy_buffer": (_size(512), 1 << 20),
    "drop_caches": (_bool, False),
    "verify": (_bool, True),
    "cache": (_choice(CACHE_STATES), "as-is"),
    "sync": (_bool, False),
    "nodes": (_int(1, 1 << 40), 0),
    "node_size": (_size(1), 512),
    "page_size": (_block_size, 8192),
    "operations": (_list(_choice(VFILE_OPERATIONS)), VFILE_OPERATIONS),
    "thread_counts": (_list(_int(1, 1024)), (1, 128)),
    "caches": (_list(_choice(CACHE_STATES[1:])), ("cold", "warm")),
    # a replay test (tkbench.kinds.replay): the workload file (--workload), the share
    # of its I/Os the applied workload's streams hold, how its offsets reach the target
    "replay": (_bool, False),
    "capture": (_str, ""),
    "coverage": (_float(1.0, 100.0), 90.0),
    "offsets": (_choice(("wrap", "scale")), "wrap"),
}
VOLUME_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "reserve": (_size(0), VolumeSpec.reserve),
    "shrink": (_bool, VolumeSpec.shrink),
    "min_file_size": (_size(), VolumeSpec.min_file_size),
    "allow_buffered": (_bool, VolumeSpec.allow_buffered),
}
SCOPES = ("device", "volume")
ACCEPTANCE_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "steady_state": (_bool, False),
    "criteria": (_list(Criterion.parse, min_len=0), ()),
    "regression_threshold": (_float(0.0, 100.0), 0.0),
}
# a profile's sections: each a table of the keys above (docs/profiles.md)
SECTIONS: dict[str, dict[str, tuple[Conv, Any]]] = {
    "workload": WORKLOAD_SCHEMA,
    "rounds": ROUNDS_SCHEMA,
    "purge": PURGE_SCHEMA,
    "precondition": PRECONDITION_SCHEMA,
    "report": REPORT_SCHEMA,
    "acceptance": ACCEPTANCE_SCHEMA,
    "volume": VOLUME_SCHEMA,
}
# the sections a test's own table may override, key by key: [tests.NAME.workload]
TEST_SECTIONS = ("workload", "rounds")
# the keys outside any section ("name": the file's stem when empty or left out)
TOP_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "name": (_str, ""),
    "description": (_str, ""),
    "extends": (_str, ""),
    "scope": (_choice(SCOPES), "device"),
    "pts_variant": (_choice(PTS_VARIANTS), "none"),
}


def split(table: Mapping[str, Any], names: Iterable[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A TOML table's keys apart from its sub-tables ``names``, and those sub-tables by
    name (an empty table for one left out; a value that is no table is kept, for the
    caller to refuse)."""
    parts: dict[str, Any] = {name: {} for name in names}
    rest: dict[str, Any] = {}
    for key, value in table.items():
        if key in parts:
            parts[key] = value
        else:
            rest[key] = value
    return rest, parts
