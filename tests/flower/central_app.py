"""A ServerApp for the stop and server-side evaluation tests: Flower's FedAvg on toy_app's ClientApp (every reply
is the arrays plus one, so after round r every weight is r), with an ``evaluate_fn`` when the run config's
``central`` is true: central accuracy = r / 10 and central loss = 1 / (1 + r) (hand-checkable), recorded in
:data:`CALLS`; after ``start()`` returns the app saves the result's arrays to the run config's ``final-path``."""

from __future__ import annotations

import numpy as np
from flwr.app import Array, ArrayRecord, Context, MetricRecord
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

CALLS: list[int] = []  # server rounds evaluate_fn was called with

server_app = ServerApp()


def central(server_round: int, arrays: ArrayRecord) -> MetricRecord:
    CALLS.append(server_round)
    w = float(arrays["w"].numpy().mean())
    return MetricRecord({"accuracy": w / 10, "loss": 1 / (1 + w)})


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    config = context.run_config
    strategy = FedAvg(
        fraction_evaluate=float(config.get("fraction-evaluate", 1.0)),
        min_available_nodes=1, min_train_nodes=1, min_evaluate_nodes=1,
    )  # fmt: skip
    initial = ArrayRecord({"w": Array(np.zeros(4, dtype=np.float32))})
    evaluate_fn = central if config.get("central", False) else None
    result = strategy.start(grid, initial, num_rounds=int(config["num-server-rounds"]), evaluate_fn=evaluate_fn)
    np.savez(str(config["final-path"]), **{key: array.numpy() for key, array in result.arrays.items()})
