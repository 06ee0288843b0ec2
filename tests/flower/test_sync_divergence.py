"""A synchronous Flower run whose ClientApps reply with non-finite arrays or losses ends ``diverged`` at that round,
by the rule of native and K-async runs (issue 45, item 4); it used to end ``finished`` without a word."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("flwr")

import numpy as np  # noqa: E402
import toy_app  # noqa: E402  (tests/flower is on sys.path: pytest's rootdir-relative import)
from flwr.app import Array, ArrayRecord, Context, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402

import asyncfl.flower  # noqa: E402
from asyncfl.runner.record import is_diverged  # noqa: E402


def app_from_round(bad_round: int, nan_arrays: bool = True, loss: float | None = None) -> ClientApp:
    """toy_app's model plus one; from ``bad_round`` on, NaN arrays (``nan_arrays``) and the train_loss ``loss``."""
    app = ClientApp()

    @app.train()
    def train(message: Message, context: Context) -> Message:
        bad = int(message.content["config"]["server-round"]) >= bad_round
        w = message.content["arrays"]["w"].numpy() + (np.nan if bad and nan_arrays else 1)
        metrics = {"num-examples": 10} if loss is None else {"num-examples": 10, "train_loss": loss if bad else 0.5}
        content = RecordDict({"arrays": ArrayRecord({"w": Array(w)}), "metrics": MetricRecord(metrics)})
        return Message(content, reply_to=message)

    @app.evaluate()
    def evaluate(message: Message, context: Context) -> Message:
        metrics = MetricRecord({"eval_acc": 0.5, "eval_loss": 1.0, "num-examples": 10})
        return Message(RecordDict({"metrics": metrics}), reply_to=message)

    return app


def run(tmp_path, app: ClientApp):
    keys = {"data": {"clients": 3}, "output": {"plot": False}, "flower": {"run_config": {"num-server-rounds": 5}}}
    return asyncfl.flower.run(toy_app.server_app, app, keys, tmp_path / "run")


def test_nan_arrays_in_round_two_end_the_run_diverged_at_round_two(tmp_path):
    result = run(tmp_path, app_from_round(2))
    assert (result.summary["status"], result.summary["diverged_round"], result.summary["rounds"]) == ("diverged", 2, 2)
    assert list(result.rounds["round"]) == [1, 2]


def test_an_infinite_reported_train_loss_ends_the_run_diverged(tmp_path):
    result = run(tmp_path, app_from_round(3, nan_arrays=False, loss=math.inf))
    assert (result.summary["status"], result.summary["diverged_round"]) == ("diverged", 3)


def test_finite_replies_finish_all_five_rounds(tmp_path):
    result = run(tmp_path, app_from_round(99, loss=0.5))
    assert (result.summary["status"], result.summary["rounds"]) == ("finished", 5)


@pytest.mark.parametrize(
    ("finite", "losses", "expected"),
    [(True, [0.5, 1.0], False), (True, [], False), (False, [0.5], True), (True, [0.5, math.nan], True)],
)
def test_the_one_divergence_rule(finite, losses, expected):
    assert is_diverged(finite, losses) is expected
