"""The cross-check: Flower's own FedAvg (flwr.serverapp.strategy.FedAvg) on the virtual Grid gives the same global
parameters, round by round, as asyncfl's FedAvg on the same clients, seeds, data partitions and training.

Both sides train with asyncfl's SequentialTrainer (tests/flower/digits_app.py: the ClientApp trains its partition
with the job asyncfl's runner would submit: same client, base version, attempt and steps), so the local models are
bit-identical; the aggregations differ in arithmetic only: Flower averages the local models,
sum_i (n_i / n) w_i in numpy, asyncfl adds the weighted mean of the deltas, w + sum_i (n_i / n) (w_i - w) in
torch, both in float32.  Hence a tolerance of a few float32 ulps of the weights: |w| < 0.2 here, and the largest
difference seen is 3e-8 (two ulps at 0.19); the test allows 1e-6 absolute.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")

import digits_app  # noqa: E402  (tests/flower is on sys.path)

import asyncfl  # noqa: E402
import asyncfl.flower  # noqa: E402
from asyncfl.config import validate_scenario  # noqa: E402
from asyncfl.runner.callbacks.base import Callback  # noqa: E402
from asyncfl.runner.simulation import Simulation  # noqa: E402

ROUNDS = 3


class KeepParameters(Callback):
    """The native run's global parameters after every aggregation."""

    def __init__(self) -> None:
        self.simulation: Simulation | None = None
        self.rounds: list[np.ndarray] = []

    def on_aggregation(self, state, record) -> None:
        self.rounds.append(self.simulation.live_learner.params.numpy().copy())


def test_flower_fedavg_on_the_grid_matches_asyncfl_fedavg_round_by_round(tmp_path):
    sections = {**digits_app.SECTIONS, "stop": {"rounds": ROUNDS}, "output": {"plot": False}}
    keep = KeepParameters()
    (tmp_path / "native").mkdir()
    native = Simulation(validate_scenario(sections), tmp_path / "native", callbacks=[keep])
    keep.simulation = native
    native.run()

    flower = {"run_config": {"num-server-rounds": ROUNDS, "fraction-evaluate": 0.0}}
    run = asyncfl.flower.run(
        digits_app.server_app, digits_app.client_app, {**sections, "flower": flower}, tmp_path / "f"
    )
    assert len(digits_app.ROUNDS) == len(keep.rounds) == ROUNDS
    for flower_params, native_params in zip(digits_app.ROUNDS, keep.rounds):
        assert not np.array_equal(flower_params, digits_app.world()["initial"].numpy())
        np.testing.assert_allclose(flower_params, native_params, rtol=0, atol=1e-6)
    # the same aggregations, as both run directories record them
    assert list(run.rounds["received"]) == [digits_app.CLIENTS] * ROUNDS
    native = asyncfl.read_run(tmp_path / "native")
    assert list(run.metrics["round"]) == list(native.metrics["round"]) == list(range(ROUNDS + 1))
    # the clients' training losses, from the replies' train_loss metric: the same mean per round
    np.testing.assert_allclose(run.metrics["train_loss"][1:], native.metrics["train_loss"][1:], rtol=1e-6)
