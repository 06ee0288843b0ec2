"""Reading the plain-text trace files (device profiles, availability intervals) strictly.

Every problem becomes a ConfigError that names the scenario key, the file and the line.
"""

from __future__ import annotations

import csv
from pathlib import Path

from asyncfl.errors import ConfigError


def read_rows(path: Path, columns: tuple[str, ...], where: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) pairs of a CSV file whose header must be exactly ``columns``."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            body = [(reader.line_num, row) for row in reader]
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the file: {exc.strerror}.") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"{where}: not a readable CSV text file ({exc}).") from None
    if header is None or tuple(h.strip() for h in header) != columns:
        found = ",".join(header) if header else "nothing"
        raise ConfigError(f"{where}: expected the header {','.join(columns)}, found {found}.")
    rows = []
    for line, row in body:
        if not row:
            continue
        if len(row) != len(columns):
            raise ConfigError(f"{where}, line {line}: expected {len(columns)} columns, found {len(row)}.")
        rows.append((line, dict(zip(columns, row))))
    return rows
