"""A Flower run's stop: rules end the rounds without an exception through the ServerApp (its code after
``start()`` runs), summary.json says what stopped it, and a strategy's server-side ``evaluate_fn`` is recorded in
metrics.csv's central columns, where ``stop.target_accuracy`` reads it (central_app.py: after round r every
weight is r, central accuracy r / 10, central loss 1 / (1 + r))."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

import central_app  # noqa: E402  (tests/flower is on sys.path)
import toy_app  # noqa: E402

import asyncfl.flower  # noqa: E402


def _run(tmp_path: Path, stop: dict, **run_config):
    central_app.CALLS.clear()
    config = {"num-server-rounds": 6, "final-path": str(tmp_path / "app_final.npz"), **run_config}
    keys = {"data": {"clients": 3}, "output": {"plot": False}, "stop": stop, "flower": {"run_config": config}}
    return asyncfl.flower.run(central_app.server_app, toy_app.client_app, keys, tmp_path / "run")


def _summary(run) -> dict:
    return json.loads((run.path / "summary.json").read_text())


def test_stop_rounds_lets_the_app_finish_and_save_its_model(tmp_path):
    run = _run(tmp_path, {"rounds": 3})
    saved = np.load(tmp_path / "app_final.npz")  # the app's code after start() ran
    assert saved["w"].tolist() == [3.0] * 4  # round 3's aggregate: the rounds after the stop aggregated nothing
    assert np.load(run.path / "final_model.npz")["w"].tolist() == [3.0] * 4  # asyncfl's own: what start() returned
    assert list(run.rounds["round"]) == [1, 2, 3]
    summary = _summary(run)
    assert (summary["status"], summary["stopped_by"], summary["rounds"]) == ("finished", "stop.rounds", 3)
    assert list(run.metrics["round"]) == [0, 1, 2, 3]
    assert "central_accuracy" not in run.metrics.columns  # the app did not evaluate on the server


def test_a_server_app_that_ends_by_itself_is_stopped_by_the_server_app(tmp_path):
    run = _run(tmp_path, {"rounds": 10}, **{"num-server-rounds": 2})
    assert _summary(run)["stopped_by"] == "server_app" and run.status == "finished"


def test_server_side_evaluation_goes_to_the_central_columns_at_each_rounds_time(tmp_path):
    run = _run(tmp_path, {"rounds": 3}, central=True)
    metrics = run.metrics.to_dict("records")
    assert [m["round"] for m in metrics] == [0, 1, 2, 3]
    assert [m["central_accuracy"] for m in metrics] == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert [m["central_loss"] for m in metrics] == pytest.approx([1.0, 1 / 2, 1 / 3, 1 / 4])
    # beside the federated evaluation (toy_app: partition p reports eval_acc p / 10 on 10 examples: mean 0.1)
    assert [m["test_accuracy"] for m in metrics[1:]] == pytest.approx([0.1] * 3) and math.isnan(
        metrics[0]["test_accuracy"]
    )
    rounds = run.rounds.to_dict("records")
    assert [m["time"] for m in metrics[1:]] > [r["time"] for r in rounds]  # after each round's evaluate trip
    assert central_app.CALLS == [0, 1, 2, 3, 4, 5, 6]  # Flower calls it on; the rounds after the stop are not recorded


def test_target_accuracy_stops_on_the_central_accuracy_when_there_is_no_federated_one(tmp_path):
    """Central accuracy 0.1 r reaches 0.25 at round 3; no federated evaluation (fraction-evaluate 0)."""
    run = _run(tmp_path, {"rounds": 10, "target_accuracy": 0.25}, central=True, **{"fraction-evaluate": 0.0})
    summary = _summary(run)
    assert (summary["status"], summary["stopped_by"]) == ("target_reached", "stop.target_accuracy")
    assert summary["rounds_to_target"] == 3 and summary["final_accuracy"] == pytest.approx(0.3)
    assert list(run.rounds["round"]) == [1, 2, 3]
    assert run.metrics["central_accuracy"].tolist() == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert np.load(tmp_path / "app_final.npz")["w"].tolist() == [3.0] * 4
