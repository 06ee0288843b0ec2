"""ServerApps that end a Flower run on an error (tests/flower/test_flower_status.py), for toy_app's ClientApp:
one that raises after its first round, one that messages a node the Grid does not have, one that sends something
that is not a Message; and a ClientApp for K-async runs (:data:`plus_one`)."""

from __future__ import annotations

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

UNKNOWN_NODE = 12345


def _train(node: int) -> Message:
    arrays = ArrayRecord({"w": Array(np.zeros(250, dtype=np.float32))})
    return Message(RecordDict({"arrays": arrays, "config": ConfigRecord({"server-round": 1})}), node, "train")


raises_after_one_round = ServerApp()


@raises_after_one_round.main()
def one_round_then_raise(grid: Grid, context: Context) -> None:
    grid.send_and_receive([_train(node) for node in sorted(grid.get_node_ids())])
    raise RuntimeError("the ServerApp broke after round 1")


messages_an_unknown_node = ServerApp()


@messages_an_unknown_node.main()
def unknown_node(grid: Grid, context: Context) -> None:
    grid.send_and_receive([_train(UNKNOWN_NODE)])


sends_no_message = ServerApp()


@sends_no_message.main()
def no_message(grid: Grid, context: Context) -> None:
    grid.send_and_receive(["not a Message"])


plus_one = ClientApp()  # a K-async run's trainer: adds 1 to every array, 100 examples


@plus_one.train()
def train(message: Message, context: Context) -> Message:
    arrays = ArrayRecord([array.numpy() + 1 for array in message.content["arrays"].values()])
    return Message(RecordDict({"arrays": arrays, "metrics": MetricRecord({"num-examples": 100})}), reply_to=message)
