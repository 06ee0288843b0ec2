"""Flower's message rules on the virtual Grid (asyncfl/flower/link_state.py): a reply after its message's ttl is
Flower's MESSAGE_UNAVAILABLE error at the ttl; a pull of an id the Grid does not hold gets that error too; a
message to an unknown node is dropped with Flower's log line; flwr 1.43's pull_messages signature; a ServerApp
asking for nodes a few times before a push is not "waiting forever".  toy_app's client i works
DOWNLOAD_S + 0.1 (i + 1) + UPLOAD_S = 0.201103, 0.301103, 0.401103, 0.501103 s (test_grid.py)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

pytest.importorskip("flwr")

import toy_app  # noqa: E402  (tests/flower is on sys.path)
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict  # noqa: E402
from flwr.common.constant import ErrorCode  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402
from test_grid import DOWNLOAD_S  # noqa: E402

import asyncfl.flower  # noqa: E402
from asyncfl.flower.nodes import NODE_ID_BASE  # noqa: E402

SEEN: dict = {}
UNKNOWN = NODE_ID_BASE + 99


def _message(client: int, ttl: float | None = None) -> Message:
    arrays = ArrayRecord({"w": Array(np.zeros(toy_app.WEIGHTS, dtype=np.float32))})
    content = RecordDict({"arrays": arrays, "config": ConfigRecord({"server-round": 1})})
    return Message(content, NODE_ID_BASE + client if client >= 0 else UNKNOWN, "train", ttl=ttl)


def _run(tmp_path, server_app):
    SEEN.clear()
    keys = {"data": {"clients": 4}, "output": {"plot": False}}
    return asyncfl.flower.run(server_app, toy_app.client_app, keys, tmp_path / "run")


def _replies(replies) -> list:
    return [(r.metadata.reply_to_message_id, r.error.code if r.has_error() else None) for r in replies]


asks_six_times = ServerApp()


@asks_six_times.main()
def six_asks(grid: Grid, context: Context) -> None:
    for _ in range(6):
        nodes = sorted(grid.get_node_ids())
    SEEN["replies"] = list(grid.send_and_receive([_message(0)]))
    SEEN["nodes"] = nodes


def test_six_node_asks_before_a_push_do_not_end_the_run(tmp_path):
    run = _run(tmp_path, asks_six_times)
    assert run.status == "finished" and len(SEEN["replies"]) == 1 and len(SEEN["nodes"]) == 4


ttl_app = ServerApp()


@ttl_app.main()
def short_ttl(grid: Grid, context: Context) -> None:
    replies = list(grid.send_and_receive([_message(0, ttl=0.3), _message(3, ttl=0.3)]))
    SEEN["replies"] = [(r.metadata.src_node_id, r.has_error() and r.error.code, r.metadata.created_at) for r in replies]
    SEEN["now"] = grid.env.now


def test_a_reply_after_its_ttl_is_flowers_message_unavailable_error_at_the_ttl(tmp_path):
    """ttl 0.3 s: client 0's reply (0.201103 s) comes back; client 3's (0.501103 s) would come after its message
    expired at 0 + 0.3 s, so the ServerApp gets the SuperLink's MESSAGE_UNAVAILABLE error, made at 0.3 s, and the
    round closes there (client 3's task counted late, failed ``deadline``)."""
    run = _run(tmp_path, ttl_app)
    first, expired = SEEN["replies"]
    assert first[:2] == (NODE_ID_BASE, False) and first[2] == pytest.approx(DOWNLOAD_S + 0.1)  # made at upload
    assert expired == (1, ErrorCode.MESSAGE_UNAVAILABLE, 0.3)  # from the SuperLink (node 1), at the ttl
    assert SEEN["now"] == 0.3
    (row,) = run.rounds.to_dict("records")
    assert (row["time"], row["received"], row["late"], row["failed_deadline"]) == (0.3, 1, 1, 1)


pull_app = ServerApp()


@pull_app.main()
def pulls(grid: Grid, context: Context) -> None:
    ids = list(grid.push_messages([_message(0), _message(1)]))
    SEEN["ids"] = ids
    SEEN["first"] = _replies(grid.pull_messages(message_ids=ids))  # flwr 1.43's keyword: client 0's is in first
    SEEN["rest"] = _replies(grid.pull_messages())  # no argument: every reply available (client 1's, after waiting)
    SEEN["again"] = _replies(grid.pull_messages(ids[:1]))  # flwr 1.42's form, an id already pulled
    SEEN["unknown"] = _replies(grid.pull_messages(reply_to_message_ids=["no-such-id"]))


def test_pulls_follow_flowers_link_state(tmp_path):
    _run(tmp_path, pull_app)
    first, second = SEEN["ids"]
    assert SEEN["first"] == [(first, None)] and SEEN["rest"] == [(second, None)]
    assert SEEN["again"] == [(first, ErrorCode.MESSAGE_UNAVAILABLE)]
    assert SEEN["unknown"] == [("no-such-id", ErrorCode.MESSAGE_UNAVAILABLE)]


unknown_app = ServerApp()


@unknown_app.main()
def to_an_unknown_node(grid: Grid, context: Context) -> None:
    SEEN["pushed"] = list(grid.push_messages([_message(-1), _message(1)]))
    SEEN["replies"] = _replies(grid.send_and_receive([_message(-1), _message(2)]))


def test_a_message_to_an_unknown_node_is_dropped_with_flowers_log_line(tmp_path, caplog):
    """As Flower's link state (store_message_ins): no id for it, an ERROR log line naming the node; the run goes
    on and finishes."""
    with caplog.at_level(logging.ERROR, logger="flwr"):
        run = _run(tmp_path, unknown_app)
    assert len(SEEN["pushed"]) == 1 and [code for _, code in SEEN["replies"]] == [None]
    said = [r.getMessage() for r in caplog.records if r.name == "flwr"]
    assert said == [f"Invalid destination node ID for Message: {UNKNOWN}"] * 2
    assert run.status == "finished"
