"""Every run file's columns are declared once (asyncfl.output.columns), each with its meaning, and a
run writes exactly those headers."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest
from conftest import run

from asyncfl.output import columns as c

DECLARED = {
    "metrics.csv": c.METRICS, "rounds.csv": {**c.ROUNDS, **c.ROUND_TIME}, "updates.csv": c.UPDATES,
    "timeline_tasks.csv": c.TASKS, "offline_periods.csv": c.OFFLINE,
    "clients.csv": {**c.CLIENTS, **c.TIME_BREAKDOWN, c.LOST_COMPUTE: ""},
}  # fmt: skip


def _header(path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as handle:
        return next(csv.reader(handle))


def test_every_declared_column_says_what_it_means():
    tables = (c.METRICS, c.ROUNDS, c.ROUND_TIME, c.UPDATES, c.TASKS, c.OFFLINE, c.CLIENTS, c.TIME_BREAKDOWN, c.WEIGHTS)
    optional = (c.METRICS_OPTIONAL, c.ROUNDS_OPTIONAL, c.CLIENTS_OPTIONAL)
    for table in tables + optional:
        assert table and all(isinstance(meaning, str) and meaning for meaning in table.values())


def test_a_run_writes_the_declared_headers(tmp_path):
    run_dir = run(
        tmp_path, timing_only=True, data={"clients": 6}, stop={"rounds": 3}, output={"plot": False},
        population={"availability": {"kind": "cyclic", "p": 0.5, "period_s": 20.0}},
    )  # fmt: skip
    for name, declared in DECLARED.items():
        assert _header(run_dir / name) == list(declared), name


def test_the_timing_world_measures_availability_without_torch():
    code = "import asyncfl.sim.availability.measure, sys; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


WRITERS_SCENARIO = {  # every optional column: failure reasons, time zones, utc_time; Parquet or CSV
    "name": "columns",
    "timing_only": True,
    "clock": {"start_time": "2026-01-05T22:00"},
    "data": {"clients": 30},
    "population": {
        "availability": {"kind": "diurnal", "p": 0.6, "mean_cycle_s": 900},
        "timezones": {"dist": "uniform", "low": -8, "high": 8},
        "eligibility": {"unmetered": {"kind": "markov", "p": 0.8, "mean_cycle_s": 300}},
    },
    "server": {"clients_per_round": 6, "deadline_s": 120, "over_selection": 0.5},
    "stop": {"rounds": 4},
    "output": {"plot": False},
}


def _columns_written(run_dir, name: str) -> list[str]:
    """The header of ``name`` as the run wrote it: its CSV file, or its Parquet file's schema."""
    parquet = (run_dir / name).with_suffix(".parquet")
    if parquet.is_file():
        import pyarrow.parquet as pq

        return pq.read_schema(parquet).names
    return _header(run_dir / name)


@pytest.mark.parametrize("format", ["csv", "parquet"])
def test_every_writer_writes_the_columns_columns_py_declares(tmp_path, format):
    """A column set written that columns.py does not declare (a writer adding, dropping or reordering a
    column) fails here, in both formats: reason network (population.eligibility) and
    cancelled (server.over_selection) add failed_* columns, timezones utc_offset_h, start_time utc_time."""
    if format == "parquet":
        pytest.importorskip("pyarrow")
    reasons = ["network", "cancelled"]
    declared = {
        "metrics.csv": list(c.METRICS_COLUMNS) + c.metrics_extra_columns(0, utc_time=True),
        "rounds.csv": list(c.ROUNDS_COLUMNS) + c.rounds_extra_columns(reasons),
        "updates.csv": list(c.UPDATES_COLUMNS),
        "timeline_tasks.csv": list(c.TASKS_COLUMNS),
        "offline_periods.csv": list(c.OFFLINE_COLUMNS),
        "clients.csv": c.clients_columns(reasons, timezones=True),
    }
    run_dir = run(tmp_path, **{**WRITERS_SCENARIO, "output": {"plot": False, "format": format}})
    for name, columns in declared.items():
        assert _columns_written(run_dir, name) == columns, name
    written = {p.name for p in run_dir.iterdir() if p.suffix in (".csv", ".parquet")}
    parquet = {"metrics.csv", "rounds.csv", "updates.csv", "clients.csv"} if format == "parquet" else set()
    assert written == {n for n in declared if n not in parquet} | {n.replace(".csv", ".parquet") for n in parquet}


def test_weights_and_per_class_columns_are_the_declared_ones(tmp_path):
    run_dir = run(
        tmp_path, data={"dataset": "digits", "clients": 4}, model={"name": "mlp", "hidden": 8},
        server={"clients_per_round": 2}, stop={"rounds": 2}, eval={"per_class": True},
        algorithm={"name": "fedavg", "record_weights": True}, output={"plot": False},
    )  # fmt: skip
    assert _header(run_dir / "metrics.csv") == list(c.METRICS_COLUMNS) + c.metrics_extra_columns(10, utc_time=False)
    header = _header(run_dir / "weights.csv")
    assert header == c.weights_columns(header[len(c.WEIGHTS_COLUMNS) :])


def test_every_csv_line_ends_in_a_newline_alone(tmp_path):
    """One text rule: \\n after every line, the header's included (updates.csv's header once ended in \\r\\n)."""
    run_dir = run(tmp_path, **WRITERS_SCENARIO)
    for path in run_dir.glob("*.csv"):
        data = path.read_bytes()
        assert b"\r" not in data and data.endswith(b"\n") and data.count(b"\n") >= 2, path.name
