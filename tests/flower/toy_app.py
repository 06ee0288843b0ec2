"""A Flower app with no training (numpy only), for exact timing tests of the virtual Grid.

Partition i's ClientApp reports ``num-examples`` = 10 (i + 1) and returns the arrays plus one; it raises on the
partitions listed in the run config's ``raise-on`` (comma-separated).  Bytes of a train message (Flower's
``count_bytes``): the ArrayRecord {"w": 250 float32} is its .npy bytes (a 128-byte header + 1000) + len("w")
= 1129, the ConfigRecord {"server-round": int} 8 + 12 = 20, so 1149; a reply: 1129 + the MetricRecord
{"num-examples": n} 8 + 12 = 1149.

``server_app`` runs Flower's FedAvg (``num-server-rounds``, ``timeout``, ``fraction-train``, ``fraction-evaluate``
from the run config) and records what its ``aggregate_train`` receives in :data:`SEEN`; ``direct_server_app``
pushes one train message to every node through ``grid.send_and_receive`` and records the replies and the clock.
"""

from __future__ import annotations

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

WEIGHTS = 250
SEEN: dict = {}
CALLS: dict[int, int] = {}  # partition -> ClientApp calls


def _raises(context: Context) -> bool:
    listed = str(context.run_config.get("raise-on", ""))
    return str(context.node_config["partition-id"]) in [p for p in listed.split(",") if p]


client_app = ClientApp()


@client_app.train()
def train(message: Message, context: Context) -> Message:
    partition = int(context.node_config["partition-id"])
    CALLS[partition] = CALLS.get(partition, 0) + 1
    calls = context.state["calls"]["n"] if "calls" in context.state else 0
    context.state["calls"] = MetricRecord({"n": calls + 1})
    if _raises(context):
        raise RuntimeError(f'partition {partition} has no "data"')
    w = message.content["arrays"]["w"].numpy() + 1
    metrics = MetricRecord({"num-examples": 10 * (partition + 1)})
    return Message(RecordDict({"arrays": ArrayRecord({"w": Array(w)}), "metrics": metrics}), reply_to=message)


@client_app.evaluate()
def evaluate(message: Message, context: Context) -> Message:
    partition = int(context.node_config["partition-id"])
    metrics = MetricRecord({"eval_acc": partition / 10, "eval_loss": 1.0 + partition, "num-examples": 10})
    return Message(RecordDict({"metrics": metrics}), reply_to=message)


class RecordingFedAvg(FedAvg):
    """Flower's FedAvg, noting which replies each round's aggregate_train receives."""

    def aggregate_train(self, server_round, replies):
        replies = list(replies)
        SEEN.setdefault("train", []).append(
            [(r.metadata.src_node_id, r.has_error(), r.error.code if r.has_error() else None) for r in replies]
        )
        return super().aggregate_train(server_round, replies)


server_app = ServerApp()


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    config = context.run_config
    strategy = RecordingFedAvg(
        fraction_train=float(config.get("fraction-train", 1.0)),
        fraction_evaluate=float(config.get("fraction-evaluate", 1.0)),
        min_available_nodes=int(config.get("min-available-nodes", 1)), min_train_nodes=1, min_evaluate_nodes=1,
    )  # fmt: skip
    initial = ArrayRecord({"w": Array(np.zeros(WEIGHTS, dtype=np.float32))})
    result = strategy.start(
        grid, initial, num_rounds=int(config.get("num-server-rounds", 2)), timeout=float(config.get("timeout", 3600))
    )
    SEEN["final"] = result.arrays["w"].numpy().copy()


direct_server_app = ServerApp()


@direct_server_app.main()
def direct(grid: Grid, context: Context) -> None:
    nodes = sorted(grid.get_node_ids())
    arrays = ArrayRecord({"w": Array(np.zeros(WEIGHTS, dtype=np.float32))})
    messages = [
        Message(RecordDict({"arrays": arrays, "config": ConfigRecord({"server-round": 1})}), node, "train")
        for node in nodes
    ]
    replies = grid.send_and_receive(messages, timeout=float(context.run_config["timeout"]))
    SEEN["direct"] = [(r.metadata.src_node_id, r.metadata.created_at, r.has_error()) for r in replies]
    SEEN["now"] = grid.env.now
    SEEN["created"] = [m.metadata.created_at for m in messages]
    SEEN["late_pull"] = list(grid.pull_messages([m.metadata.message_id for m in messages]))
