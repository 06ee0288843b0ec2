"""Small table writers: CSV (numbers, NaN as empty) and GitHub Markdown (preformatted strings)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from asyncfl.results import write_atomic


def _cell(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return round(value, 6) if isinstance(value, float) else value


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    buffer = io.StringIO()
    columns = list(rows[0]) if rows else []
    writer = csv.DictWriter(buffer, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: _cell(v) for k, v in row.items()} for row in rows)
    write_atomic(path, buffer.getvalue())
    return path


def markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_markdown(path: Path, rows: Sequence[Mapping[str, Any]], intro: str = "") -> Path:
    write_atomic(path, (intro + "\n\n" if intro else "") + markdown(rows))
    return path


def pm(mean: float, std: float, digits: int = 1, scale: float = 1.0) -> str:
    """``mean ± std`` (std omitted when NaN), or an em dash when the mean is NaN."""
    if mean is None or math.isnan(mean):
        return "—"
    if std is None or math.isnan(std):
        return f"{mean * scale:,.{digits}f}"
    return f"{mean * scale:,.{digits}f} ± {std * scale:,.{digits}f}"
