"""A Flower ClientApp whose local training is asyncfl's own (the K-async cross-check's trainer): each node trains
its client's share of the scenario's data set with :class:`asyncfl.learn.trainer.SequentialTrainer`, so that a
K-async run on Flower clients and the native run of the same scenario train the same jobs.

The minibatch stream is keyed by (seed, client, attempt): the node counts its own train calls in its Context
(a client offline when its task starts is never called, so calls and attempts agree only where no task fails
at its start, which is what the cross-check's population ensures)."""

from __future__ import annotations

import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from asyncfl.learn.federation import build_federation
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob, evaluate
from asyncfl.runner.parts import initial_model as native_initial_model


def initial_model(scenario):
    """The scenario's model with the native run's initial weights, and its data."""
    federation = build_federation(scenario.data, scenario.seed, torch.device("cpu"))
    return native_initial_model(scenario, federation), federation


def make_client_app(scenario, fail_clients=(), calls=None) -> ClientApp:
    """A ClientApp training as ``scenario``'s native run does; the clients in ``fail_clients`` raise
    ``RuntimeError("boom on <client>")``; ``calls`` (a dict) counts each client's train calls."""
    model, federation = initial_model(scenario)
    trainer = SequentialTrainer(model, federation, scenario.training, scenario.seed)
    app = ClientApp()

    def base_vector(message: Message) -> torch.Tensor:
        model.load_state_dict(message.content["arrays"].to_torch_state_dict())
        return parameters_to_vector(model.parameters()).detach().clone()

    @app.train()
    def train(message: Message, context: Context) -> Message:
        client = int(context.node_config["partition-id"])
        if calls is not None:
            calls[client] = calls.get(client, 0) + 1
        if client in fail_clients:
            raise RuntimeError(f"boom on {client}")
        counter = context.state.config_records.get("asyncfl", ConfigRecord({"attempt": 0}))
        attempt = int(counter["attempt"])
        context.state["asyncfl"] = ConfigRecord({"attempt": attempt + 1})
        base = base_vector(message)
        steps = int(context.run_config["local-epochs"])  # full batches: one step is one epoch
        (result,) = trainer.run(base, [TrainingJob(client, 0, attempt, steps)])
        vector_to_parameters(base + result.delta, model.parameters())
        examples = len(federation.client_train[client])
        metrics = MetricRecord({"num-examples": examples, "train_loss": result.train_loss})
        return Message(RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": metrics}), reply_to=message)

    @app.evaluate()
    def evaluate_(message: Message, context: Context) -> Message:
        client = int(context.node_config["partition-id"])
        test = federation.client_test[client]
        accuracy, loss, _ = evaluate(model, base_vector(message), federation, test)
        metrics = MetricRecord({"num-examples": len(test), "eval_acc": accuracy, "eval_loss": loss})
        return Message(RecordDict({"metrics": metrics}), reply_to=message)

    return app
