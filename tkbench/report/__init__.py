"""The report a customer receives: a run directory -> PDF, with the same HTML beside it.

Compute first, render second: :mod:`.analysis` turns the stored records into
the report model (pure), :mod:`.figures` draws it (SVG) and :mod:`.render`
lays it out (Jinja2 -> HTML -> WeasyPrint -> PDF).  Rendering needs only the
run directory: no fio, no device.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from tkbench.errors import InputError, RunDirError
from tkbench.outputs.files import check_output, write_output
from tkbench.rundir.store import RunData, load_run

__all__ = ["build_comparison", "build_report"]


def build_report(
    run_dir: Path | str,
    out_pdf: Path | str,
    *,
    title: str | None = None,
    operator: str | None = None,
    organisation: str | None = None,
    logo: Path | str | None = None,
    paper: str | None = None,
) -> Path:
    """Write the PDF report of ``run_dir`` to ``out_pdf`` and the HTML beside it.

    Options left as None come from the run's profile (``[report]`` table).
    Returns the PDF's path; the HTML has the same stem and ``.html``.
    """
    run_dir, out_pdf = Path(run_dir), Path(out_pdf)
    if out_pdf.suffix.lower() != ".pdf":
        raise InputError(f"{out_pdf}: the report file name must end in .pdf")
    check_output(out_pdf, "report")
    check_output(out_pdf.with_suffix(".html"), "report")
    if not run_dir.exists():
        raise RunDirError(f"{run_dir}: no such run directory")
    run = load_run(run_dir)
    # only now: matplotlib, imported with the figures, writes its font cache under $HOME
    from tkbench.report import analysis, options, render

    opts = options.resolve_options(
        run.manifest,
        title=title,
        operator=operator,
        organisation=organisation,
        logo=logo,
        paper=paper,
    )
    logo_data = render.load_logo(opts.logo) if opts.logo else None
    report = analysis.analyze(run, opts, generated=time.time())
    doc = render.build_document(report, logo_data)
    pdf, _pages = render.render_pdf(doc.print_html, render.AssetFetcher(doc.assets))
    _make_parent(out_pdf)
    write_output(out_pdf.with_suffix(".html"), doc.html, "report")
    write_output(out_pdf, pdf, "report")
    return out_pdf


def build_comparison(runs: Sequence[RunData], out_pdf: Path | str) -> Path:
    """Write the comparison PDF of ``runs`` (against run 1) and its HTML beside it.
    Returns the PDF's path."""
    out_pdf = Path(out_pdf)
    if out_pdf.suffix.lower() != ".pdf":
        raise InputError(f"{out_pdf}: the comparison file name must end in .pdf")
    check_output(out_pdf, "comparison")
    check_output(out_pdf.with_suffix(".html"), "comparison")
    if not runs:
        raise InputError("nothing to compare: no run given")
    from tkbench.report import comparison, render  # matplotlib: only once the input is good

    model = comparison.comparison_model(runs, generated=time.time())
    doc = render.build_comparison_document(model)
    pdf, _pages = render.render_pdf(doc.print_html, render.AssetFetcher(doc.assets))
    _make_parent(out_pdf)
    write_output(out_pdf.with_suffix(".html"), doc.html, "comparison")
    write_output(out_pdf, pdf, "comparison")
    return out_pdf


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{path.parent}: cannot create: {exc.strerror or exc}") from None
