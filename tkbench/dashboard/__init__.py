"""``tkbench dashboard``: a static site of the history's runs, trends per drive.

One page per drive model and firmware (a chart per headline number and profile, a
line per serial, each point linked to its run's report, the newest runs' table),
pages of its older runs, an index of every drive with its latest run; what a page
holds is bounded (:data:`.model.ROWS_SHOWN`, :data:`.site.MARKS_PER_PAGE`), so that
no page grows with the history.  Plain HTML and inline SVG with a stylesheet and a small
script beside them: no server, no network, readable without JavaScript.

:mod:`.model` decides what is shown (regressions by the rule of ``tkbench run``,
acceptance from the indexed checks), :mod:`.chart` where it is drawn, :mod:`.site`
renders and writes the files.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from tkbench.dashboard import model, site
from tkbench.history import History

__all__ = ["Built", "build_site"]


@dataclass(frozen=True)
class Built:
    index: Path
    drives: int
    pages: int
    runs: int
    removed: int  # drive pages of an earlier build that this one no longer has


def build_site(
    history: History, out: Path, threshold: float = 10.0, now: float | None = None
) -> Built:
    """Write the dashboard of every run in ``history`` into the directory ``out``."""
    site.check_out_dir(out)  # bad input before the history is read
    # the pages' names from the runs counted by the database, checked before any is
    # written; then one drive model at a time: its runs read (the history gives them
    # by model), its pages made and written, only its drives' rows kept for the index
    names = ["index.html", *model.page_names(history.groups())]
    runs = history.each(skip=("repeats",))  # the repeated points: not on the site
    parts = model.each_model(runs, threshold, Path(os.path.abspath(out)))
    index = site.Index(threshold)
    built = now if now is not None else time.time()
    pages = site.each_part_page(parts, history.location, threshold, index, built)
    written = site.write(out, pages, names)
    return Built(
        written.index, len(index.drives), index.page_count, index.runs, len(written.removed)
    )
