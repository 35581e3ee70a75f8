"""``tkbench report RUN_DIR``: write the PDF (and the HTML beside it) of a stored run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tkbench.cli.options import path_arg


def register(subparsers: Any) -> None:
    """Add the ``report`` subcommand to tkbench's command line."""
    p = subparsers.add_parser(
        "report",
        help="write the PDF and HTML report of a run directory",
        description="Write the customer report of a stored run: a PDF, and the same report as "
        "a self-contained HTML file beside it (same name, .html).  Needs only the run "
        "directory: no fio, no device.  Options not given come from the [report] table of "
        "the profile the run used.",
    )
    p.add_argument("run_dir", type=path_arg, metavar="RUN_DIR", help="the run directory")
    p.add_argument(
        "--out",
        type=path_arg,
        metavar="FILE.pdf",
        help="the PDF to write (default: RUN_DIR/report.pdf)",
    )
    p.add_argument("--title", metavar="TEXT", help="report title")
    p.add_argument("--operator", metavar="TEXT", help="who ran the tests")
    p.add_argument("--organisation", metavar="TEXT", help="the testing organisation")
    p.add_argument("--logo", type=path_arg, metavar="PNG/SVG", help="logo for the first page")
    p.add_argument("--paper", metavar="A4|Letter", help="paper size")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from tkbench.cli.support import info
    from tkbench.report import build_report

    run_dir: Path = args.run_dir
    out: Path = args.out if args.out is not None else run_dir / "report.pdf"
    pdf = build_report(
        run_dir,
        out,
        title=args.title,
        operator=args.operator,
        organisation=args.organisation,
        logo=args.logo,
        paper=args.paper,
    )
    info(f"report: {pdf} and {pdf.with_suffix('.html')}")
    return 0
