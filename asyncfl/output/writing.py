"""The one writer of the run directory's tables, in the one text rule (:mod:`.csv_text`).

- :class:`Log`: an append-only CSV file with a fixed header (metrics, rounds, updates, weights,
  timeline tasks), appended a block at a time (rows, or columns) and flushed at every aggregation,
  so a crash leaves it readable and a checkpoint's byte offset continues it.
- :func:`write_table`: a table given column by column (lists, numpy arrays or :class:`Sparse`
  columns), written whole, as CSV (in blocks of rows: clients.csv at 10^7 clients holds the text of
  one block only) or Parquet (``output.format: parquet``), via a temporary file renamed into place.
- :func:`csv_to_parquet`: a finished log written again as Parquet.

Parquet holds the values the CSV text means: floats rounded to 6 decimals, NaN as null.  Whole
files written otherwise (config.yaml, summary.json) go through :func:`write_atomic`.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from asyncfl.lazy import LazyModule
from asyncfl.output.columns import TEXT_COLUMNS
from asyncfl.output.csv_text import DIGITS, clean, clean_column, column_texts, lines, round6, row_writer

# optional (pip install 'asyncfl[parquet]', checked where output.format is validated): imported on first use
pa, pa_csv, pq = LazyModule("pyarrow"), LazyModule("pyarrow.csv"), LazyModule("pyarrow.parquet")

FORMATS = ("csv", "parquet")  # output.format
ROWS_PER_BLOCK = 1 << 16  # rows of a whole table formatted and written at once


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def open_truncated(path: Path, offset: int, **kwargs):
    """Open ``path`` for appending after cutting it back to ``offset`` bytes."""
    with open(path, "r+b") as raw:
        raw.truncate(offset)
    return open(path, "a", encoding="utf-8", **kwargs)


@dataclass(frozen=True)
class Sparse:
    """A column equal to ``fill`` except at ``ids`` (ascending), which hold ``values``: a population's
    counter that only the clients that acted moved, with no per-client value for the others."""

    size: int
    fill: Any
    ids: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return self.size

    def dense(self) -> np.ndarray:
        out = np.full(self.size, self.fill, dtype=self.values.dtype)
        out[self.ids] = self.values
        return out


def sparse(size: int, fill: Any, ids: np.ndarray, values: list) -> Sparse:
    """``fill`` everywhere but at ``ids``; ints stay ints (written ``3``), floats floats (``3.0``)."""
    dtype = np.int64 if isinstance(fill, int) else np.float64
    return Sparse(size, fill, ids, np.array(values, dtype=dtype).reshape(len(ids)))


Rows = Sequence[Mapping[str, Any]]
Columns = Mapping[str, Any]  # name -> list, numpy array or Sparse, one value per row


class Log:
    """An append-only CSV file with a fixed header: ``append`` a block of rows (a list of mappings, a
    missing key written empty) or of columns (a mapping of equal-length lists or arrays, in header order)."""

    def __init__(self, path: Path, columns: Iterable[str] | None, resume_at: int | None = None) -> None:
        """``resume_at``: continue after a checkpoint's byte offset, dropping anything written since;
        ``columns`` None (resuming only): those of the header on disk."""
        if columns is None:
            with open(path, newline="", encoding="utf-8") as handle:
                columns = next(csv.reader(handle))
        self.columns = tuple(columns)
        self._names = frozenset(self.columns)
        if resume_at is None:
            self.handle = open(path, "w", newline="", encoding="utf-8")
        else:
            self.handle = open_truncated(path, resume_at, newline="")
        self.writer = row_writer(self.handle)
        if resume_at is None:
            self.writer.writerow(self.columns)

    def append(self, block: Rows | Columns) -> None:
        if isinstance(block, Mapping):
            self._append_columns(block)
            return
        for row in block:
            if not row.keys() <= self._names:
                raise ValueError(f"{self.handle.name}: no column(s) {sorted(row.keys() - self._names)} in the header")
            self.writer.writerow([clean(row.get(name, "")) for name in self.columns])

    def _append_columns(self, columns: Columns) -> None:
        if tuple(columns) != self.columns:
            raise ValueError(f"{self.handle.name}: columns {list(columns)} are not the header's {list(self.columns)}")
        texts = [column_texts(values) for values in columns.values()]
        if len(texts) > 1 and all(t is not None for t in texts):
            self.handle.write(lines(texts))
        else:
            self.writer.writerows(zip(*[clean_column(list(v)) for v in columns.values()]))

    def tell(self) -> int:
        return self.handle.tell()

    def flush(self) -> None:
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


def write_columns(path: Path, columns: Columns, digits: int | None = DIGITS, header_only: bool = False) -> Path | None:
    """A CSV file given column by column, written whole (temporary file, then renamed): the bytes
    :func:`asyncfl.output.csv_text.row_writer` writes for the rows ``zip(*columns.values())``, every
    value cleaned (:func:`asyncfl.output.csv_text.clean`), but formatted a column and a block of rows
    at a time.  Consecutive :class:`Sparse` columns are joined once per block (their fills) and again
    only in the rows that hold values, so a row of a client that never acted is a handful of fields.
    A table without rows writes nothing (returns None) unless ``header_only``."""
    n = len(next(iter(columns.values()))) if columns else 0
    if not n and not header_only:
        return None
    prepared = _prepared(columns, digits)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", newline="", encoding="utf-8") as handle:
            writer = row_writer(handle)
            writer.writerow(list(columns))
            if prepared is None:  # text to quote, a single column (csv writes its "" as '""'), other objects
                writer.writerows(zip(*[clean_column(_values(c), digits) for c in columns.values()]))
            else:
                for start in range(0, n, ROWS_PER_BLOCK):
                    stop = min(n, start + ROWS_PER_BLOCK)
                    handle.write(lines([_group_texts(group, start, stop, digits) for group in prepared]))
    except BaseException:  # out of memory, Ctrl-C: no half-written file is left beside the run's
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    return path


def _values(column: Any) -> list[Any]:
    if isinstance(column, Sparse):
        column = column.dense()
    return column.tolist() if isinstance(column, np.ndarray) else list(column)


def _prepared(columns: Columns, digits: int | None) -> list[list] | None:
    """The columns grouped for block-wise formatting: runs of consecutive Sparse columns, numpy columns
    of numbers, and lists as their texts; None when some column needs csv itself (see write_columns)."""
    if len(columns) < 2:
        return None
    groups: list[list] = []
    for column in columns.values():
        if isinstance(column, Sparse):
            if groups and isinstance(groups[-1][0], Sparse):
                groups[-1].append(column)
                continue
        elif not (isinstance(column, np.ndarray) and column.dtype.kind in "iubf"):
            column = column_texts(list(column) if not isinstance(column, list) else column, digits)
            if column is None:
                return None
        groups.append([column])
    return groups


def _group_texts(group: list, start: int, stop: int, digits: int | None) -> list[str]:
    """The texts of rows [start, stop) of a dense column, or of a run of Sparse columns joined by commas."""
    if not isinstance(group[0], Sparse):
        column = group[0]
        return column[start:stop] if isinstance(column, list) else column_texts(column[start:stop], digits)
    fill = ",".join(column_texts(np.array([c.fill], dtype=c.values.dtype), digits)[0] for c in group)
    out = [fill] * (stop - start)
    spans = [(c, *np.searchsorted(c.ids, (start, stop))) for c in group]
    rows = np.unique(np.concatenate([c.ids[a:b] for c, a, b in spans])) - start
    if len(rows):
        parts = []
        for c, a, b in spans:
            block = np.full(len(rows), c.fill, dtype=c.values.dtype)
            block[np.searchsorted(rows, c.ids[a:b] - start)] = c.values[a:b]
            parts.append(column_texts(block, digits))
        for row, text in zip(rows.tolist(), map(",".join, zip(*parts))):
            out[row] = text
    return out


def write_table(path: Path, columns: Columns, format: Literal["csv", "parquet"] = "csv") -> Path | None:
    """A table given column by column (see :data:`Columns`), written whole to ``path`` + ``.csv`` or
    ``.parquet`` (``path`` has no suffix, e.g. ``run_dir / "clients"``); returns the file written (None
    for a table without rows, which writes nothing).  Parquet holds the values the CSV text means:
    floats rounded to 6 decimals, NaN as null."""
    if format not in FORMATS:
        raise ValueError(f"output.format must be csv or parquet, got {format!r}")
    if not columns or not len(next(iter(columns.values()))):
        return None
    target = path.with_name(f"{path.name}.{format}")
    if format == "csv":
        return write_columns(target, columns)
    table = pa.table({name: _arrow_column(values) for name, values in columns.items()})
    _write_parquet(table, target)
    return target


def _arrow_column(values: Any):
    """One column as an Arrow array of the values CSV would write (see :func:`clean_column`)."""
    if isinstance(values, Sparse):
        values = values.dense()
    array = np.asarray(values) if not isinstance(values, np.ndarray) else values
    if array.dtype.kind in "iub":
        return pa.array(array)
    if array.dtype.kind == "f":  # rounded as CSV writes them
        rounded = round6(array.astype(np.float64))
        return pa.array(rounded, mask=np.isnan(rounded))
    cleaned = [None if v == "" else v for v in clean_column(list(values))]
    return pa.array(cleaned)


def _write_parquet(table, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.tmp")
    pq.write_table(table, tmp, compression="zstd")
    with open(tmp, "rb+") as handle:  # on disk before it takes the name, as write_atomic's files
        os.fsync(handle.fileno())
    os.replace(tmp, target)


def csv_to_parquet(path: Path) -> Path:
    """The CSV file ``path`` (a log the run appended to) as ``.parquet`` beside it, written whole and
    renamed into place; the CSV file stays (the caller removes it once no resume can need it).
    Numbers parse exactly (Arrow's reader); a column with no value at all is stored as floats (NaN),
    not as Arrow's null type."""
    target = path.with_suffix(".parquet")
    with open(path, newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle), [])
    text = {name: pa.string() for name in header if name in TEXT_COLUMNS}
    options = pa_csv.ConvertOptions(column_types=text, strings_can_be_null=True)
    table = pa_csv.read_csv(path, convert_options=options)
    for i, field in enumerate(table.schema):
        if pa.types.is_null(field.type):
            table = table.set_column(i, field.name, table.column(i).cast(pa.float64()))
    _write_parquet(table, target)
    return target
