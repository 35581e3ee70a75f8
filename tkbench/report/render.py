"""Report model -> self-contained HTML (Jinja2) -> PDF (WeasyPrint).

Safety:

* Jinja2 autoescaping is on for every template: a device model, an operator
  name or a command line is always text, never markup.  The only markup not
  produced by the templates is tkbench's own: the bundled stylesheet and the
  SVG figures made by :mod:`.figures`.
* WeasyPrint fetches resources only through :class:`AssetFetcher`, which serves
  the assets registered for this document (the logo, as a ``data:`` URI) and
  raises for every other URL: no local file, no network.  Fonts come from
  fontconfig (DejaVu), so no font is fetched by URL either.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

with warnings.catch_warnings():
    # Without libharfbuzz-subset, WeasyPrint subsets fonts with fontTools (slower, same
    # result) and says so with a DeprecationWarning at import: not a user's concern.
    warnings.filterwarnings(
        "ignore", message="HarfBuzz-Subset will be required", category=DeprecationWarning
    )
    from weasyprint import HTML
    from weasyprint.urls import URLFetcher, URLFetcherResponse


from tkbench.analysis.window import TAIL_SAMPLES
from tkbench.errors import InputError
from tkbench.outputs import compare as cmp
from tkbench.profile.paths import bundled
from tkbench.report import comparison_figures, figures, fmt, stagefigures
from tkbench.report.comparison import Comparison
from tkbench.report.model import Report, TestReport
from tkbench.report.tables import filled_columns

TEMPLATES = bundled("templates")
MAIN_TEMPLATE = "report.html.j2"
COMPARISON_TEMPLATE = "comparison.html.j2"
STYLESHEET = "report.css"
LOGO_MAX_BYTES = 4 * 1024 * 1024
PAPER_CSS = {"A4": "A4", "Letter": "letter"}


class BlockedURL(ValueError):
    """The renderer asked for a URL that is not one of the report's own assets."""


@dataclass(frozen=True)
class Logo:
    data_uri: str
    mime: str
    body: bytes


# --------------------------------------------------------------------------- logo


def sniff_image(body: bytes) -> str | None:
    """The MIME type of a PNG, JPEG or SVG image, by content (not by file name)."""
    if body.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if body.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    head = body[:2048].lstrip().lower()
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    if (head.startswith(b"<?xml") or head.startswith(b"<svg") or head.startswith(b"<!--")) and (
        b"<svg" in body[:65536].lower()
    ):
        return "image/svg+xml"
    return None


def load_logo(path: Path) -> Logo:
    """Read a PNG, JPEG or SVG logo into a data URI (raises :class:`InputError`)."""
    try:
        if not path.is_file():
            raise InputError(f"logo {path}: not a file")
        if path.stat().st_size > LOGO_MAX_BYTES:
            raise InputError(f"logo {path}: larger than {LOGO_MAX_BYTES // (1024 * 1024)} MiB")
        body = path.read_bytes()
    except OSError as exc:
        raise InputError(f"logo {path}: cannot read: {exc.strerror or exc}") from None
    mime = sniff_image(body)
    if mime is None:
        raise InputError(f"logo {path}: not a PNG, JPEG or SVG image")
    uri = f"data:{mime};base64,{base64.b64encode(body).decode('ascii')}"
    return Logo(data_uri=uri, mime=mime, body=body)


# --------------------------------------------------------------------------- HTML


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        sig=fmt.sig,
        pct=fmt.percent,
        signed_pct=fmt.signed_pct,
        limit=fmt.limit,
        when=fmt.when,
        when_short=fmt.when_short,
        day=fmt.day,
        duration=fmt.duration,
        rounds=fmt.rounds,
        gb=fmt.gb,
    )
    env.globals.update(
        verification_caption=figures.verification_caption, filled_columns=filled_columns
    )
    return env


def stylesheet() -> Markup:
    try:
        text = (TEMPLATES / STYLESHEET).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"report stylesheet {TEMPLATES / STYLESHEET}: {exc.strerror}") from None
    return Markup(text)  # bundled with tkbench, not data


def toc_entries(test: TestReport, figs: figures.TestFigures) -> list[tuple[str, str]]:
    """The sub-sections of a test that exist, for the table of contents."""
    out = [(f"{test.anchor}-procedure", "Procedure")]
    if test.workload is not None:
        out.append((f"{test.anchor}-workload", test.workload.heading))
    if test.stage is not None:
        out.append((f"{test.anchor}-stage", test.stage.heading))
    if figs.convergence:
        out.append((f"{test.anchor}-convergence", "Steady-state convergence"))
    if test.determinations:
        out.append((f"{test.anchor}-verification", "Steady-state verification"))
    if test.rounds:
        out.append((f"{test.anchor}-rounds", "Rounds"))
    if test.matrices:
        out.append((f"{test.anchor}-window", "Measurement window"))
    if figs.measure_2d or figs.latency_profile:
        out.append((f"{test.anchor}-plots", "Measurement plots"))
    if figs.histograms:
        out.append((f"{test.anchor}-histograms", "Response-time histograms"))
    if test.saturation is not None:
        out.append((f"{test.anchor}-saturation", "Write saturation"))
    if test.response_histogram is not None:
        out.append((f"{test.anchor}-confidence", "Response-time histogram and confidence levels"))
    return out


FIGURE_SCHEME = "tkbench-figure:"


@dataclass
class Document:
    """The report as HTML twice: self-contained for the reader, linked for WeasyPrint.

    ``html`` inlines every figure as ``<svg>``; ``print_html`` refers to them as
    ``tkbench-figure:`` URLs that :class:`AssetFetcher` serves from ``assets``
    (WeasyPrint parses a referenced SVG much faster than one inlined in the HTML).
    """

    html: str
    print_html: str
    assets: dict[str, tuple[bytes, str]]


class _Embedder:
    """Turns figure SVG into markup: inline, or as a registered asset."""

    def __init__(self, linked: bool) -> None:
        self.linked = linked
        self.assets: dict[str, tuple[bytes, str]] = {}

    def __call__(self, svg: str | None) -> Markup | None:
        if svg is None:
            return None
        if not self.linked:
            return Markup(svg)  # tkbench's own SVG (text in it is XML-escaped by matplotlib)
        url = f"{FIGURE_SCHEME}{len(self.assets) + 1}"
        self.assets[url] = (svg.encode("utf-8"), "image/svg+xml")
        return Markup(f'<img class="figure" src="{url}" alt="">')

    def figures(self, figs: Any) -> Any:
        """Every figure of a test chapter embedded (a list: each of its figures; a
        dataclass: a part's figures)."""
        embedded: dict[str, Any] = {}  # Markup is a str
        for f in dataclasses.fields(figs):
            value = getattr(figs, f.name)
            if isinstance(value, list):
                embedded[f.name] = [self(v) for v in value]
            elif dataclasses.is_dataclass(value):
                embedded[f.name] = self.figures(value)
            else:
                embedded[f.name] = self(value)
        return type(figs)(**embedded)


def _render(
    report: Report,
    logo: Logo | None,
    figs: Mapping[str, stagefigures.ChapterFigures],
    embed: _Embedder,
) -> str:
    template = environment().get_template(MAIN_TEMPLATE)
    return template.render(
        r=report,
        css=stylesheet(),
        paper_css=Markup(PAPER_CSS[report.paper]),
        logo=logo.data_uri if logo else None,
        figs={name: embed.figures(f) for name, f in figs.items()},
        toc={t.name: toc_entries(t, figs[t.name]) for t in report.tests},
        tail_samples=TAIL_SAMPLES,
    )


def build_document(report: Report, logo: Logo | None = None) -> Document:
    """Draw every figure once and lay the report out for reading and for printing."""
    name = figures.Namer()
    figs = {t.name: stagefigures.all_figures(t, name) for t in report.tests}
    html = _render(report, logo, figs, _Embedder(linked=False))
    linked = _Embedder(linked=True)
    print_html = _render(report, logo, figs, linked)
    assets = dict(linked.assets)
    if logo is not None:
        assets[logo.data_uri] = (logo.body, logo.mime)
    return Document(html=html, print_html=print_html, assets=assets)


@dataclass(frozen=True)
class SectionFigures:
    """The figures of one compared test (None: not drawn)."""

    convergence: Any = None
    measurement: Any = None
    deltas: Any = None
    saturation: Any = None


def _comparison_figures(
    comparison: Comparison, styles: Sequence[comparison_figures.RunStyle]
) -> dict[str, SectionFigures]:
    name = figures.Namer()
    out = {}
    for s in comparison.sections:
        out[s.test] = SectionFigures(
            convergence=comparison_figures.convergence_overlay(s.reports, styles, name()),
            measurement=comparison_figures.measurement_overlay(s.reports, styles, name()),
            deltas=comparison_figures.delta_maps(s.reports, styles, s.higher_is_better, name()),
            saturation=comparison_figures.saturation_overlay(s.reports, styles, name()),
        )
    return out


RUNS_PER_TABLE = 5  # run 1 and four others: the widest table that fits A4 and Letter


def column_groups(n: int, per_table: int = RUNS_PER_TABLE) -> list[list[int]]:
    """Run indices of each table: run 1 (the reference) first in every one."""
    if n <= per_table:
        return [list(range(n))]
    rest = list(range(1, n))
    step = per_table - 1
    return [[0, *rest[k : k + step]] for k in range(0, len(rest), step)]


def build_comparison_document(comparison: Comparison, paper: str = "A4") -> Document:
    """Draw the comparison's figures once; lay it out for reading and for printing."""
    styles = [comparison_figures.run_style(i) for i in range(len(comparison.runs))]
    figs = _comparison_figures(comparison, styles)
    template = environment().get_template(COMPARISON_TEMPLATE)

    def render(embed: _Embedder) -> str:
        return template.render(
            c=comparison,
            styles=styles,
            groups=column_groups(len(comparison.runs)),
            figs={
                k: SectionFigures(
                    embed(f.convergence), embed(f.measurement), embed(f.deltas), embed(f.saturation)
                )
                for k, f in figs.items()
            },
            css=stylesheet(),
            paper_css=Markup(PAPER_CSS[paper]),
            outlier_pct=f"{cmp.OUTLIER_PCT:g}",
            outlier_mads=f"{cmp.OUTLIER_MADS:g}",
        )

    html = render(_Embedder(linked=False))
    linked = _Embedder(linked=True)
    print_html = render(linked)
    return Document(html=html, print_html=print_html, assets=dict(linked.assets))


# --------------------------------------------------------------------------- PDF


class AssetFetcher(URLFetcher):
    """WeasyPrint URL fetcher that serves only the registered assets.

    ``requested`` lists every URL WeasyPrint asked for, ``rejected`` those it
    refused (each raised :class:`BlockedURL`; WeasyPrint then leaves the
    resource out).
    """

    def __init__(self, assets: Mapping[str, tuple[bytes, str]]) -> None:
        super().__init__(timeout=1, allowed_protocols=(), allow_redirects=False)
        self.assets = dict(assets)
        self.requested: list[str] = []
        self.rejected: list[str] = []

    def fetch(self, url: str, headers: Any = None) -> Any:
        self.requested.append(url)
        asset = self.assets.get(url)
        if asset is None:
            self.rejected.append(url)
            shown = url if len(url) <= 80 else url[:77] + "..."
            raise BlockedURL(f"the report loads only its own assets, not {shown}")
        body, mime = asset
        return URLFetcherResponse(url, body, headers={"Content-Type": mime})


@contextmanager
def _quiet_weasyprint() -> Iterator[None]:
    """WeasyPrint logs unsupported CSS and blocked URLs as warnings; keep them out of the
    user's terminal (a blocked URL is recorded by the fetcher)."""
    logger = logging.getLogger("weasyprint")
    old = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(old)


def render_pdf(html: str, fetcher: AssetFetcher) -> tuple[bytes, int]:
    """PDF bytes and the page count, rendered with ``fetcher`` as the only way out."""
    with _quiet_weasyprint():
        document = HTML(string=html, base_url=None, url_fetcher=fetcher).render()
        pages = len(document.pages)
        pdf = document.write_pdf()
    assert isinstance(pdf, bytes)
    return pdf, pages
