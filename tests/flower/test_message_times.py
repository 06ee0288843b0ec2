"""Flower's message timestamps on the virtual Grid (asyncfl/flower/link_state.py, MessageTimes): a reply's
``created_at`` is when its node made it (its upload starts), in seconds since the epoch, virtual second s being
``clock.start_time`` + s (1970-01-01 UTC + s without one); ``delivered_at`` is Flower's ISO string at the moment the
ServerApp gets the reply; a message from ``grid.create_message`` keeps its stamp and its ttl counts from it.

toy_app's client i works download 0.05018384 s + compute 0.1 (i + 1) s + upload 0.0509192 s (test_grid.py): it
makes its reply at 0.15018384 + 0.1 i s and the reply arrives at 0.20110304 + 0.1 i s."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")

import toy_app  # noqa: E402  (tests/flower is on sys.path)
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict  # noqa: E402
from flwr.common.constant import ErrorCode  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402

import asyncfl.flower  # noqa: E402
from asyncfl.flower.nodes import NODE_ID_BASE  # noqa: E402

SEEN: dict = {}
MADE = [0.15018384, 0.25018384]  # clients 0 and 1: download + compute
START = 1767594600.0  # 2026-01-05T08:30+02:00 = 06:30 UTC, in seconds since the epoch
DEFAULT_TTL = 43200.0  # Flower's 12 h


def _content() -> RecordDict:
    arrays = ArrayRecord({"w": Array(np.zeros(toy_app.WEIGHTS, dtype=np.float32))})
    return RecordDict({"arrays": arrays, "config": ConfigRecord({"server-round": 1})})


def _stamps(message: Message) -> tuple:
    metadata = message.metadata
    code = message.error.code if message.has_error() else None
    return metadata.created_at, metadata.delivered_at, metadata.ttl, code


def _run(tmp_path, server_app, **sections):
    SEEN.clear()
    keys = {"data": {"clients": 4}, "output": {"plot": False}, **sections}
    return asyncfl.flower.run(server_app, toy_app.client_app, keys, tmp_path / "run")


two_nodes = ServerApp()


@two_nodes.main()
def send_to_two(grid: Grid, context: Context) -> None:
    messages = [Message(_content(), NODE_ID_BASE + i, "train") for i in range(2)]
    SEEN["replies"] = [_stamps(reply) for reply in grid.send_and_receive(messages)]
    SEEN["pushed"] = [m.metadata.created_at for m in messages]


def test_a_reply_is_stamped_when_its_node_made_it_and_delivered_at_its_arrival(tmp_path):
    """No clock.start_time: virtual seconds from the epoch.  Client 0's reply: created 0.15018384, delivered
    (arrived) 0.20110304 -> "1970-01-01T00:00:00.201103+00:00", ttl 43200 - 0.15018384; client 1's 0.1 s later.  The
    app's messages, built with real time, are stamped at their push, 0."""
    _run(tmp_path, two_nodes)
    (created0, delivered0, ttl0, code0), (created1, delivered1, ttl1, code1) = SEEN["replies"]
    assert [created0, created1] == pytest.approx(MADE, abs=1e-12)
    assert [delivered0, delivered1] == ["1970-01-01T00:00:00.201103+00:00", "1970-01-01T00:00:00.301103+00:00"]
    assert [ttl0, ttl1] == pytest.approx([DEFAULT_TTL - MADE[0], DEFAULT_TTL - MADE[1]], abs=1e-9)
    assert code0 is None and code1 is None
    assert SEEN["pushed"] == [0.0, 0.0]


def test_clock_start_time_makes_the_stamps_seconds_since_the_epoch(tmp_path):
    """clock.start_time 2026-01-05T08:30+02:00: virtual second s is epoch second 1767594600 + s; delivered_at
    is that instant in UTC, as Flower's now().isoformat()."""
    _run(tmp_path, two_nodes, clock={"start_time": "2026-01-05T08:30+02:00"})
    (created0, delivered0, ttl0, _), (created1, delivered1, _, _) = SEEN["replies"]
    assert [created0, created1] == pytest.approx([START + MADE[0], START + MADE[1]], abs=1e-6)
    assert [delivered0, delivered1] == ["2026-01-05T06:30:00.201103+00:00", "2026-01-05T06:30:00.301103+00:00"]
    assert ttl0 == pytest.approx(DEFAULT_TTL - MADE[0], abs=1e-6)
    assert SEEN["pushed"] == [START, START]


created_first = ServerApp()


@created_first.main()
def create_then_push_later(grid: Grid, context: Context) -> None:
    """A message from create_message at 0 (ttl 0.3 s), pushed after a round trip that ends at 0.20110304."""
    early = grid.create_message(_content(), "train", NODE_ID_BASE + 3, "", ttl=0.3)
    list(grid.send_and_receive([Message(_content(), NODE_ID_BASE, "train")]))
    late = Message(_content(), NODE_ID_BASE, "train", ttl=0.3)  # built now, with real time
    SEEN["replies"] = [_stamps(reply) for reply in grid.send_and_receive([early, late])]
    SEEN["pushed"] = [early.metadata.created_at, late.metadata.created_at]
    SEEN["now"] = grid.env.now


def test_a_created_message_keeps_its_stamp_and_expires_from_it(tmp_path):
    """``early`` was created at 0 and expires at 0 + 0.3: client 3's task (0.20110304 + 0.50110304) is cut there,
    with the SuperLink's MESSAGE_UNAVAILABLE, created 0.3, never marked delivered (re-stamped at its push, it would
    expire at 0.50110304).  ``late``, built by the app, is stamped at its push, 0.20110304: client 0's reply is made
    0.15018384 later, in 0.20110304 later (0.40220608), before its expiry at 0.50110304; the round closes then."""
    _run(tmp_path, created_first)
    pushed = 0.20110304
    assert SEEN["pushed"] == pytest.approx([0.0, pushed], abs=1e-12)
    by_code = {code: stamps for *stamps, code in SEEN["replies"]}
    created, delivered, ttl = by_code[ErrorCode.MESSAGE_UNAVAILABLE]
    assert (created, delivered, ttl) == (0.3, "", 0)
    created, delivered, ttl = by_code[None]
    assert created == pytest.approx(pushed + MADE[0], abs=1e-12)
    assert delivered == "1970-01-01T00:00:00.402206+00:00"
    assert ttl == pytest.approx(pushed + 0.3 - created, abs=1e-12)
    assert SEEN["now"] == pytest.approx(2 * pushed, abs=1e-12)


pulled_late = ServerApp()


@pulled_late.main()
def pull_after_the_arrival(grid: Grid, context: Context) -> None:
    first, last = grid.push_messages([Message(_content(), NODE_ID_BASE + i, "train") for i in (0, 3)])
    list(grid.pull_messages([last]))  # the clock moves to client 3's arrival, 0.50110304
    SEEN["replies"] = [_stamps(reply) for reply in grid.pull_messages([first])]


def test_a_reply_pulled_after_its_arrival_is_delivered_at_the_pull(tmp_path):
    """Client 0's reply, made at 0.15018384 and in at 0.20110304, is pulled once the clock stands at client 3's
    arrival, 0.50110304: Flower's pull marks it delivered then."""
    _run(tmp_path, pulled_late)
    ((created, delivered, _, code),) = SEEN["replies"]
    assert created == pytest.approx(MADE[0], abs=1e-12) and code is None
    assert delivered == "1970-01-01T00:00:00.501103+00:00"
