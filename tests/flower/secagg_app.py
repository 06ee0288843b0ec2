"""A Flower app with secure aggregation and no training (numpy only), for the SecAgg+ tests of the virtual Grid.

The ServerApp is the legacy-strategy path Flower documents for SecAgg+: a ``LegacyContext`` with the legacy
``flwr.server.strategy.FedAvg``, Flower's ``SecAggPlusWorkflow`` as the fit workflow of its ``DefaultWorkflow``.
The ClientApp is a ``NumPyClient`` behind Flower's ``secaggplus_mod``.  Nothing of Flower is patched.

Partition i's client returns the parameters plus ``i + 1`` and reports ``num_examples`` = 10 (i + 1) (legacy replies
carry it as the metric ``num_examples``). Run config: ``num-server-rounds``, ``secagg`` (1: SecAgg+, 2: SecAgg with
``secagg_client_app``, 0: the plain fit workflow, same strategy and replies; run it with ``plain_client_app``),
``num-shares`` and ``reconstruction-threshold`` (as SecAggPlusWorkflow takes them: a float is a fraction),
``timeout`` (each stage's, virtual seconds; absent: none), ``fraction-evaluate``. :data:`SEEN` keeps each round's
aggregated parameters (``aggregate_fit``'s result) and what ``aggregate_fit`` received.
"""

from __future__ import annotations

import numpy as np
from flwr.app import Context
from flwr.client import NumPyClient
from flwr.client.mod import secagg_mod, secaggplus_mod
from flwr.clientapp import ClientApp
from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays
from flwr.server import LegacyContext, ServerConfig
from flwr.server.strategy import FedAvg
from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow, SecAggWorkflow
from flwr.serverapp import Grid, ServerApp

SIZES = (250, 3)  # two arrays: a "weight" and a "bias"
SEEN: dict = {}


class ShiftClient(NumPyClient):
    """Returns the parameters plus ``partition + 1`` after "training" on ``10 (partition + 1)`` examples."""

    def __init__(self, partition: int) -> None:
        self.partition = partition

    def fit(self, parameters, config):
        shifted = [p + np.float32(self.partition + 1) for p in parameters]
        return shifted, 10 * (self.partition + 1), {}

    def evaluate(self, parameters, config):
        return float(self.partition), 10, {"accuracy": self.partition / 10}


def client_fn(context: Context):
    return ShiftClient(int(context.node_config["partition-id"])).to_client()


client_app = ClientApp(client_fn=client_fn, mods=[secaggplus_mod])
plain_client_app = ClientApp(client_fn=client_fn)  # the same client without the mod, for the plain fit workflow
secagg_client_app = ClientApp(client_fn=client_fn, mods=[secagg_mod])  # for Flower's SecAgg (secagg: 2)


class RecordingFedAvg(FedAvg):
    """Flower's legacy FedAvg, noting each round's aggregated parameters and the results it got."""

    def aggregate_fit(self, server_round, results, failures):
        parameters, metrics = super().aggregate_fit(server_round, results, failures)
        SEEN.setdefault("results", []).append(sorted((proxy.node_id, fit.num_examples) for proxy, fit in results))
        SEEN.setdefault("failures", []).append(len(failures))
        if parameters is not None:
            SEEN.setdefault("aggregated", []).append([a.copy() for a in parameters_to_ndarrays(parameters)])
        return parameters, metrics


server_app = ServerApp()


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    config = context.run_config
    initial = [np.zeros(SIZES[0], dtype=np.float32), np.full(SIZES[1], 0.5, dtype=np.float32)]
    strategy = RecordingFedAvg(
        fraction_fit=1.0,
        fraction_evaluate=float(config.get("fraction-evaluate", 0.0)),
        min_fit_clients=2, min_evaluate_clients=1, min_available_clients=2,
        initial_parameters=ndarrays_to_parameters(initial),
    )  # fmt: skip
    legacy = LegacyContext(
        context=context, config=ServerConfig(num_rounds=int(config.get("num-server-rounds", 1))), strategy=strategy
    )
    fit_workflow = None
    if int(config.get("secagg", 1)):
        timeout = float(config["timeout"]) if "timeout" in config else None
        threshold = config.get("reconstruction-threshold", 0.5)
        if int(config.get("secagg", 1)) == 2:
            fit_workflow = SecAggWorkflow(reconstruction_threshold=threshold, timeout=timeout)
        else:
            fit_workflow = SecAggPlusWorkflow(
                num_shares=config.get("num-shares", 1.0), reconstruction_threshold=threshold, timeout=timeout
            )
    DefaultWorkflow(fit_workflow=fit_workflow)(grid, legacy)
