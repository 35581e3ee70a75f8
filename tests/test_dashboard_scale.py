"""The dashboard of a large history: every page under a size bound, every link
resolving, every run's row once with the numbers and the regressions of the rule
``tkbench run`` uses (benchmarks/scale.py measures its time at a lab's year).
"""

from __future__ import annotations

import random
import uuid
from collections import Counter, defaultdict
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tkbench import history
from tkbench.dashboard import build_site
from tkbench.dashboard.model import build as build_whole
from tkbench.dashboard.model import number
from tkbench.dashboard.site import render
from tkbench.history import CheckRow, Entry, EntryChecks, baseline_of
from tkbench.outputs.checks import regression_checks

PAGE_BOUND = 2_000_000  # bytes: the goal of a page at any size of history
KEYS = [f"iops: iops {bs} {mix}" for bs in ("4k", "64k") for mix in ("0/100", "65/35", "100/0")]
KEYS += [f"latency: lat_mean {bs} {mix}" for bs in ("4k", "8k") for mix in ("0/100", "100/0")]
KEYS += ["throughput: bw 128k 0/100", "throughput: bw 1024k 100/0"]
SERIALS = 10
NIGHTS = 200
T_BUILT = 1_800_000_000.0  # the time the site says it was built


def lab(nights: int = NIGHTS) -> list[Entry]:
    """Ten drives of one model and firmware, a run a night each, two profiles; now and
    then a drop (a regression), a failed check, an interrupted run, a run without a
    start time."""
    rng = random.Random(7)
    out = []
    for night in range(nights):
        for d in range(SERIALS):
            i = night * SERIALS + d
            started = None if i % 997 == 5 else 1_800_000_000.0 + night * 86400.0 + d * 60.0
            drop = 0.75 if rng.random() < 0.03 else 1.0
            failed = rng.random() < 0.02
            out.append(
                Entry(
                    run_dir=f"/elsewhere/rig-{d}/run-{night:04d}",
                    started=started,
                    ended=None if started is None else started + 600.0,
                    status="interrupted" if rng.random() < 0.02 else "complete",
                    profile="nightly" if night % 10 else "weekly",
                    host=f"rig-{d}",
                    target="/dev/nvme0n1",
                    model="Lab SSD",
                    serial=f"S{d:02d}",
                    firmware="FW1",
                    capacity=10**12,
                    headline={
                        k: (100_000.0 if "iops" in k else 0.1 if "lat" in k else 2000.0)
                        * (drop if "lat" not in k else 2 - drop)
                        * rng.gauss(1.0, 0.02)
                        for k in KEYS
                    },
                    checks=EntryChecks(
                        passed=not failed,
                        checks=(CheckRow("steady state", passed=not failed, message="x"),),
                    ),
                    run_id=str(uuid.UUID(int=i + 1, version=4)),
                )
            )
    return out


class Page(HTMLParser):
    """What a page holds: its ids, its links, and each run row's cells."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.rows: dict[str, list[str]] = {}
        self._row: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag in ("a", "link") and a.get("href"):
            self.links.append(str(a["href"]))
        if tag == "tr" and "run" in (a.get("class") or "").split():
            self._row = str(a["id"])
            self.rows[self._row] = []
        if tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            self.rows[self._row].append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def test_a_large_history_gives_small_pages_whose_links_and_numbers_hold(tmp_path: Path) -> None:
    entries = lab()
    h = history.open_history(tmp_path / "history.sqlite")
    h.put(entries)
    site = tmp_path / "site"
    built = build_site(h, site)
    assert built.runs == len(entries)

    pages = {p.name: parse(p) for p in site.glob("*.html")}
    sizes = {name: (site / name).stat().st_size for name in pages}
    assert max(sizes.values()) <= PAGE_BOUND, sizes
    assert len(pages) > 3  # the index, the model page and pages of older runs

    # every relative link reaches a file of the site, and its fragment an id there
    for name, page in pages.items():
        for href in page.links:
            parts = urlsplit(href)
            assert not parts.scheme, (name, href)
            target = unquote(parts.path) or name
            assert (site / target).is_file(), (name, href)
            if parts.fragment:
                assert parts.fragment in pages[target].ids, (name, href)

    # every run has one row in the whole site, with its numbers
    rows = Counter(anchor for page in pages.values() for anchor in page.rows)
    assert len(rows) == len(entries) and set(rows.values()) == {1}
    cells = {anchor: cells for page in pages.values() for anchor, cells in page.rows.items()}
    by_dir: dict[str, list[str]] = {}
    for cell in cells.values():
        by_dir[cell[-1].split()[0]] = cell  # the report cell: the directory (not here)
    assert len(by_dir) == len(entries)

    # the regressions are those of the baseline tkbench run takes, from the whole drive
    drives: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    for e in entries:
        drives[(e.model, e.serial)].append(e)
    seen_regressions = 0
    for e in entries:
        cell = by_dir[e.run_dir]
        shown = cell[6 : 6 + len(KEYS)]
        assert shown == [number(e.headline[k]) for k in KEYS], e.run_dir
        if e.status != "complete":
            assert cell[5] == "not checked"
            continue
        base = baseline_of(
            drives[(e.model, e.serial)],
            model=e.model,
            serial=e.serial,
            profile=e.profile,
            started=e.started,
            run_dir=e.run_dir,
            run_id=e.run_id,
        )
        if base is None:
            assert cell[5] == "no baseline", e.run_dir
            continue
        failed = [c for c in regression_checks(e.headline, base.headline, 10.0, "") if not c.passed]
        seen_regressions += bool(failed)
        state = "none" if not failed else f"{len(failed)} regression"
        assert cell[5].startswith(state), (e.run_dir, cell[5])
    assert seen_regressions > 10


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty history of each backend."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("pg_url")
        return url
    return str(tmp_path / "h.sqlite")


def test_the_site_made_one_model_at_a_time_is_the_whole_sites(
    location: str, tmp_path: Path
) -> None:
    """Three models (one with two firmwares): the pages written one model at a time,
    from the page names the database counted, are those of the site built whole
    (the same rows, anchors numbered across the models, the same older pages)."""
    entries = []
    for k, (model, firmware) in enumerate([("Lab SSD", "FW1"), ("B drive", "2"), ("Z", "FW9")]):
        for e in lab(nights=40 if k == 0 else 15):
            entries.append(
                replace(e, model=model, firmware=firmware, run_dir=f"{e.run_dir}-{k}", run_id=None)
            )
    entries += [replace(e, firmware="FW0", run_dir=e.run_dir + "-old") for e in entries[:450]]
    h = history.open_history(location)
    h.put(entries)
    counts = Counter((e.model, e.firmware, e.profile) for e in entries)
    assert sorted(h.groups()) == sorted((*k, n) for k, n in counts.items())

    site = tmp_path / "site"
    built = build_site(h, site, now=T_BUILT)
    whole = render(build_whole(entries, 10.0, site.resolve()), h.location, T_BUILT)
    assert built.runs == len(entries) and built.pages == 5 and built.drives == 3 * SERIALS
    assert sorted(p.name for p in site.glob("*.html")) == sorted(whole)
    assert len(whole) > 5  # pages of older runs too
    for name, html in whole.items():
        assert (site / name).read_text(encoding="utf-8") == html, name
