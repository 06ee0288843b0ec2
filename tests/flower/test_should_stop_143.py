"""flwr 1.43's early stop: its ``Strategy.start(..., should_stop=...)``.  flwr 1.43 is not installable here, so the
test puts a 1.43-shaped ``start`` on flwr's base ``Strategy`` (which FedAvg inherits, as under 1.43): Flower's 1.42
round loop (train, aggregate, evaluate, aggregate, server-side evaluation) with ``should_stop`` asked before each
round.  The run's stop rules must reach it (the strategy leaves its loop itself: no round after the stop is begun,
no evaluate_fn call after it), the app's code after ``start()`` must run, summary.json must say what stopped it,
and an app's own ``should_stop`` must still be heard (asked every round; either one stops).

central_app.py: after round r every weight is r; its evaluate_fn is recorded in central_app.CALLS."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

import central_app  # noqa: E402  (tests/flower is on sys.path)
import toy_app  # noqa: E402
from flwr.app import Array, ArrayRecord, ConfigRecord, Context  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402
from flwr.serverapp.strategy import FedAvg, Result, Strategy  # noqa: E402

import asyncfl.flower  # noqa: E402

BEGUN: list[int] = []  # rounds the 1.43-shaped loop began
GIVEN: list = []  # the should_stop each start() call was given


def start_143(
    self, grid, initial_arrays, num_rounds=3, timeout=3600, train_config=None, evaluate_config=None,
    evaluate_fn=None, should_stop=None,
) -> Result:  # fmt: skip
    """Flower 1.42's ``Strategy.start`` loop, with 1.43's ``should_stop`` asked before each round."""
    GIVEN.append(should_stop)
    train_config = ConfigRecord() if train_config is None else train_config
    evaluate_config = ConfigRecord() if evaluate_config is None else evaluate_config
    result, arrays = Result(), initial_arrays
    if evaluate_fn:
        evaluate_fn(0, initial_arrays)
    for current_round in range(1, num_rounds + 1):
        if should_stop is not None and should_stop(current_round, arrays):
            break
        BEGUN.append(current_round)
        replies = grid.send_and_receive(
            self.configure_train(current_round, arrays, train_config, grid), timeout=timeout
        )
        aggregated, _ = self.aggregate_train(current_round, replies)
        if aggregated is not None:
            result.arrays = arrays = aggregated
        replies = grid.send_and_receive(
            self.configure_evaluate(current_round, arrays, evaluate_config, grid), timeout=timeout
        )
        self.aggregate_evaluate(current_round, replies)
        if evaluate_fn:
            evaluate_fn(current_round, arrays)
    return result


@pytest.fixture
def flwr_143(monkeypatch):
    BEGUN.clear(), GIVEN.clear(), central_app.CALLS.clear(), ASKED.clear()
    monkeypatch.setattr(Strategy, "start", start_143)
    yield
    assert Strategy.start is start_143  # the run put back the start it found


def _summary(run) -> dict:
    return json.loads((run.path / "summary.json").read_text())


def test_the_stop_rules_reach_should_stop_and_the_app_saves_its_model(tmp_path: Path, flwr_143):
    config = {"num-server-rounds": 6, "final-path": str(tmp_path / "app_final.npz"), "central": True}
    keys = {"data": {"clients": 3}, "output": {"plot": False}, "stop": {"rounds": 3}, "flower": {"run_config": config}}
    run = asyncfl.flower.run(central_app.server_app, toy_app.client_app, keys, tmp_path / "run")
    assert len(GIVEN) == 1 and GIVEN[0] is not None  # asyncfl passed the run's stop as should_stop
    assert BEGUN == [1, 2, 3]  # the strategy left its loop itself before round 4
    assert central_app.CALLS == [0, 1, 2, 3]  # no server-side evaluation after the stop (1.42 path: 0..6)
    assert np.load(tmp_path / "app_final.npz")["w"].tolist() == [3.0] * 4  # the app's code after start() ran
    assert np.load(run.path / "final_model.npz")["w"].tolist() == [3.0] * 4
    summary = _summary(run)
    assert (summary["status"], summary["stopped_by"], summary["rounds"]) == ("finished", "stop.rounds", 3)
    assert list(run.rounds["round"]) == [1, 2, 3]


ASKED: list[int] = []  # rounds the app's own should_stop was asked about
own_stop_app = ServerApp()


@own_stop_app.main()
def stops_itself(grid: Grid, context: Context) -> None:
    """FedAvg with an early stop of its own: stop before round ``app-stops-before``."""
    before = int(context.run_config["app-stops-before"])

    def should_stop(server_round: int, arrays: ArrayRecord) -> bool:
        ASKED.append(server_round)
        return server_round >= before

    strategy = FedAvg(fraction_evaluate=0.0, min_available_nodes=1, min_train_nodes=1)
    initial = ArrayRecord({"w": Array(np.zeros(4, dtype=np.float32))})
    result = strategy.start(grid, initial, num_rounds=8, should_stop=should_stop)
    np.savez(str(context.run_config["final-path"]), w=result.arrays["w"].numpy())


@pytest.mark.parametrize(
    "before, rounds, asked, stopped_by",
    [(3, 10, [1, 2, 3], "server_app"), (9, 4, [1, 2, 3, 4, 5], "stop.rounds")],
    ids=["the app's own stops first", "the run's stop fires first"],
)
def test_an_apps_own_should_stop_is_asked_every_round_beside_the_runs(
    tmp_path: Path, flwr_143, before, rounds, asked, stopped_by
):
    config = {"app-stops-before": before, "final-path": str(tmp_path / "app_final.npz")}
    keys = {
        "data": {"clients": 3},
        "output": {"plot": False},
        "stop": {"rounds": rounds},
        "flower": {"run_config": config},
    }
    run = asyncfl.flower.run(own_stop_app, toy_app.client_app, keys, tmp_path / "run")
    done = min(before - 1, rounds)
    assert ASKED == asked and BEGUN == list(range(1, done + 1))
    assert np.load(tmp_path / "app_final.npz")["w"].tolist() == [float(done)] * 4
    assert _summary(run)["stopped_by"] == stopped_by
