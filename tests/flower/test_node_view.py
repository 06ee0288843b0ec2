"""Flower's node view on the virtual clock (asyncfl/flower/link_state.py): ``get_node_ids()`` lists the nodes online
now, or offline for less than ``flower.offline_grace_s`` (Flower's SuperLink lists a node until HEARTBEAT_PATIENCE x
HEARTBEAT_DEFAULT_INTERVAL after its last heartbeat).  Hand-computed times from availability traces."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

import toy_app  # noqa: E402  (tests/flower is on sys.path)
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict  # noqa: E402
from flwr.common.constant import HEARTBEAT_DEFAULT_INTERVAL, HEARTBEAT_PATIENCE  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402

import asyncfl.flower  # noqa: E402
import asyncfl.flower.grid as grid_module  # noqa: E402
from asyncfl.config.flower import OFFLINE_GRACE_S, Flower  # noqa: E402
from asyncfl.errors import ConfigError  # noqa: E402
from asyncfl.flower.link_state import NodeView  # noqa: E402
from asyncfl.flower.nodes import NODE_ID_BASE  # noqa: E402
from asyncfl.sim.availability.trace import Trace  # noqa: E402

# client 2 is online on [0, 12) and from 30 s on; the others always
TRACE = "client,start_s,end_s\n0,0,1e9\n1,0,1e9\n2,0,12\n2,30,1e9\n3,0,1e9\n"


def view(grace_s: float) -> NodeView:
    models = [Trace([(0.0, 1e9)]), Trace([(0.0, 1e9)]), Trace([(0.0, 12.0), (30.0, 1e9)]), Trace([(1e8, 1e9)])]
    return NodeView([0, 1, 2, 3], models, grace_s)


def test_the_default_grace_is_flowers_heartbeat_patience_times_its_interval():
    assert OFFLINE_GRACE_S == HEARTBEAT_PATIENCE * HEARTBEAT_DEFAULT_INTERVAL == 60.0
    assert Flower().offline_grace_s == 60.0


def test_an_offline_node_is_listed_for_the_grace_after_it_went_offline():
    """Client 2 offline from 12 s, grace 5 s: listed while t < 12 + 5 = 17 (Flower: online_until > now), so at
    16.5 s, not at 17 s nor 17.5 s; listed again when it is back, at 30 s.  Client 3, offline from the start (the
    time before 0 counts as online), is listed until 5 s."""
    grid = view(5.0)
    assert grid.listed(16.5, 0) == [0, 1, 2]
    assert grid.listed(17.0, 0) == [0, 1] == grid.listed(17.5, 0)
    assert grid.listed(29.9, 0) == [0, 1] and grid.listed(30.0, 0) == [0, 1, 2]
    assert 3 in grid.listed(4.9, 0) and 3 not in grid.listed(5.0, 0)
    assert grid.next_listed(17.5, 0) == 30.0  # client 3 never comes back: only client 2 counts


def test_with_no_grace_exactly_the_nodes_online_now_are_listed():
    grid = view(0.0)
    assert grid.listed(0.0, 0) == [0, 1, 2]
    assert grid.listed(11.999, 0) == [0, 1, 2] and grid.listed(12.0, 0) == [0, 1]


def test_a_negative_grace_is_refused_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"flower\.offline_grace_s"):
        asyncfl.flower.run(
            toy_app.server_app, toy_app.client_app,
            {"data": {"clients": 4}, "output": {"plot": False}, "flower": {"offline_grace_s": -1}}, tmp_path / "run",
        )  # fmt: skip


def _message(node: int) -> Message:
    arrays = ArrayRecord({"w": Array(np.zeros(toy_app.WEIGHTS, dtype=np.float32))})
    return Message(RecordDict({"arrays": arrays, "config": ConfigRecord({"server-round": 1})}), node, "train")


SEEN: list = []
clock_app = ServerApp()


@clock_app.main()
def walk_the_clock(grid: Grid, context: Context) -> None:
    """Moves the clock with deadlines on slow tasks (1 sample/s: client i computes 10 (i + 1) s) and notes
    (time, listed clients) after each move."""
    note = lambda nodes: SEEN.append((grid.env.now, sorted(n - NODE_ID_BASE for n in nodes)))  # noqa: E731
    note(grid.get_node_ids())
    grid.send_and_receive([_message(NODE_ID_BASE + 3)], timeout=16.5)  # 40 s of work: the deadline, 16.5 s
    note(grid.get_node_ids())
    grid.send_and_receive([_message(NODE_ID_BASE + 1)], timeout=1.0)  # 20 s of work: 17.5 s
    note(grid.get_node_ids())
    note(grid.get_node_ids())  # asked again at once (FedAvg counts, then samples): the same nodes, the same time
    time.sleep(grid_module.SLEPT_S)  # as Flower's sample_nodes sleeps between its tries
    note(grid.get_node_ids())  # asked again after a sleep, no push: the clock moves to when a node comes back (30 s)


def test_a_flower_run_lists_a_node_for_the_grace_after_it_went_offline(tmp_path):
    """The same times through a run's Grid: client 2 offline on [12, 30), grace 5 s."""
    trace = tmp_path / "online.csv"
    trace.write_text(TRACE)
    keys = {
        "data": {"clients": 4}, "output": {"plot": False}, "flower": {"offline_grace_s": 5.0},
        "population": {"availability": {"kind": "trace", "file": str(trace)}, "compute": {"samples_per_s": 1}},
    }  # fmt: skip
    SEEN.clear()
    asyncfl.flower.run(clock_app, toy_app.client_app, keys, tmp_path / "run")
    assert SEEN == [
        (0.0, [0, 1, 2, 3]), (16.5, [0, 1, 2, 3]), (17.5, [0, 1, 3]), (17.5, [0, 1, 3]), (30.0, [0, 1, 2, 3])
    ]  # fmt: skip


def test_fedavg_samples_only_the_listed_nodes(tmp_path: Path):
    """Client 0 offline for the whole run (trace) with offline_grace_s 0: Flower's FedAvg never samples it, so its
    train round has 3 replies and no error (with the default grace it is sampled at 0 s and fails: test_grid.py)."""
    trace = tmp_path / "online.csv"
    trace.write_text("client,start_s,end_s\n0,1e8,1e9\n1,0,1e9\n2,0,1e9\n3,0,1e9\n")
    keys = {
        "data": {"clients": 4}, "output": {"plot": False},
        "population": {"availability": {"kind": "trace", "file": str(trace)}},
        "flower": {"offline_grace_s": 0, "run_config": {"num-server-rounds": 1, "fraction-evaluate": 0.0}},
    }  # fmt: skip
    toy_app.SEEN.clear()
    toy_app.CALLS.clear()
    run = asyncfl.flower.run(toy_app.server_app, toy_app.client_app, keys, tmp_path / "run")
    (seen,) = toy_app.SEEN["train"]
    assert sorted(node - NODE_ID_BASE for node, _, _ in seen) == [1, 2, 3] and not any(err for _, err, _ in seen)
    (row,) = run.rounds.to_dict("records")
    assert (row["selected"], row["received"], row["failed_offline"]) == (3, 3, 0)
