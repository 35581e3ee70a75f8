"""``tkbench doctor`` and ``tkbench export``: the command-line side (formatting only).

The work is done by :mod:`tkbench.doctor` and :mod:`tkbench.export`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .clisupport import info
from .errors import EXIT_DEVICE


def register(sub: Any) -> None:
    from . import doctor

    p = sub.add_parser(
        "doctor",
        help="check fio, the report stack and the tools a kind of work needs; name each fix",
        description="One line per prerequisite: fio and its version, the report stack "
        "(WeasyPrint, Pango, fonts), nbdkit with its python plugin, nvme-cli, smartctl, "
        "hdparm, sg3-utils, root, and O_DIRECT in --dir; each missing one with its fix.  "
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


def cmd_doctor(args: argparse.Namespace) -> int:
    from . import doctor

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
            print(line)
        what = " and ".join(purposes)
        if bad:
            sys.stderr.write(
                f"doctor: {len(bad)} prerequisite(s) for {what} missing: "
                f"{', '.join(f.name for f in bad)}\n"
            )
        else:
            info(f"doctor: everything {what} needs is here")
    return EXIT_DEVICE if bad else 0
