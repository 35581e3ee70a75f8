"""A table of the report: values by row and column (the result matrices, a
stage's grids), shared by the report model and the stages' parts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Matrix:
    """A table of values by row (block size) and column (R/W mix or direction)."""

    key: str  # stable identifier, e.g. "iops", "lat_mean"
    caption: str
    unit: str
    row_title: str
    col_title: str
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    values: tuple[tuple[float | None, ...], ...]
