"""K-async Flower messages carry Flower's timestamps as a sync Flower run's do (docs/how-to/flower.md,
"Timestamps"): ``created_at`` is ``clock.start_time`` + the virtual second the message was made, in seconds since
the epoch (1970-01-01 UTC + s without a start time).  A train message is made when its task starts; an evaluate
message (untimed) when the version it evaluates was made."""

from __future__ import annotations

import pytest

pytest.importorskip("flwr")

import numpy as np  # noqa: E402
from conftest import scenario  # noqa: E402
from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402

from asyncfl.flower.k_async import run_k_async  # noqa: E402

START = 1767594600.0  # 2026-01-05T08:30+02:00 = 06:30 UTC, in seconds since the epoch


def stamping_app(seen: list) -> ClientApp:
    """Adds 1 to every array on 100 examples; notes (type, partition, server-round, created_at) of every message."""
    app = ClientApp()

    def note(message: Message, context) -> None:
        config = message.content["config"]
        partition = int(context.node_config["partition-id"])
        seen.append((message.metadata.message_type, partition, config["server-round"], message.metadata.created_at))

    @app.train()
    def train(message: Message, context) -> Message:
        note(message, context)
        arrays = ArrayRecord([array.numpy() + 1 for array in message.content["arrays"].values()])
        content = RecordDict({"arrays": arrays, "metrics": MetricRecord({"num-examples": 100})})
        return Message(content, reply_to=message)

    @app.evaluate()
    def evaluate(message: Message, context) -> Message:
        note(message, context)
        metrics = MetricRecord({"num-examples": 10, "eval_acc": 0.5, "eval_loss": 1.0})
        return Message(RecordDict({"metrics": metrics}), reply_to=message)

    return app


def run(tmp_path, device_trace, **sections) -> list:
    """FedAsync (K = 1) on two always-online clients whose tasks take 1 s and 2.4 s (100 examples at 100 and
    41.67 samples/s, bytes and latency free), as test_k_async_flower.py's staleness test: versions are made at
    t = 1 (c0), 2 (c0), 2.4 (c1), 3 (c0), 4 (c0), 4.8 (c1), and each client starts its next task at once."""
    trace = device_trace([(0, 100.0, 1e6, 1e6, 0.0), (1, 100 / 2.4, 1e6, 1e6, 0.0)])
    s = scenario(
        data={"dataset": "digits", "clients": 2},
        population={"device_trace": str(trace)},
        server={"mode": "k_async", "k": 1, "concurrency": 2},
        algorithm={"name": "fedasync"},
        stop={"rounds": 6},
        eval={"every_rounds": 3},
        output={"plot": False},
        flower={"client_app": "x:app", "initial_arrays": "x:arrays"},
        **sections,
    )
    seen: list = []
    run_k_async(stamping_app(seen), s, tmp_path / "run", first_arrays=lambda: [np.zeros(3, dtype=np.float32)])
    return seen


# By hand: (type, client, server-round = base version + 1, virtual second made).  Train: c0 and c1 start at 0 (round
# 1); c0 at 1 (its base: version 1), 2 (v2), 3 (v4), 4 (v5); c1 at 2.4 (v3).  Evaluate (every 3 versions, both
# nodes, server-round = the version): version 0 at 0, version 3 at 2.4 (when it was made), version 6 at 4.8.
TRAIN = [(0, 1, 0.0), (1, 1, 0.0), (0, 2, 1.0), (0, 3, 2.0), (1, 4, 2.4), (0, 5, 3.0), (0, 6, 4.0)]
EVALUATE = [(0, 0, 0.0), (1, 0, 0.0), (0, 3, 2.4), (1, 3, 2.4), (0, 6, 4.8), (1, 6, 4.8)]


def by_type(seen: list, kind: str, start: float) -> list:
    return sorted((c, r, round(t - start, 6)) for k, c, r, t in seen if k == kind)


def test_clock_start_time_makes_k_async_stamps_seconds_since_the_epoch(tmp_path, device_trace):
    seen = run(tmp_path, device_trace, clock={"start_time": "2026-01-05T08:30+02:00"})
    assert all(t > START - 1 for _, _, _, t in seen)  # epoch seconds of 2026, not plain virtual seconds
    assert by_type(seen, "train", START)[: len(TRAIN)] == sorted(TRAIN)
    assert by_type(seen, "evaluate", START)[: len(EVALUATE)] == sorted(EVALUATE)


def test_without_a_start_time_the_stamps_count_from_the_epoch(tmp_path, device_trace):
    seen = run(tmp_path, device_trace)
    assert by_type(seen, "train", 0.0)[: len(TRAIN)] == sorted(TRAIN)
    assert by_type(seen, "evaluate", 0.0)[: len(EVALUATE)] == sorted(EVALUATE)
