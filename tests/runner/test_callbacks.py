"""The run loop's callbacks (asyncfl.runner.callbacks), each on its own with fakes: no torch, no SimPy, no data."""

from __future__ import annotations

import math
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import aggregation_record as aggregation

from asyncfl.runner.callbacks.base import Progress, RunState
from asyncfl.runner.callbacks.checkpointer import Checkpointer
from asyncfl.runner.callbacks.metrics import MetricsRecorder
from asyncfl.runner.callbacks.progress_bar import ProgressBar
from asyncfl.runner.callbacks.round_log import RoundLog, rounds_row
from asyncfl.runner.callbacks.stop_rules import StopRules


class Rows:
    def __init__(self) -> None:
        self.rows: list[dict] = []

    def append(self, rows: list[dict]) -> None:  # the rows form of asyncfl.output.writing.Log.append
        self.rows.extend(dict(row) for row in rows)


class FakeOut:
    """Records what the callbacks write into the run directory."""

    def __init__(self) -> None:
        self.metrics, self.rounds = Rows(), Rows()
        self.events, self.updates, self.weights, self.flushes = [], [], [], 0

    def event(self, *args) -> None:
        self.events.append(args)

    def aggregated(self, version, clients, base_versions, staleness) -> None:
        self.updates.append((version, list(clients), list(base_versions), list(staleness)))

    def weight_rows(self, rows) -> None:
        self.weights.extend(rows)

    def flush(self) -> None:
        self.flushes += 1

    def offsets(self) -> dict:
        return {"events.jsonl": 123}


def stop(rounds=None, virtual_time_s=None, target_accuracy=None, at_target=True):
    return SimpleNamespace(
        rounds=rounds, virtual_time_s=virtual_time_s, target_accuracy=target_accuracy, at_target=at_target
    )


def _loaded(code: str) -> set[str]:
    code += "\nimport sys\nprint(' '.join(sys.modules))"
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())


def test_the_callbacks_need_neither_torch_nor_simpy():
    """(The package itself loads the schema, which imports the server modes and so SimPy.)"""
    modules = "base checkpointer metrics progress_bar round_log stop_rules"
    code = "; ".join(f"import asyncfl.runner.callbacks.{m}" for m in modules.split())
    added = _loaded(code) - _loaded("import asyncfl")
    assert "asyncfl.runner.callbacks.base" in added
    assert not {m for m in added if m.split(".")[0] in ("torch", "simpy")}
    assert "torch" not in _loaded(code)


@pytest.mark.parametrize(
    ("rules", "step", "status", "stops"),
    [
        (stop(rounds=5), aggregation(4, 10.0), "running", False),
        (stop(rounds=5), aggregation(5, 10.0), "running", True),  # the run loop then calls it finished
        (stop(rounds=50, virtual_time_s=9.0), aggregation(4, 9.0), "running", True),
        (stop(rounds=50), aggregation(4, 9.0, diverged=True), "diverged", True),
    ],
)
def test_stop_rules_limits_and_divergence(rules, step, status, stops):
    state = RunState()
    StopRules(rules).on_aggregation(state, step)
    assert (state.progress.status, state.stop) == (status, stops)


def test_target_stops_only_with_at_target_and_a_limit_reached_first_keeps_finished():
    state = RunState()
    state.progress.target_time = 7.0
    StopRules(stop(rounds=50, target_accuracy=0.8)).on_aggregation(state, aggregation(3, 8.0))
    assert (state.progress.status, state.stop) == ("target_reached", True)
    state = RunState()
    state.progress.target_time = 7.0
    StopRules(stop(rounds=50, target_accuracy=0.8, at_target=False)).on_aggregation(state, aggregation(3, 8.0))
    assert (state.progress.status, state.stop) == ("running", False)
    state = RunState()  # the round limit is checked before the target: the run ends "finished"
    state.progress.target_time = 7.0
    StopRules(stop(rounds=3, target_accuracy=0.8)).on_aggregation(state, aggregation(3, 8.0))
    assert (state.progress.status, state.stop) == ("running", True)


def test_metrics_recorder_evaluates_when_due_at_the_limit_and_on_divergence():
    out, calls = FakeOut(), []
    accuracies = iter([0.1, 0.5, 0.85, 0.7, 0.2])

    def evaluate():
        calls.append(1)
        return next(accuracies), 1.25, [0.0, 1.0]

    rules = stop(rounds=7, target_accuracy=0.8)
    recorder = MetricsRecorder(out, evaluate, 3, StopRules(rules), ["accuracy_class_0", "accuracy_class_1"])
    state = RunState()
    recorder.on_start(state)
    for version in range(1, 8):
        recorder.on_aggregation(state, aggregation(version, 10.0 * version, staleness=(0, 2), diverged=version == 5))
    evaluated = [r["round"] for r in out.metrics.rows if not math.isnan(r["test_accuracy"])]
    assert evaluated == [0, 3, 5, 6, 7]  # start, every 3rd, divergence at 5, the limit at 7
    assert len(calls) == 5
    row = out.metrics.rows[3]
    assert row["test_accuracy"] == 0.5 and row["accuracy_class_1"] == 1.0 and row["staleness_mean"] == 1.0
    assert math.isnan(out.metrics.rows[1]["test_accuracy"]) and math.isnan(out.metrics.rows[1]["accuracy_class_0"])
    assert out.metrics.rows[0]["updates"] == 0 and math.isnan(out.metrics.rows[0]["train_loss"])
    p = state.progress
    assert (p.best_accuracy, p.last_accuracy, p.target_time, p.target_round) == (0.85, 0.2, 50.0, 5)


def test_metrics_recorder_without_an_evaluator_writes_nan_and_keeps_no_accuracy():
    out = FakeOut()
    recorder = MetricsRecorder(out, None, 1, StopRules(stop(rounds=2)), [], lambda now: {"utc_time": f"T{now:g}"})
    state = RunState()
    recorder.on_start(state)
    recorder.on_aggregation(state, aggregation(1, 4.0))
    assert all(math.isnan(r["test_accuracy"]) for r in out.metrics.rows)
    assert [r["utc_time"] for r in out.metrics.rows] == ["T0", "T4"]
    assert math.isnan(state.progress.best_accuracy)


def test_checkpointer_cadence_by_rounds_by_time_and_at_the_stop():
    out, saved = FakeOut(), []
    every = SimpleNamespace(every_rounds=3, every_virtual_s=25.0, min_wall_s=0.0)
    checkpointer = Checkpointer(out, every, saved.append, lambda: {"params": "w"})
    state = RunState()
    checkpointer.on_start(state)
    times = {1: 5.0, 2: 10.0, 3: 12.0, 4: 20.0, 5: 40.0, 6: 41.0}
    for version, now in times.items():
        state.stop = version == 6
        checkpointer.on_aggregation(state, aggregation(version, now))
    assert [(c["aggregations"], c["time"], c["stop"]) for c in saved] == [
        (0, 0.0, False),
        (3, 12.0, False),  # 3 rounds since the start
        (5, 40.0, False),  # 28 virtual seconds since the last one
        (6, 41.0, True),  # the run stops
    ]
    assert saved[1]["learner"] == {"params": "w"} and saved[1]["offsets"] == {"events.jsonl": 123}
    state.progress.count(aggregation(6, 1.0, staleness=(0, 2), loss=0.1))
    progress = Progress(**saved[-1]["progress"])  # a plain dict (checkpoints load with weights_only)
    assert (progress.status, progress.rounds, progress.staleness) == ("running", 0, [])  # as it was then
    assert state.progress.staleness == [0, 2]
    assert out.flushes == 7  # every aggregation is flushed: by a checkpoint or on its own


def test_checkpointer_disabled_only_flushes_and_resumes_its_cadence_from_the_checkpoint():
    out, saved = FakeOut(), []
    never = SimpleNamespace(every_rounds=None, every_virtual_s=None, min_wall_s=0.0)
    checkpointer = Checkpointer(out, never, saved.append, dict)
    state = RunState()
    checkpointer.on_start(state)
    checkpointer.on_aggregation(state, aggregation(1, 1.0))
    assert saved == [] and out.flushes == 2
    every_4 = SimpleNamespace(every_rounds=4, every_virtual_s=None, min_wall_s=0.0)
    resumed = Checkpointer(out, every_4, saved.append, dict)
    resumed.on_resume(state, {"aggregations": 8, "time": 80.0})
    assert not resumed.due(11, 90.0) and resumed.due(12, 90.0)


def test_a_due_checkpoint_waits_for_min_wall_s_but_the_stop_never_does():
    """every_rounds 1 and min_wall_s 10 on a wall clock set by hand: saves at 0 s (start), then the first
    aggregation 10 s or more after the last save, and the stopping one at once."""
    out, saved = FakeOut(), []
    every = SimpleNamespace(every_rounds=1, every_virtual_s=None, min_wall_s=10.0)
    checkpointer = Checkpointer(out, every, saved.append, dict)
    state = RunState()
    wall = {"now": 0.0}
    state.wall_seconds = lambda: wall["now"]  # type: ignore[method-assign]
    checkpointer.on_start(state)
    for version, wall_s in enumerate([3.0, 9.9, 10.0, 15.0, 19.0, 20.5, 21.0], start=1):
        wall["now"] = wall_s
        state.stop = version == 7
        checkpointer.on_aggregation(state, aggregation(version, float(version)))
    assert [c["aggregations"] for c in saved] == [0, 3, 6, 7]
    assert [c["elapsed_s"] for c in saved] == [0.0, 10.0, 20.5, 21.0]
    assert out.flushes == 8  # every aggregation still flushed


def test_round_log_writes_the_aggregation_records():
    out = FakeOut()
    step = aggregation(4, 8.0, staleness=(0, 3), arrivals=(4.0, 6.5), task_s=(3.0, 6.0))
    RoundLog(out, ["charging"]).on_aggregation(RunState(), step)
    assert out.events == [(8.0, None, "aggregate", 4, None)]
    assert out.updates == [(4, [1, 1], [3, 0], [0, 3])]  # base version = round - 1 - staleness
    assert out.weights == [{"round": 4, "client": 1, "weight": 0.5}]
    row = out.rounds.rows[0]
    assert row == rounds_row(step, ["charging"])
    assert row["selected"] == 3 and row["received"] == 2 and row["staleness_max"] == 3
    assert row["wait_slowest_s"] == 6.5 - 6.0 and row["slowest_task_s"] == 6.0 and row["failed_charging"] == 4


def test_progress_counts_and_the_bar_goes_on_from_a_resumed_checkpoint(capsys):
    progress = Progress()
    progress.count(aggregation(3, 1.0, staleness=(0, 1, 2), loss=0.1))
    assert progress.rounds == 3 and progress.staleness == [0, 1, 2]
    bar = ProgressBar(10, quiet=False)
    state = RunState(progress)
    bar.on_resume(state, {"aggregations": 4})
    bar.on_aggregation(state, aggregation(5, 3.0))
    bar.on_end(state, 3.0)
    assert "5/10" in capsys.readouterr().err
    quiet = ProgressBar(10, quiet=True)
    quiet.on_start(state)
    quiet.on_aggregation(state, aggregation(1, 3.0))
    quiet.on_end(state, 3.0)
    assert capsys.readouterr().err == ""


def _end_of_run(tmp_path, availability: dict, status: str, accuracies: list[float]):
    """The end-of-run callbacks over a real timing-world population (no torch) and a learner stand-in."""
    from asyncfl.config import validate_scenario
    from asyncfl.output.run_directory import CHECKPOINT_FILE, RunDirectory
    from asyncfl.runner.callbacks.end_of_run import end_of_run
    from asyncfl.sim.population import build_clients, participation_probabilities

    s = validate_scenario({
        "name": "summary", "timing_only": True, "data": {"clients": 4}, "population": {"availability": availability},
        "output": {"plot": False}, "stop": {"rounds": 3},
    })  # fmt: skip
    clients = build_clients(s.population, 4, s.seed)
    probabilities = participation_probabilities(s.population.availability, 4, s.seed)
    learner = SimpleNamespace(
        client_accuracies=lambda: accuracies,
        client_test_sizes=list,
        strategy=None,
        jobs=SimpleNamespace(computed=0, trainer=None),
        final_arrays=lambda: None,
    )
    out = RunDirectory(tmp_path)
    (tmp_path / CHECKPOINT_FILE).write_bytes(b"saved")
    callbacks = end_of_run(s, out, clients, probabilities, learner, "cpu", [(0.0, 50.0, 0), (50.0, 100.0, 1)], [])
    state = RunState()
    state.progress.status, state.progress.rounds = status, 2
    state.progress.count(aggregation(2, 1.0, staleness=(0, 1, 1), loss=0.3))
    for callback in callbacks:
        callback.on_end(state, 100.0)
    return tmp_path, (tmp_path / CHECKPOINT_FILE).exists()


def test_end_of_run_writes_clients_summary_and_drops_an_ended_runs_checkpoint(tmp_path):
    import json

    from conftest import table

    run_dir, kept = _end_of_run(tmp_path, {"kind": "always"}, "finished", [0.5, 0.25, math.nan, 1.0])
    rows = table(run_dir / "clients.csv")
    assert [r["client"] for r in rows] == ["0", "1", "2", "3"]
    assert [r["accuracy"] for r in rows] == ["0.5", "0.25", "", "1.0"]
    assert all(float(r["idle_s"]) == 100.0 and float(r["offline_s"]) == 0.0 for r in rows)  # nobody acted
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["status"], summary["rounds"], summary["updates"], summary["virtual_time_s"]) == (
        "finished", 2, 3, 100.0,
    )  # fmt: skip
    assert summary["staleness_mean"] == pytest.approx(2 / 3) and summary["final_accuracy"] is None
    assert not kept  # an ended run cannot be resumed: its checkpoint goes


def test_end_of_run_keeps_an_interrupted_runs_checkpoint_and_measures_offline_time(tmp_path):
    from conftest import table

    run_dir, kept = _end_of_run(tmp_path, {"kind": "cyclic", "p": 0.5, "period_s": 20.0}, "interrupted", [])
    rows = table(run_dir / "clients.csv")
    for r in rows:  # online half of every 20 s: 50 s offline in [0, 100], the rest idle
        assert float(r["offline_s"]) == pytest.approx(50.0) and float(r["idle_s"]) == pytest.approx(50.0)
        assert float(r["availability_p"]) == 0.5
    assert kept


def test_the_end_of_run_callbacks_need_no_torch():
    assert "torch" not in _loaded("import asyncfl.runner.callbacks.end_of_run")
