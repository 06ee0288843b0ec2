"""RunDirectory.write_columns (clients.csv and every whole-file table, formatted a column at a time)
and the logs' column blocks write the bytes csv.writer writes for the cleaned rows, a row at a time,
whatever the columns hold: one text rule (asyncfl.output.csv_text), lines ending in \n."""

from __future__ import annotations

import csv
import math
import random

import numpy as np
import pandas as pd

from asyncfl.output.csv_text import clean
from asyncfl.output.run_directory import RunDirectory
from asyncfl.output.tables import frame, write_csv
from asyncfl.output.writing import Log


def _rows_by_csv(path, columns: dict) -> None:
    """The reference: csv.writer over the rows, every value cleaned as the logs clean it."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(list(columns))
        writer.writerows([clean(v) for v in row] for row in zip(*columns.values()))


def _column(rng: random.Random, kind: str, n: int, trial: int) -> list:
    return {
        "int": lambda: [rng.randint(-5, 10**6) for _ in range(n)],
        "float": lambda: [rng.lognormvariate(0, 3) for _ in range(n)],
        "nan_mix": lambda: [math.nan if rng.random() < 0.3 else rng.random() for _ in range(n)],
        "repeated": lambda: [rng.choice([0, 0.0, math.nan, 1.5])] * n,
        "distinct_nans": lambda: [float("nan") for _ in range(n)],
        "text": lambda: [rng.choice(["a", "", "x,y", 'q"', "offline"]) for _ in range(n)],
        "numpy": lambda: list(np.float32(np.random.default_rng(trial).random(n))),
        "bool": lambda: [rng.random() < 0.5 for _ in range(n)],
        "odd_floats": lambda: [rng.choice([1e17, -2.5e20, 123456789.1234567, -0.0, 5e-7, 1e-5, 7]) for _ in range(n)],
        "tiny": lambda: [rng.random() * 1e-5 for _ in range(n)],
        "empty": lambda: [""] * n,
    }[kind]()


KINDS = ("int", "float", "nan_mix", "repeated", "distinct_nans", "text", "numpy", "bool", "odd_floats", "tiny", "empty")


def test_columns_are_written_as_csv_writes_the_rows(tmp_path):
    rng = random.Random(0)
    out = RunDirectory.__new__(RunDirectory)  # only the table writers are used
    out.path = tmp_path
    for trial in range(300):
        n = rng.randint(1, 30)
        columns = {f"c{c}": _column(rng, rng.choice(KINDS), n, trial) for c in range(rng.randint(1, 6))}
        out.write_columns("columns.csv", columns)
        _rows_by_csv(tmp_path / "rows.csv", columns)
        assert (tmp_path / "columns.csv").read_bytes() == (tmp_path / "rows.csv").read_bytes(), columns
        out.write_table("table.csv", [dict(zip(columns, row)) for row in zip(*columns.values())])
        assert (tmp_path / "table.csv").read_bytes() == (tmp_path / "rows.csv").read_bytes()
        log = Log(tmp_path / "log.csv", columns)
        log.append(columns)
        log.close()
        assert (tmp_path / "log.csv").read_bytes() == (tmp_path / "rows.csv").read_bytes()


def _pandas_csv(table, digits) -> str:
    """The reference for study tables: pandas' to_csv of the frame, cells cleaned (as tables.py wrote before)."""

    def cell(value):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        return round(value, digits) if isinstance(value, float) and digits is not None else value

    return frame(table).map(cell).to_csv(index=False, lineterminator="\n")


def test_study_tables_are_written_as_pandas_wrote_them(tmp_path):
    rng = random.Random(1)
    values = [
        rng.random, lambda: rng.randint(0, 9), lambda: None, lambda: math.nan, lambda: "a,b", lambda: "x", lambda: "",
        lambda: True, lambda: np.float64(rng.random()), lambda: np.int64(3), lambda: rng.lognormvariate(0, 20),
        lambda: 1e-7, lambda: 'q"q',
    ]  # fmt: skip
    for trial in range(200):
        ncol, nrow = rng.randint(1, 5), rng.randint(0, 6)
        kinds = [rng.sample(range(len(values)), rng.randint(1, 3)) for _ in range(ncol)]
        rows = [
            {f"c{j}": values[rng.choice(kinds[j])]() for j in range(ncol) if rng.random() < 0.9} for _ in range(nrow)
        ]
        table = pd.DataFrame(rows) if trial % 3 == 0 and rows else rows  # typed columns, or rows of objects
        for digits in (6, None):
            write_csv(tmp_path / "t.csv", table, digits)
            assert (tmp_path / "t.csv").read_text(encoding="utf-8") == _pandas_csv(table, digits), (rows, digits)
