"""ServerApps that end a Flower run on an error (tests/flower/test_flower_status.py), for toy_app's ClientApp:
one that raises after its first round, one that messages a node the Grid does not have, one that sends something
that is not a Message."""

from __future__ import annotations

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
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
