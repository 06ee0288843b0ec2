"""output.format: parquet: the population-scale tables as Parquet files holding the very values their
CSV text means, read back by pandas, the API, the figures and the studies; CSV while a run can resume."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import scenario

from asyncfl.api import read_run
from asyncfl.cli import main
from asyncfl.errors import ConfigError
from asyncfl.output.csv_text import round6
from asyncfl.output.reading import has_table, load_table, read_table, table_file
from asyncfl.output.run_directory import RunDirectory
from asyncfl.output.writing import csv_to_parquet, write_table
from asyncfl.runner import simulation, start
from asyncfl.runner.callbacks.offline_periods import OfflinePeriods
from asyncfl.study.cost import run_costs

TABLES = ("metrics", "rounds", "updates", "weights", "clients")

RUN = dict(
    data={"dataset": "digits", "clients": 10},
    model={"name": "logreg"},
    training={"local_steps": 2},
    population={"availability": {"kind": "bernoulli", "p": {"dist": "uniform", "low": 0.4, "high": 1.0}}},
    server={"mode": "sync", "deadline_s": 5.0, "clients_per_round": 6},
    algorithm={"name": "fedavg", "record_weights": True},
    stop={"rounds": 6},
    checkpoint={"every_rounds": 2, "min_wall_s": 0},
    output={"plot": False},
)


def test_write_table_rounds_like_csv_and_stores_nan_as_null(tmp_path):
    columns = {
        "client": [0, 1, 2],
        "speed": [1.23456789, math.nan, 2.0000004],  # CSV writes 1.234568, an empty field, 2.0
        "share": np.array([0.1234565, 1 / 3, 7.0]),  # a numpy column: 0.123457 (round half even on the double)
    }
    csv_file = write_table(tmp_path / "a", columns, "csv")
    parquet_file = write_table(tmp_path / "b", columns, "parquet")
    assert csv_file.name == "a.csv" and parquet_file.name == "b.parquet"
    assert csv_file.read_text().splitlines() == [
        "client,speed,share", f"0,1.234568,{round(0.1234565, 6)!r}", "1,,0.333333", "2,2.0,7.0"
    ]  # fmt: skip
    stored = pd.read_parquet(parquet_file)
    assert stored["client"].tolist() == [0, 1, 2] and stored["client"].dtype == np.int64
    assert (
        stored["speed"].iloc[0] == 1.234568 and math.isnan(stored["speed"].iloc[1]) and stored["speed"].iloc[2] == 2.0
    )
    assert stored["share"].tolist() == [round(0.1234565, 6), 0.333333, 7.0]
    pd.testing.assert_frame_equal(pd.read_csv(csv_file), stored)
    as_lists = write_table(tmp_path / "lists", {k: list(np.asarray(v).tolist()) for k, v in columns.items()}, "csv")
    assert as_lists.read_bytes() == csv_file.read_bytes()  # numpy columns write the text lists of numbers write
    assert write_table(tmp_path / "empty", {"client": []}, "parquet") is None and not list(tmp_path.glob("empty*"))
    with pytest.raises(ValueError, match="output.format"):
        write_table(tmp_path / "c", columns, "xlsx")


def test_csv_to_parquet_keeps_text_columns_text_and_empty_columns_numbers(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("time,round,test_accuracy,utc_time\n0.0,0,,2026-01-05T00:00:00+00:00\n1.5,1,,\n")
    target = csv_to_parquet(path)
    assert target == tmp_path / "metrics.parquet" and path.exists()  # the CSV goes later (drop_converted_logs)
    table = pd.read_parquet(target)
    assert table["test_accuracy"].dtype == np.float64 and table["test_accuracy"].isna().all()  # not Arrow's null type
    assert table["utc_time"].iloc[0] == "2026-01-05T00:00:00+00:00"  # text, not a timestamp
    assert table["time"].tolist() == [0.0, 1.5] and table["round"].tolist() == [0, 1]
    assert read_table(tmp_path / "metrics.csv")["round"].tolist() == [0, 1]  # named by its CSV file, found anyway


def test_readers_prefer_the_whole_parquet_file_and_report_a_damaged_one(tmp_path):
    (tmp_path / "rounds.csv").write_text("time,round,started,received\n1.0,1,0.0,3\n")
    assert table_file(tmp_path / "rounds.csv") == tmp_path / "rounds.csv" and has_table(tmp_path / "rounds.csv")
    write_table(tmp_path / "rounds", {"time": [1.0, 2.0], "round": [1, 2], "started": [0.0, 1.0], "received": [3, 4]},
                "parquet")  # fmt: skip
    assert load_table(tmp_path / "rounds.csv")["round"].tolist() == [1, 2]  # a crash mid-conversion leaves both
    (tmp_path / "updates.parquet").write_bytes(b"PAR1 cut short")
    with pytest.raises(ConfigError, match="updates.parquet.*damaged"):
        read_table(tmp_path / "updates.csv")
    assert not has_table(tmp_path / "clients.csv")


def test_a_run_that_can_resume_keeps_csv_and_one_that_ended_becomes_parquet(tmp_path):
    for status, expected in (("interrupted", "csv"), ("finished", "parquet"), ("diverged", "parquet")):
        (tmp_path / status).mkdir()
        out = RunDirectory(tmp_path / status, events="none", format="parquet")
        out.metrics.append([{"time": 0.0, "round": 0, "test_accuracy": 0.5}])
        assert out.settle_format(status) == expected
        out.write_columns("clients.csv", {"client": [0, 1], "attempts": [2, 0]})
        out.close()
        names = {p.name for p in (tmp_path / status).iterdir()}
        assert {
            "metrics.csv",
            "metrics." + expected,
            "clients." + expected,
        } <= names  # CSV logs: until the checkpoint goes
        out.drop_converted_logs()
        names = {p.name for p in (tmp_path / status).iterdir()}
        assert ("metrics.csv" in names) == (expected == "csv") and "timeline_tasks.csv" in names  # small logs stay CSV


def _tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    return {name: load_table(run_dir / f"{name}.csv").drop(columns="wall_seconds", errors="ignore") for name in TABLES}


def test_a_parquet_run_holds_the_same_values_as_the_csv_run(tmp_path):
    csv_dir = start.run_scenario(scenario(**RUN), tmp_path / "csv", quiet=True)
    pq_dir = start.run_scenario(scenario(**{**RUN, "output": {"plot": False, "format": "parquet"}}), tmp_path / "pq",
                                 quiet=True)  # fmt: skip
    for name in TABLES:
        assert (pq_dir / f"{name}.parquet").is_file() and not (pq_dir / f"{name}.csv").exists(), name
        assert (csv_dir / f"{name}.csv").is_file() and not (csv_dir / f"{name}.parquet").exists(), name
    csv_tables, pq_tables = _tables(csv_dir), _tables(pq_dir)
    for name in TABLES:
        pd.testing.assert_frame_equal(csv_tables[name], pq_tables[name], check_dtype=False, obj=name)
    summary = json.loads((pq_dir / "summary.json").read_text())
    assert summary["format"] == "parquet" and "format" not in json.loads((csv_dir / "summary.json").read_text())
    assert "format" not in (csv_dir / "config.yaml").read_text()  # opt-in key: a CSV run's config.yaml is as it was
    assert "format: parquet" in (pq_dir / "config.yaml").read_text()
    run = read_run(pq_dir)
    assert len(run.updates) == summary["updates"] and len(run.metrics) == summary["rounds"] + 1
    assert main(["plot", str(pq_dir)]) == 0  # every figure from the Parquet files
    assert {"accuracy_vs_time.png", "participation.png", "time_breakdown.png"} <= {p.name for p in pq_dir.glob("*.png")}
    assert run_costs(pq_dir) == run_costs(csv_dir)  # the studies' readers (updates, clients) find either file
    out = tmp_path / "compared"
    assert main(["compare", str(csv_dir), str(pq_dir), "--label", "csv", "--label", "parquet", "--out", str(out)]) == 0
    runs = pd.read_csv(out / "runs.csv").set_index("variant")
    assert runs.loc["csv", "final_accuracy"] == runs.loc["parquet", "final_accuracy"]


def test_resume_after_a_kill_continues_the_logs_then_writes_the_same_parquet_files(tmp_path, monkeypatch):
    s = scenario(**{**RUN, "output": {"plot": False, "format": "parquet"}})
    reference = start.run_scenario(s, tmp_path / "reference", quiet=True)
    killed = tmp_path / "killed"
    seen = {"events": 0}
    log = simulation.Simulation._log

    class Killed(BaseException):
        pass

    def dying_log(self, *args):
        seen["events"] += 1
        if seen["events"] == 40:  # mid-run, after a checkpoint: logs on disk, no summary
            self.out.close()
            raise Killed
        log(self, *args)

    monkeypatch.setattr(simulation.Simulation, "_log", dying_log)
    monkeypatch.setattr(simulation.Simulation, "finish", lambda self, now: None)
    with pytest.raises(Killed):
        start.run_scenario(s, killed, quiet=True)
    monkeypatch.undo()
    assert (killed / "metrics.csv").is_file() and not (killed / "metrics.parquet").exists()  # crash: CSV, readable
    assert 3 <= len(read_table(killed / "metrics.csv")) < 7  # killed after round 2 (a checkpoint), before round 6
    start.resume_run(killed)
    for name, table in _tables(reference).items():
        pd.testing.assert_frame_equal(table, _tables(killed)[name], obj=name)
    assert not list(killed.glob("metrics.csv"))


def test_format_is_validated_and_parquet_needs_pyarrow(monkeypatch):
    with pytest.raises(ConfigError, match=r"output\.format: Input should be 'csv' or 'parquet'"):
        scenario(output={"format": "xlsx"})
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a))
    with pytest.raises(ConfigError, match=r"output\.format: parquet needs pyarrow.*asyncfl\[parquet\]"):
        scenario(output={"format": "parquet"})
    assert scenario(output={"format": "csv"}).output.format == "csv"


def test_round6_is_pythons_round_on_every_value():
    rng = np.random.default_rng(7)
    values = np.concatenate([
        rng.lognormal(0, 4, 200_000),  # speeds, seconds: from 1e-6 to 1e6
        -rng.uniform(0, 1e4, 50_000),
        (rng.integers(0, 10**9, 50_000) + 0.5) / 1e6,  # the decimal is a tie: .xxxxxx5
        np.array([0.0078125, 2.5e-6, 0.5e-6, 1.5e-6, -0.0, 4.5e9 + 0.123456789, 1e300, 2.0**-30]),
        np.array([math.inf, -math.inf, math.nan]),
    ])  # fmt: skip
    ours = round6(values)
    python = [round(v, 6) for v in values.tolist()]
    assert ours.tolist()[:-1] == python[:-1] and math.isnan(ours[-1])
    assert round6(np.array([0.0078125]))[0] == 0.007812  # 7812.5 exactly: half to even, as Python


def test_a_crash_while_the_run_ends_leaves_both_files_and_resumes_to_the_same_tables(tmp_path, monkeypatch):
    """Killed after the logs were written as Parquet, before the checkpoint went: the Parquet files
    are whole (readers take them), the CSV logs and the checkpoint are there, and a resume (which
    drops the Parquet files and continues the CSV logs) ends with the reference's tables."""
    s = scenario(**{**RUN, "output": {"plot": False, "format": "parquet"}})
    reference = start.run_scenario(s, tmp_path / "reference", quiet=True)

    class Killed(BaseException):
        pass

    def die(self, state, now):
        raise Killed

    monkeypatch.setattr(OfflinePeriods, "on_end", die)  # the callback after CloseLogs
    with pytest.raises(Killed):
        start.run_scenario(s, tmp_path / "crashed", quiet=True)
    monkeypatch.undo()
    crashed = tmp_path / "crashed"
    for name in ("metrics", "rounds", "updates", "weights"):
        assert (crashed / f"{name}.csv").is_file() and (crashed / f"{name}.parquet").is_file(), name
    assert (crashed / "checkpoint.pt").is_file()
    pd.testing.assert_frame_equal(load_table(crashed / "metrics.csv"), pd.read_parquet(crashed / "metrics.parquet"))
    start.resume_run(crashed)
    for name, table in _tables(reference).items():
        pd.testing.assert_frame_equal(table, _tables(crashed)[name], obj=name)
    assert not (crashed / "checkpoint.pt").exists() and not (crashed / "metrics.csv").exists()
