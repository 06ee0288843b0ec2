"""Reading a run directory back (for its figures, studies and the API), strictly: a damaged file (a
malformed or cut-short row, a value that is not a number, truncated JSON or YAML) is a
:class:`ConfigError` naming the file and the line, never a traceback from deep inside a figure, so
``plot`` can check every file before it draws anything (:func:`check_run_files`).  summary.json is
read by :func:`read_summary` and nothing else.

A table is named by its CSV file (``run_dir / "clients.csv"``) and read from ``clients.parquet``
when the run wrote that instead (``output.format: parquet``): :func:`table_file`, :func:`has_table`,
:func:`load_table` (plain) and :func:`read_table` (checked) find either."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import yaml

from asyncfl.errors import ConfigError
from asyncfl.lazy import LazyModule
from asyncfl.output.columns import RENAMED_COLUMNS, REQUIRED_COLUMNS, TEXT_COLUMNS

# libyaml's safe loader where PyYAML was built with it (the same data, parsed several times faster:
# every figure title reads config.yaml), the pure-Python one otherwise
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

pd = LazyModule("pandas")  # the tables only: a run reads its summary.json without importing pandas
SUMMARY = "summary.json"
DAMAGED = "the file is damaged (run the scenario again, or restore the file from a copy)"


def table_file(path: Path) -> Path:
    """The file holding the table ``path`` names (``<dir>/<table>.csv``): ``<table>.parquet`` when
    there is one (a run that ended with ``output.format: parquet``; a crash while one log was being
    converted leaves both, and the Parquet file is the whole one), else ``path`` itself."""
    parquet = path.with_suffix(".parquet")
    return parquet if path.suffix == ".csv" and parquet.is_file() else path


def has_table(path: Path) -> bool:
    """Whether the run directory holds the table ``path`` names, as CSV or Parquet."""
    return table_file(path).is_file()


def load_table(path: Path, usecols=None) -> pd.DataFrame:
    """The table ``path`` names as a DataFrame, from its CSV or Parquet file (see :func:`table_file`),
    unchecked (for :func:`read_table`'s checks, call that)."""
    found = table_file(path)
    if found.suffix == ".parquet":
        return pd.read_parquet(found, columns=usecols)
    return pd.read_csv(found, usecols=usecols)


def read_table(path: Path, usecols=None) -> pd.DataFrame:
    """One of the run's tables (``path`` names its CSV file, its Parquet file is read when the run
    wrote that), checked row by row: every column holds numbers or is empty, except the text columns
    (:data:`asyncfl.output.columns.TEXT_COLUMNS`), and the columns
    :data:`asyncfl.output.columns.REQUIRED_COLUMNS` names for the file hold a number in every row."""
    name = path.name
    path = table_file(path)
    renamed = RENAMED_COLUMNS.get(name)
    try:
        table = load_table(path, None if renamed else usecols)  # renamed: usecols are today's names
    except pd.errors.EmptyDataError:
        raise ConfigError(f"{path}: empty (not even a header line): {DAMAGED}.") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        where = f", line {found[2]}: {found[3]} fields where the header has {found[1]}" if found else f": {exc}"
        raise ConfigError(f"{path}{where}; {DAMAGED}.") from None
    except (ValueError, OSError) as exc:  # usecols names a column the header lacks; a damaged Parquet file
        raise ConfigError(f"{path}: {exc}; {DAMAGED}.") from None
    if renamed:
        table = table.rename(columns={old: new for old, new in renamed.items() if new not in table})
        unknown = [c for c in usecols or () if c not in table]
        if unknown:
            raise ConfigError(f"{path}: no column(s) {', '.join(unknown)} in the header; {DAMAGED}.")
        table = table if usecols is None else table[[c for c in table.columns if c in usecols]]
    wanted = REQUIRED_COLUMNS.get(name, ())
    missing = [c for c in wanted if c not in table and (usecols is None or c in usecols)]
    if missing:
        raise ConfigError(f"{path}: the header lacks the column(s) {', '.join(missing)}; {DAMAGED}.")
    for column in table.columns:
        values = table[column]
        if (
            len(values) and column not in TEXT_COLUMNS and not pd.api.types.is_numeric_dtype(values)
        ):  # a number column holding text
            bad = (pd.to_numeric(values, errors="coerce").isna() & values.notna()).to_numpy().nonzero()[0]
            row = int(bad[0]) if len(bad) else 0
            raise ConfigError(
                f"{path}, line {row + 2}: column {column} holds {values.iloc[row]!r}, not a number; {DAMAGED}."
            )
        if column in wanted and values.isna().any():
            row = int(values.isna().to_numpy().nonzero()[0][0])
            raise ConfigError(f"{path}, line {row + 2}: column {column} is empty (a row cut short?); {DAMAGED}.")
    return table


SMALL_TABLE_BYTES = 1 << 20  # up to this size a CSV table is read without pandas (see read_columns)


def read_columns(path: Path, usecols=None) -> dict[str, np.ndarray]:
    """One of the run's tables as columns (name -> 1-D numpy array: float64 for numbers, empty
    cells NaN; object for the text columns), checked like :func:`read_table`.  A CSV file of up to
    :data:`SMALL_TABLE_BYTES` is parsed by the csv module, so that a run drawing its figures from its
    small tables (k_async: 200 rounds, 2,000 updates) does not import pandas (0.5-1 s); a larger file
    or a Parquet file is read by :func:`read_table`: from about 10^5 rows pandas' C parser, import included,
    is the faster (a 540,000-line updates.csv: 2.1 CPU s by the csv module)."""
    found = table_file(path)
    if found.suffix == ".parquet" or found.stat().st_size > SMALL_TABLE_BYTES:
        table = read_table(path, usecols)
        return {c: table[c].to_numpy(dtype=object if c in TEXT_COLUMNS else np.float64) for c in table.columns}
    with open(found, newline="", encoding="utf-8") as handle:
        rows = csv.reader(handle)
        header = next(rows, None)
        if header is None:
            raise ConfigError(f"{found}: empty (not even a header line): {DAMAGED}.")
        cells = [(line, row) for line, row in enumerate(rows, start=2) if row]
    renamed = RENAMED_COLUMNS.get(path.name, {})
    header = [renamed[n] if n in renamed and renamed[n] not in header else n for n in header]
    for line, row in cells:
        if len(row) > len(header):
            raise ConfigError(f"{found}, line {line}: {len(row)} fields where the header has {len(header)}; {DAMAGED}.")
    names = [n for n in header if usecols is None or n in usecols]  # in the file's order, as pandas keeps them
    unknown = [n for n in usecols or () if n not in header]
    if unknown:
        raise ConfigError(f"{found}: no column(s) {', '.join(unknown)} in the header; {DAMAGED}.")
    wanted = REQUIRED_COLUMNS.get(path.name, ())
    missing = [c for c in wanted if c not in header and (usecols is None or c in usecols)]
    if missing:
        raise ConfigError(f"{found}: the header lacks the column(s) {', '.join(missing)}; {DAMAGED}.")
    columns = {}
    for name in names:
        i = header.index(name)
        texts = [row[i] if i < len(row) else "" for _, row in cells]  # a row cut short: its last cells empty
        if name in wanted and "" in texts:
            line = cells[texts.index("")][0]
            raise ConfigError(f"{found}, line {line}: column {name} is empty (a row cut short?); {DAMAGED}.")
        columns[name] = np.array(texts, dtype=object) if name in TEXT_COLUMNS else _numbers(found, name, texts, cells)
    return columns


def _numbers(path: Path, name: str, texts: list[str], cells: list) -> np.ndarray:
    """A column's cells as float64 (empty: NaN); a cell that is not a number is a ConfigError."""
    try:
        return np.array(texts, dtype=np.float64)
    except ValueError:
        pass  # empty cells (NaN), or text where a number belongs: cell by cell
    values = np.full(len(texts), np.nan)
    for k, text in enumerate(texts):
        if text:
            try:
                values[k] = float(text)
            except ValueError:
                raise ConfigError(
                    f"{path}, line {cells[k][0]}: column {name} holds {text!r}, not a number; {DAMAGED}."
                ) from None
    return values


def read_summary(run_dir: Path, required: bool = True) -> dict:
    """The run's summary.json, checked: damage (truncated JSON, not UTF-8, not an object) is a
    ConfigError naming the file and the line.  A run without one (it died before writing it) raises
    FileNotFoundError, or gives ``{}`` when not ``required``."""
    path = run_dir / SUMMARY
    if not required and not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}, line {exc.lineno} column {exc.colno}: {exc.msg} (truncated?); {DAMAGED}.") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason}); {DAMAGED}.") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object, found {type(data).__name__}; {DAMAGED}.")
    return data


def read_config(run_dir: Path) -> dict:
    """The run's config.yaml as plain data ({} when the directory has none)."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        return {}
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: not readable YAML ({getattr(exc, 'problem', exc)}); {DAMAGED}.") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of scenario keys; {DAMAGED}.")
    return data


def check_run_files(run_dir: Path) -> None:
    """Read every file the figures of ``run_dir`` read, so that a damaged one is reported before
    anything is drawn.  Files the directory lacks are not an error here (an older asyncfl wrote
    fewer; the figure that needs one is skipped with a note)."""
    read_config(run_dir)
    read_summary(run_dir, required=False)
    for name in REQUIRED_COLUMNS:
        if has_table(run_dir / name):
            read_table(run_dir / name)


def read_csv(path: Path) -> list[dict[str, str]]:
    """A CSV file as rows of text, unchecked (tests and benchmarks)."""
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
