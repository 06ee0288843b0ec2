"""Replies asyncfl reads from a ClientApp (issue 45, item 5): a reply that is not a Message, or whose examples are
not a whole number >= 0, is one ConfigError naming the client, the message type and what is allowed, on the
synchronous Grid (timed and untimed evaluation) and in K-async runs."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("flwr")

import numpy as np  # noqa: E402
import toy_app  # noqa: E402  (tests/flower is on sys.path: pytest's rootdir-relative import)
from conftest import scenario  # noqa: E402
from flwr.app import Array, ArrayRecord, Context, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402

import asyncfl.flower  # noqa: E402
from asyncfl.errors import ConfigError  # noqa: E402
from asyncfl.flower.k_async import run_k_async  # noqa: E402

ALLOWED_EXAMPLES = r"allowed: a whole number of examples >= 0 \(the metric flower.work.examples names\)"


def replying(train_examples=10, evaluate_examples=10, train_none=False) -> ClientApp:
    """toy_app's model (``w``: 250 numbers) plus one, with the given examples; ``train_none``: train returns None."""
    app = ClientApp()

    @app.train()
    def train(message: Message, context: Context):
        if train_none:
            return None
        w = message.content["arrays"]["w"].numpy() + 1
        metrics = MetricRecord({"num-examples": train_examples})
        return Message(RecordDict({"arrays": ArrayRecord({"w": Array(w)}), "metrics": metrics}), reply_to=message)

    @app.evaluate()
    def evaluate(message: Message, context: Context):
        metrics = MetricRecord({"eval_acc": 0.5, "eval_loss": 1.0, "num-examples": evaluate_examples})
        return Message(RecordDict({"metrics": metrics}), reply_to=message)

    return app


def sync_run(tmp_path: Path, client_app: ClientApp, evaluation: str = "timed"):
    keys = {
        "data": {"clients": 3},
        "output": {"plot": False},
        "flower": {"run_config": {"num-server-rounds": 1}, "evaluation": evaluation},
    }
    return asyncfl.flower.run(toy_app.server_app, client_app, keys, tmp_path / "run")


def test_a_client_app_returning_none_is_refused_naming_the_client_and_the_message_type(tmp_path):
    expected = r"the ClientApp of client \d \(node \d+\), replying to a message of type 'train': returned NoneType"
    with pytest.raises(ConfigError, match=expected + "; allowed: a flwr.app.Message"):
        sync_run(tmp_path, replying(train_none=True))


@pytest.mark.parametrize("examples", [float("nan"), float("inf"), -5, 2.5])
def test_train_examples_that_are_not_a_whole_count_are_refused(tmp_path, examples):
    with pytest.raises(ConfigError, match=rf"replying to a message of type 'train': num-examples={examples!r}; "
                       + ALLOWED_EXAMPLES):  # fmt: skip
        sync_run(tmp_path, replying(train_examples=examples))


@pytest.mark.parametrize("evaluation", ["timed", "untimed"])
def test_evaluate_examples_that_are_nan_are_refused_timed_or_not(tmp_path, evaluation):
    with pytest.raises(
        ConfigError, match=r"replying to a message of type 'evaluate': num-examples=nan; " + ALLOWED_EXAMPLES
    ):
        sync_run(tmp_path, replying(evaluate_examples=float("nan")), evaluation)


def test_whole_examples_as_a_float_are_read(tmp_path):
    """10.0 examples is 10: the round's replies all come back and the run finishes."""
    run = sync_run(tmp_path, replying(train_examples=10.0))
    assert run.summary["status"] == "finished"
    assert list(run.rounds["received"]) == [3]


def test_a_k_async_run_refuses_negative_examples(tmp_path):
    s = scenario(
        data={"dataset": "digits", "clients": 2},
        server={"mode": "k_async", "k": 1, "concurrency": 2},
        algorithm={"name": "fedasync"},
        stop={"rounds": 3},
        output={"plot": False},
        flower={"client_app": "x:app", "initial_arrays": "x:arrays"},
    )
    arrays = lambda: ArrayRecord({"w": Array(np.zeros(toy_app.WEIGHTS, dtype=np.float32))})  # noqa: E731
    with pytest.raises(
        ConfigError, match=r"client \d \(node \d+\), replying to a message of type 'train': num-examples=-5;"
    ):
        run_k_async(replying(train_examples=-5), s, tmp_path / "run", first_arrays=arrays)
