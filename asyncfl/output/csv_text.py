"""The one rule that turns values into CSV text, for every CSV file asyncfl writes.

A value is written as ``csv.writer`` writes it after cleaning (:func:`clean`): a float rounded to 6
decimals (``repr(round(x, 6))``; ``digits=None`` keeps it whole), NaN and None empty, an int as
``str``, text quoted only where it must be.  Every line ends in ``\\n`` (:data:`LINE_END`), the
header's too.  The column functions (:func:`column_texts`) give the same text a column at a time,
vectorised, for the files written whole at population scale (clients.csv at 10^7 clients).
"""

from __future__ import annotations

import csv
import math
from typing import IO, Any

import numpy as np

LINE_END = "\n"
DIGITS = 6  # decimals a float keeps in every run file


def row_writer(handle: IO[str]) -> Any:
    """A ``csv.writer`` with asyncfl's line end: the writer of every row whose fields are not all plain numbers."""
    return csv.writer(handle, lineterminator=LINE_END)


def clean(value: Any, digits: int | None = DIGITS) -> Any:
    """A value as written: a float rounded to ``digits`` decimals (None: as it is), NaN as ""."""
    if value.__class__ is float:
        return "" if value != value else value if digits is None else round(value, digits)
    if isinstance(value, float):  # numpy floats
        return "" if math.isnan(value) else value if digits is None else round(value, digits)
    return value


def clean_column(values: list[Any], digits: int | None = DIGITS) -> list[Any]:
    """``[clean(v) for v in values]``, with the common all-int and all-float columns done in C."""
    kinds = set(map(type, values))
    if kinds <= {int, str}:
        return values
    if kinds == {float}:
        array = np.fromiter(values, dtype=np.float64, count=len(values))
        nan = np.isnan(array)
        if not nan.any():
            return values if digits is None else rounded(array, digits).tolist()
        if nan.all():
            return [""] * len(values)
    return [clean(v, digits) for v in values]


def rounded(values: np.ndarray, digits: int | None = DIGITS) -> np.ndarray:
    """:func:`round6` for 6 digits, the values themselves for None, numpy's ``round`` otherwise."""
    if digits is None:
        return values
    return round6(values) if digits == DIGITS else np.round(values, digits)


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


def column_texts(values: list[Any] | np.ndarray, digits: int | None = DIGITS) -> list[str] | None:
    """The text of each value of a column, as a field of a row of several, or None when csv must
    write them (text that may need quoting, None, bools and other objects).  A numpy column of
    numbers is formatted vectorised; a column of one repeated value is formatted once."""
    if isinstance(values, np.ndarray):
        if values.dtype.kind in "iub":  # str(True) is what csv writes too
            return list(map(str, values.tolist()))
        if values.dtype.kind == "f":
            return _float_texts(values, digits)
        values = values.tolist()
    if not len(values):
        return []
    if values.count(values[0]) == len(values):  # e.g. the counters of clients that never acted
        text = _list_texts([values[0]], digits)
        return None if text is None else text * len(values)
    return _list_texts(values, digits)


def _float_texts(values: np.ndarray, digits: int | None) -> list[str]:
    values = np.asarray(values, dtype=np.float64)
    nan = np.isnan(values)
    if len(values) and ((values == values[0]).all() or nan.all()):  # e.g. one constant for every client
        first = float(values[0])
        return ["" if first != first else repr(clean(first, digits))] * len(values)
    out = list(map(repr, rounded(values, digits).tolist()))
    for i in np.flatnonzero(nan).tolist():
        out[i] = ""
    return out


def _list_texts(values: list[Any], digits: int | None) -> list[str] | None:
    cleaned = clean_column(values, digits)
    kinds = set(map(type, cleaned))
    if not kinds <= {int, float, str} or (str in kinds and any(v != "" for v in cleaned if type(v) is str)):
        return None
    return list(map(repr, cleaned)) if str not in kinds else ["" if v == "" else repr(v) for v in cleaned]


def lines(fields: list[list[str]]) -> str:
    """Rows of field texts, given column by column, as CSV lines (each ending in :data:`LINE_END`)."""
    text = LINE_END.join(map(",".join, zip(*fields)))
    return text + LINE_END if text or (fields and len(fields[0])) else ""
