"""``tkbench profiles``, ``doctor`` and ``export``: the command-line side (formatting only).

The work is done by :mod:`tkbench.cli.doctor` and :mod:`tkbench.outputs.export`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tkbench.cli.options import path_arg
from tkbench.cli.support import info, say
from tkbench.errors import EXIT_BAD_INPUT, EXIT_DEVICE, TkbenchError


def register(sub: Any) -> None:
    from tkbench.cli import doctor

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
    from tkbench.profile import build, finding

    rows = []
    bad = 0
    for entry in finding.catalogue():
        try:
            description = build.load(str(entry.path)).description
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
    from tkbench.cli import doctor

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
    from tkbench.outputs.export import rows, to_csv, to_jsonl, to_openmetrics
    from tkbench.outputs.files import check_output, write_output
    from tkbench.rundir.store import load_run

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
