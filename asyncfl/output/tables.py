"""Tables of studies and reports: CSV (the run files' text rule, :mod:`asyncfl.output.csv_text`) and
GitHub Markdown (preformatted strings).  ``DataFrame.to_markdown`` is not used: it pads every column
to its width."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from asyncfl.output.csv_text import clean
from asyncfl.output.writing import write_atomic, write_columns

Table = pd.DataFrame | Sequence[Mapping[str, Any]]


def frame(table: Table) -> pd.DataFrame:
    """Rows as a DataFrame of Python objects (an int column with a missing value stays ints)."""
    return table if isinstance(table, pd.DataFrame) else pd.DataFrame(list(table), dtype=object)


def write_csv(path: Path, table: Table, digits: int | None = 6) -> Path:
    """``table`` as CSV, floats rounded to ``digits`` (None: written in full), None and NaN empty; a
    table without rows is its header line."""
    # cleaned cell by cell, then typed by pandas per column as it always was (ints among floats become floats)
    cleaned = frame(table).map(lambda value: "" if value is None else clean(value, digits))
    columns = {str(name): cleaned[name].tolist() for name in cleaned.columns}
    if columns:
        write_columns(path, columns, digits=None, header_only=True)  # rounded already
    else:
        write_atomic(path, "\n" * (1 + len(cleaned)))  # no columns at all: an empty line per row, as csv writes
    return path


def markdown(table: Table) -> str:
    table = frame(table)
    if table.empty:
        return ""
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def write_markdown(path: Path, table: Table, intro: str = "") -> Path:
    write_atomic(path, (intro + "\n\n" if intro else "") + markdown(table))
    return path


def pm(mean: float, std: float, digits: int = 1, scale: float = 1.0) -> str:
    """``mean ± std``, ``mean ± n/a`` when the std is NaN (one seed has no spread), or an em dash when
    the mean is NaN."""
    if mean is None or math.isnan(mean):
        return "—"
    if std is None or math.isnan(std):
        return f"{mean * scale:,.{digits}f} ± n/a"
    return f"{mean * scale:,.{digits}f} ± {std * scale:,.{digits}f}"
