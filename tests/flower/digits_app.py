"""A tiny Flower app for the tests: asyncfl's digits data (offline), trained with asyncfl's own local training
(:class:`asyncfl.learn.trainer.SequentialTrainer`), so that a Flower FedAvg run and asyncfl's FedAvg run train
identically and their global parameters can be compared round by round.

The ServerApp runs Flower's own ``FedAvg`` (``flwr.serverapp.strategy``); its run config: ``num-server-rounds``,
``timeout`` (virtual seconds), ``fraction-evaluate``.  ``ROUNDS`` collects the global parameters after every
round (Flower's ``evaluate_fn`` is called with them).  ``raising_client_app`` raises on partition 1.
"""

from __future__ import annotations

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from asyncfl.config import validate_scenario
from asyncfl.learn.federation import build_federation
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob, evaluate
from asyncfl.runner.parts import initial_model

CLIENTS = 4
# the scenario both sides train with: the native run's sections, and the Flower run's data/model/training
SECTIONS = {
    "seed": 0,
    "data": {"dataset": "digits", "clients": CLIENTS},
    "model": {"name": "logreg"},
    "training": {"local_steps": 5, "batch_size": 16, "lr": 0.1},
    "trainer": {"executor": "sequential"},
    "algorithm": {"name": "fedavg", "weighting": "samples"},
}
ROUNDS: list[np.ndarray] = []  # the global parameters after each round of the latest Flower run
_WORLD: dict = {}


def world():
    """The data, model and trainer of :data:`SECTIONS`, built once, as asyncfl's runner builds them."""
    if not _WORLD:
        s = validate_scenario(SECTIONS, source="<digits_app>")
        device = torch.device("cpu")
        federation = build_federation(s.data, s.seed, device)
        model = initial_model(s, federation)
        initial = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
        trainer = SequentialTrainer(model, federation, s.training, s.seed)
        _WORLD.update(scenario=s, federation=federation, model=model, initial=initial, trainer=trainer)
    return _WORLD


def _vector(message: Message) -> torch.Tensor:
    return torch.from_numpy(message.content["arrays"]["w"].numpy().copy())


client_app = ClientApp()


@client_app.train()
def train(message: Message, context: Context) -> Message:
    w = world()
    client = int(context.node_config["partition-id"])
    attempts = context.state["tasks"]["train"] if "tasks" in context.state else 0  # the Context lives on
    context.state["tasks"] = MetricRecord({"train": attempts + 1})
    base = _vector(message)
    version = int(message.content["config"]["server-round"]) - 1
    steps = w["scenario"].training.local_steps
    result = w["trainer"].run(base, [TrainingJob(client, version, attempts, steps)])[0]
    arrays = ArrayRecord({"w": Array((base + result.delta).numpy())})
    samples = len(w["federation"].client_train[client])
    metrics = MetricRecord({"num-examples": samples, "train_loss": result.train_loss})
    return Message(RecordDict({"arrays": arrays, "metrics": metrics}), reply_to=message)


@client_app.evaluate()
def evaluate_local(message: Message, context: Context) -> Message:
    w = world()
    client = int(context.node_config["partition-id"])
    indices = w["federation"].client_test[client]
    accuracy, loss = evaluate(w["model"], _vector(message), w["federation"], indices)[:2]
    metrics = MetricRecord({"eval_acc": float(accuracy), "eval_loss": float(loss), "num-examples": len(indices)})
    return Message(RecordDict({"metrics": metrics}), reply_to=message)


raising_client_app = ClientApp()


@raising_client_app.train()
def train_or_raise(message: Message, context: Context) -> Message:
    if context.node_config["partition-id"] == 1:
        raise RuntimeError('partition 1 has no "data"')
    return train(message, context)


@raising_client_app.evaluate()
def evaluate_or_raise(message: Message, context: Context) -> Message:
    return evaluate_local(message, context)


server_app = ServerApp()


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    config = context.run_config
    strategy = FedAvg(
        fraction_evaluate=float(config.get("fraction-evaluate", 1.0)), min_available_nodes=1, min_train_nodes=1,
        min_evaluate_nodes=1,
    )  # fmt: skip
    ROUNDS.clear()

    def keep(server_round: int, arrays: ArrayRecord) -> None:
        if server_round > 0:
            ROUNDS.append(arrays["w"].numpy().copy())

    initial = ArrayRecord({"w": Array(world()["initial"].numpy())})
    strategy.start(
        grid, initial, num_rounds=int(config.get("num-server-rounds", 3)),
        timeout=float(config.get("timeout", 3600)), evaluate_fn=keep,
    )  # fmt: skip


not_an_app = object()
