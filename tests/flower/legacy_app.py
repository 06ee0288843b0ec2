"""The legacy twin of tests/flower/digits_app.py: the same training, written as most Flower apps and tutorials are,
``ServerApp(server_fn=...)`` with ``ServerConfig`` and the legacy ``flwr.server.strategy.FedAvg``, and a
``NumPyClient`` through ``ClientApp(client_fn=...)``.  Flower runs it in its legacy ``Server``: one pool thread per
sampled client, each calling ``grid.send_and_receive`` with one message.

Its replies carry the examples as Flower's compat layer writes them (``num_examples``), so its scenario sets
``flower.work.examples: num_examples``; accuracy is the ``eval_acc`` of the evaluate metrics, loss ``loss`` (the
``EvaluateRes.loss``).  ``ROUNDS`` collects the global parameters after every round (via ``evaluate_fn``).
"""

from __future__ import annotations

import numpy as np
import torch
from digits_app import world  # the same data, model and trainer (tests/flower is on sys.path)
from flwr.app import Context, MetricRecord
from flwr.client import NumPyClient
from flwr.clientapp import ClientApp
from flwr.common import ndarrays_to_parameters
from flwr.server import Server, ServerAppComponents, ServerConfig, SimpleClientManager
from flwr.server.strategy import FedAvg
from flwr.serverapp import ServerApp

from asyncfl.learn.trainer import TrainingJob, evaluate

ROUNDS: list[np.ndarray] = []  # the global parameters after each round of the latest run
FLOWER = {"work": {"examples": "num_examples"}, "metrics": {"accuracy": "eval_acc", "loss": "loss"}}


class DigitsClient(NumPyClient):
    """One partition of the digits data, trained by asyncfl's SequentialTrainer as digits_app's ClientApp does."""

    def __init__(self, context: Context) -> None:
        self.state = context.state
        self.client = int(context.node_config["partition-id"])

    def fit(self, parameters, config):
        w = world()
        attempts = int(self.state["tasks"]["train"]) if "tasks" in self.state else 0  # the Context lives on
        self.state["tasks"] = MetricRecord({"train": attempts + 1})
        base = torch.from_numpy(parameters[0].copy())
        version = int(config["server-round"]) - 1
        job = TrainingJob(self.client, version, attempts, w["scenario"].training.local_steps)
        result = w["trainer"].run(base, [job])[0]
        samples = len(w["federation"].client_train[self.client])
        return [(base + result.delta).numpy()], samples, {"train_loss": float(result.train_loss)}

    def evaluate(self, parameters, config):
        w = world()
        indices = w["federation"].client_test[self.client]
        accuracy, loss = evaluate(w["model"], torch.from_numpy(parameters[0].copy()), w["federation"], indices)[:2]
        return float(loss), len(indices), {"eval_acc": float(accuracy)}


def client_fn(context: Context):
    return DigitsClient(context).to_client()


client_app = ClientApp(client_fn=client_fn)


def server_fn(context: Context) -> ServerAppComponents:
    config = context.run_config
    ROUNDS.clear()

    def keep(server_round, ndarrays, _config):
        if server_round > 0:
            ROUNDS.append(ndarrays[0].copy())

    strategy = FedAvg(
        fraction_fit=1.0, fraction_evaluate=float(config.get("fraction-evaluate", 1.0)), min_fit_clients=1,
        min_evaluate_clients=1, min_available_clients=1, evaluate_fn=keep,
        on_fit_config_fn=lambda server_round: {"server-round": server_round},
        initial_parameters=ndarrays_to_parameters([world()["initial"].numpy()]),
    )  # fmt: skip
    rounds = int(config.get("num-server-rounds", 3))
    return ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=rounds, round_timeout=3600.0))


server_app = ServerApp(server_fn=server_fn)


def one_thread_server_fn(context: Context) -> ServerAppComponents:
    """:func:`server_fn` in a legacy ``Server`` whose thread pool has one thread (fewer than the clients sampled)."""
    parts = server_fn(context)
    server = Server(client_manager=SimpleClientManager(), strategy=parts.strategy)
    server.set_max_workers(1)
    return ServerAppComponents(server=server, config=parts.config)


one_thread_server_app = ServerApp(server_fn=one_thread_server_fn)
