"""Every run file's columns are declared once (asyncfl.output.columns), each with its meaning, and a
run writes exactly those headers."""

from __future__ import annotations

import csv
import subprocess
import sys

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
