"""File primitives of the run directory: whole files written atomically (a temporary file renamed
into place, so a reader never sees half of one), append-only CSV logs, and a table written column
by column, as CSV or Parquet (:func:`write_table`).  Every value is cleaned alike: floats to 6
decimals, NaN empty (a null in Parquet), so both formats read back as the same numbers."""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

import numpy as np

from asyncfl.lazy import LazyModule

# optional (pip install 'asyncfl[parquet]', checked where output.format is validated): imported on first use
pa, pa_csv, pq = LazyModule("pyarrow"), LazyModule("pyarrow.csv"), LazyModule("pyarrow.parquet")

FORMATS = ("csv", "parquet")  # output.format
TEXT_COLUMNS = ("utc_time", "outcome")  # the run's text columns (the others are numbers): kept as text in Parquet


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _clean(value: Any) -> Any:
    if value.__class__ is float:
        return "" if value != value else round(value, 6)
    if isinstance(value, float):  # numpy floats
        return "" if math.isnan(value) else round(value, 6)
    return value


def _clean_column(values: list[Any]) -> list[Any]:
    """``[_clean(v) for v in values]``, with the common all-int and all-float columns done in C."""
    kinds = set(map(type, values))
    if kinds <= {int, str}:
        return values
    if kinds == {float}:
        array = np.fromiter(values, dtype=np.float64, count=len(values))
        nan = np.isnan(array)
        if not nan.any():
            return round6(array).tolist()
        if nan.all():
            return [""] * len(values)
    return [_clean(v) for v in values]


def round6(values: np.ndarray) -> np.ndarray:
    """``round(v, 6)`` of every value (Python's: the double nearest to the correctly rounded decimal),
    vectorised.  ``rint(v * 1e6) / 1e6`` is that whenever ``rint`` picks the right integer (an integer
    below 2^53 divided by 1e6 is rounded once, to the nearest double); it can pick wrongly only when
    ``v * 1e6`` lies within an ulp or so of a half-integer, where the product's own rounding may
    cross it: those few values (and huge ones) are rounded by Python.  10^6 values: milliseconds
    instead of a second."""
    scaled = values * 1e6
    out = np.rint(scaled) / 1e6
    with np.errstate(invalid="ignore"):
        near_half = np.abs(np.abs(scaled - np.floor(scaled)) - 0.5) <= 8 * np.spacing(np.abs(scaled))
        unsure = np.flatnonzero(np.isfinite(values) & (near_half | (np.abs(scaled) >= 2.0**52)))
    if len(unsure):
        out[unsure] = [round(v, 6) for v in values[unsure].tolist()]
    return out


def _column_text(values: list[Any]) -> list[str] | None:
    """The text ``csv.writer`` writes for each of ``_clean_column(values)`` in a row of several
    fields (ints: str, floats: repr, "" as it is), or None for anything else (other strings may
    need quoting: the caller lets csv write those).  A column of one repeated value is formatted once."""
    if values.count(values[0]) == len(values):  # e.g. the counters of clients that never acted
        text = _column_text_of([values[0]])
        return None if text is None else text * len(values)
    return _column_text_of(values)


def _column_text_of(values: list[Any]) -> list[str] | None:
    cleaned = _clean_column(values)
    kinds = set(map(type, cleaned))
    if not kinds <= {int, float, str} or (str in kinds and any(v != "" for v in cleaned if type(v) is str)):
        return None
    return list(map(repr, cleaned)) if str not in kinds else ["" if v == "" else repr(v) for v in cleaned]


class CsvLog:
    """An append-only CSV file with a fixed header."""

    def __init__(self, path: Path, columns: Iterable[str], resume_at: int | None = None) -> None:
        self.columns = tuple(columns)
        if resume_at is None:
            self.handle = open(path, "w", newline="", encoding="utf-8")
        else:  # continue after the last checkpoint: drop anything written since
            self.handle = open_truncated(path, resume_at, newline="")
        self.writer = csv.DictWriter(self.handle, self.columns, extrasaction="raise")
        if resume_at is None:
            self.writer.writeheader()

    def write(self, row: Mapping[str, Any]) -> None:
        self.writer.writerow({k: _clean(v) for k, v in row.items()})

    def flush(self) -> None:
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


def open_truncated(path: Path, offset: int, **kwargs):
    """Open ``path`` for appending after cutting it back to ``offset`` bytes."""
    with open(path, "r+b") as raw:
        raw.truncate(offset)
    return open(path, "a", encoding="utf-8", **kwargs)


def write_columns(path: Path, columns: Mapping[str, list[Any]]) -> None:
    """A CSV file given column by column, written whole (temporary file, then renamed): the bytes
    ``csv.writer`` writes for the rows ``zip(*columns.values())`` with every value cleaned as in the
    logs (floats to 6 decimals, NaN empty), but formatted a column at a time: clients.csv at 10^6
    clients is one column at a time, not a row at a time."""
    if not columns or not len(next(iter(columns.values()))):
        return
    tmp = path.with_name(f".{path.name}.tmp")
    texts = [_column_text(values) for values in columns.values()] if len(columns) > 1 else [None]
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(columns))
        if all(text is not None for text in texts):
            handle.write("\r\n".join(map(",".join, zip(*texts))) + "\r\n")  # csv's default line end
        else:
            writer.writerows(zip(*[_clean_column(values) for values in columns.values()]))
    os.replace(tmp, path)


def write_table(path: Path, columns: Mapping[str, Any], format: Literal["csv", "parquet"] = "csv") -> Path | None:
    """A table given column by column (lists or numpy arrays, one value per row), written whole to
    ``path`` + ``.csv`` or ``.parquet`` (``path`` has no suffix, e.g. ``run_dir / "clients"``) via a
    temporary file renamed into place; returns the file written (None for a table without rows, which
    writes nothing, as :func:`write_columns`).  Parquet holds the values the CSV file's text means:
    floats rounded to 6 decimals, NaN as null."""
    if format not in FORMATS:
        raise ValueError(f"output.format must be csv or parquet, got {format!r}")
    if not columns or not len(next(iter(columns.values()))):
        return None
    target = path.with_name(f"{path.name}.{format}")
    if format == "csv":
        # numpy columns as Python numbers: the same text as lists of them, by write_columns' fast paths
        lists = {name: v.tolist() if isinstance(v, np.ndarray) else list(v) for name, v in columns.items()}
        write_columns(target, lists)
        return target
    table = pa.table({name: _arrow_column(values) for name, values in columns.items()})
    _write_parquet(table, target)
    return target


def _arrow_column(values: Any):
    """One column as an Arrow array of the values CSV would write (see :func:`_clean_column`)."""
    array = np.asarray(values) if not isinstance(values, np.ndarray) else values
    if array.dtype.kind in "iub":
        return pa.array(array)
    if array.dtype.kind == "f":  # rounded as CSV writes them
        rounded = round6(array.astype(np.float64))
        return pa.array(rounded, mask=np.isnan(rounded))
    cleaned = [None if v == "" else v for v in _clean_column(list(values))]
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


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
