"""``tkbench profiles``, ``doctor`` and ``export``: the command-line side (formatting only).

The work is done by :mod:`tkbench.doctor` and :mod:`tkbench.export`.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import EXIT_BAD_INPUT, EXIT_DEVICE, TkbenchError
from .options import path_arg
from .support import info, say


def register(sub: Any) -> None:
    from .. import doctor

    p = sub.add_parser(
        "profiles",
        help="list the profiles: name, where it comes from (user, system, bundled), description",
        description="Profiles are looked up by name in $XDG_CONFIG_HOME/tkbench/profiles "
        "(default ~/.config/tkbench/profiles, 'user'), then /etc/tkbench/profiles ('system'), "
        "then those bundled with tkbench; the first match wins.",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output, with paths")
    p.set_defaults(func=cmd_profiles)

    p = sub.add_parser(
        "doctor",
        help="check fio, the report stack and the tools a kind of work needs; name each fix",
        description="One line per prerequisite: fio and its version, the report stack "
        "(WeasyPrint, Pango, fonts), nbdkit with its python plugin, nvme-cli, smartctl, "
        "hdparm, sg3-utils, sdparm, root, and O_DIRECT in --dir; each missing one with its "
        "fix.  "
        "Exits 4 when something the requested work needs is missing (default: a run, "
        "i.e. fio and the report stack).",
    )
    p.add_argument(
        "--for",
        dest="purposes",
        action="append",
        choices=sorted(doctor.PURPOSES),
        metavar="WORK",
        help="what the machine is to do (repeatable): "
        f"{', '.join(sorted(doctor.PURPOSES))} (default: run)",
    )
    p.add_argument(
        "--dir",
        type=Path,
        metavar="DIR",
        help="also check that files in DIR can be written with O_DIRECT (file targets)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser(
        "export",
        help="every value of every test's measurement window as CSV, JSON lines or OpenMetrics",
        description="One row per measured value of each test's measurement window (the "
        "report's values): run id, host, drive model, serial, firmware, profile, test, "
        "point, direction, metric, value, unit, steady state.  See docs/automation.md.",
    )
    p.add_argument("runs", nargs="+", type=path_arg, metavar="RUN_DIR")
    p.add_argument(
        "--format",
        choices=("csv", "jsonl", "openmetrics"),
        default="csv",
        help="csv (default), jsonl (one JSON object per line) or openmetrics (text "
        "exposition format, base units, ends with '# EOF')",
    )
    p.add_argument(
        "--out", type=path_arg, metavar="FILE", help="write to FILE instead of standard output"
    )
    p.set_defaults(func=cmd_export)


def cmd_profiles(args: argparse.Namespace) -> int:
    from .. import profile

    rows = []
    bad = 0
    for entry in profile.catalogue():
        try:
            description = profile.load(str(entry.path)).description
        except TkbenchError as exc:
            description, bad = f"INVALID: {exc}", bad + 1
        rows.append((entry, description))
    if args.json:
        data = [
            {
                "name": e.name,
                "origin": e.origin,
                "path": str(e.path),
                "shadows": list(e.shadows),
                "description": d,
            }
            for e, d in rows
        ]
        print(json.dumps(data, indent=1))
    else:
        for e, d in rows:
            hides = f" (hides {', '.join(e.shadows)})" if e.shadows else ""
            say(f"{e.name:<12} {e.origin + hides:<9} {d}")
    return EXIT_BAD_INPUT if bad else 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from .. import doctor

    purposes = args.purposes or ["run"]
    findings = doctor.diagnose(purposes, args.dir)
    bad = doctor.missing(findings)
    if args.json:
        data: dict[str, Any] = {
            "for": purposes,
            "ok": not bad,
            "checks": [f.to_dict() for f in findings],
        }
        print(json.dumps(data, indent=1))
    else:
        width = max(len(f.name) for f in findings)
        for f in findings:
            status = "ok" if f.ok else ("MISSING" if f.needed else "absent")
            line = f"{status:<8} {f.name:<{width}}  {f.detail}"
            if not f.ok and f.fix:
                line += f"; fix: {f.fix}"
            say(line)
        what = " and ".join(purposes)
        if bad:
            sys.stderr.write(
                f"doctor: {len(bad)} prerequisite(s) for {what} missing: "
                f"{', '.join(f.name for f in bad)}\n"
            )
        else:
            info(f"doctor: everything {what} needs is here")
    return EXIT_DEVICE if bad else 0


# ----------------------------------------------------------------------------- export


def cmd_export(args: argparse.Namespace) -> int:
    from ..export import rows
    from ..outputs import check_output, write_output
    from ..store import load_run

    if args.out is not None:
        check_output(args.out, "--out")  # before reading the runs
    found = rows(load_run(d) for d in args.runs)
    text = {"csv": to_csv, "jsonl": to_jsonl, "openmetrics": to_openmetrics}[args.format](found)
    if args.out is None:
        sys.stdout.write(text)
    else:
        write_output(args.out, text, "--out")
        info(f"export: {len(found)} value(s) to {args.out}")
    return 0


def to_csv(found: Sequence[Any]) -> str:
    from ..export import COLUMNS

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in found:
        d = r.to_dict()
        if d["steady_state"] is not None:
            d["steady_state"] = "true" if d["steady_state"] else "false"
        w.writerow(["" if d[c] is None else d[c] for c in COLUMNS])
    return buf.getvalue()


def to_jsonl(found: Sequence[Any]) -> str:
    return "".join(json.dumps(r.to_dict(), allow_nan=False) + "\n" for r in found)


# metric -> (family name, unit, factor to the base unit, help)
_FAMILIES = {
    "iops": ("tkbench_iops", "", 1.0, "I/O operations per second, mean over the window"),
    "bw": (
        "tkbench_bandwidth_bytes_per_second",
        "bytes_per_second",
        1e6,
        "bandwidth, mean over the window",
    ),
    "lat_mean": (
        "tkbench_latency_mean_seconds",
        "seconds",
        1e-3,
        "mean response time, mean over the window",
    ),
    "lat_max": (
        "tkbench_latency_max_seconds",
        "seconds",
        1e-3,
        "largest response time in the window",
    ),
    "pct": (
        "tkbench_latency_percentile_seconds",
        "seconds",
        1e-3,
        "response-time percentile, pooled over the window",
    ),
    "nodes_s": (
        "tkbench_nodes_per_second",
        "",
        1.0,
        "virtual-file nodes per second, mean over the test's runs",
    ),
    "mean_abs_dev_pct": (
        "tkbench_runs_deviation_ratio",
        "ratio",
        1e-2,
        "mean absolute deviation of the test's runs, as a fraction of their mean",
    ),
}
_LABELS = ("run_id", "host", "model", "serial", "firmware", "profile", "test", "run_dir")


def _label_value(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_openmetrics(found: Sequence[Any]) -> str:
    """The OpenMetrics text format: one gauge family per metric, base units."""
    samples: dict[str, list[str]] = {k: [] for k in _FAMILIES}
    for r in found:
        key = "pct" if r.metric.startswith("p") else r.metric
        name, _, factor, _ = _FAMILIES[key]
        labels = [(k, getattr(r, k)) for k in _LABELS]
        labels += [
            ("block_size", r.block_size),
            ("read_pct", r.read_pct),
            ("direction", r.direction),
            ("steady_state", "" if r.steady_state is None else str(r.steady_state).lower()),
            ("window", r.window),
        ]
        if key == "pct":
            labels.append(("percentile", r.metric[1:]))
        if r.point and " " not in r.point:  # a volume figure's name (a point is "4k 0/100")
            labels.append(("figure", r.point))
        text = ",".join(f'{k}="{_label_value(v)}"' for k, v in labels)
        samples[key].append(f"{name}{{{text}}} {r.value * factor!r}")
    out = []
    for key, (name, unit, _, help_text) in _FAMILIES.items():
        if not samples[key]:
            continue
        out.append(f"# TYPE {name} gauge")
        if unit:
            out.append(f"# UNIT {name} {unit}")
        out.append(f"# HELP {name} {help_text}")
        out.extend(samples[key])
    out.append("# EOF")
    return "\n".join(out) + "\n"
