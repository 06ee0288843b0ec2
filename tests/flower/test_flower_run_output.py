"""What a synchronous Flower run prints and counts (issue 45, item 12): ``quiet`` silences Flower's INFO log for the
run only; the progress bar has the rounds as its total and ends on summary.json's final accuracy; clients.csv's
``participations`` counts the updates delivered, not the evaluate replies."""

from __future__ import annotations

import logging
import re

import pytest

pytest.importorskip("flwr")

import toy_app  # noqa: E402  (tests/flower is on sys.path: pytest's rootdir-relative import)
from flwr.app import Context, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402

import asyncfl.flower  # noqa: E402
from asyncfl.flower.recording import expected_rounds  # noqa: E402

ROUNDS = {"num-server-rounds": 2}


def run(tmp_path, quiet: bool, client_app=None, **run_config):
    keys = {"data": {"clients": 4}, "output": {"plot": False}, "flower": {"run_config": {**ROUNDS, **run_config}}}
    client_app = client_app or toy_app.client_app
    return asyncfl.flower.run(toy_app.server_app, client_app, keys, tmp_path / "run", quiet=quiet)


class Heard(logging.Handler):
    """The messages Flower's logger passes on at INFO and above (what its console handler would print)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def flower_log():
    heard, logger = Heard(), logging.getLogger("flwr")
    logger.addHandler(heard)
    yield heard.messages
    logger.removeHandler(heard)


def test_a_quiet_run_says_no_flower_info_and_restores_the_logger(tmp_path, flower_log):
    logger = logging.getLogger("flwr")
    before = logger.level
    run(tmp_path, quiet=True)
    assert flower_log == []
    assert logger.level == before
    logger.info("after the run")  # Flower's log speaks again
    assert flower_log == ["after the run"]


def test_a_run_not_quiet_keeps_flowers_log(tmp_path, flower_log):
    run(tmp_path, quiet=False)
    assert "[ROUND 2/2]" in flower_log


def round_accuracy_app() -> ClientApp:
    """toy_app's training; evaluate reports accuracy server-round / 10 (0.1 after round 1, 0.2 after round 2)."""
    app = ClientApp()
    app.train()(toy_app.train)

    @app.evaluate()
    def evaluate(message: Message, context: Context) -> Message:
        accuracy = int(message.content["config"]["server-round"]) / 10
        metrics = MetricRecord({"eval_acc": accuracy, "eval_loss": 1.0, "num-examples": 10})
        return Message(RecordDict({"metrics": metrics}), reply_to=message)

    return app


def test_the_progress_bar_counts_to_the_rounds_and_ends_on_the_final_accuracy(tmp_path, capfd):
    """The ServerApp evaluates after it aggregates, so the bar's line at round 2 knew round 1's accuracy (0.100);
    its last line is summary.json's final accuracy, 0.200, over a total of 2 rounds."""
    result = run(tmp_path, quiet=False, client_app=round_accuracy_app())
    assert result.summary["final_accuracy"] == pytest.approx(0.2)
    bars = re.findall(r"(\d+)/(\d+) \[[^\]]*acc=([0-9.]+)\]", capfd.readouterr().err)
    assert bars[-1] == ("2", "2", "0.200")


@pytest.mark.parametrize(
    ("stop_rounds", "run_config", "total"),
    [
        (3, ROUNDS, 2),
        (1, ROUNDS, 1),
        (None, ROUNDS, 2),
        (5, {}, 5),
        (None, {}, None),
        (None, {"num-server-rounds": "2"}, None),
    ],
)
def test_the_bar_total_is_the_fewer_of_stop_rounds_and_num_server_rounds(stop_rounds, run_config, total):
    assert expected_rounds(stop_rounds, run_config) == total


def test_participations_count_train_updates_not_evaluate_replies(tmp_path):
    """2 rounds of FedAvg on 4 always-online clients, all training and all evaluating: 4 tasks a client (attempts),
    2 of them updates (participations), as updates.csv has them."""
    result = run(tmp_path, quiet=True)
    clients = result.clients
    assert list(clients["attempts"]) == [4, 4, 4, 4]
    assert list(clients["participations"]) == [2, 2, 2, 2]
    assert result.updates.groupby("client").size().tolist() == [2, 2, 2, 2]
