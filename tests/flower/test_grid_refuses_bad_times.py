"""The virtual Grid refuses a ``timeout`` or ``ttl`` that would corrupt the clock (issue 45, item 3): a negative
timeout put a round's time before its start, a NaN one wrote NaN times (invalid JSON) into events.jsonl."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("flwr")

import numpy as np  # noqa: E402
import toy_app  # noqa: E402  (tests/flower is on sys.path: pytest's rootdir-relative import)
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402

import asyncfl.flower  # noqa: E402
from asyncfl.errors import ConfigError  # noqa: E402
from asyncfl.flower.grid import deadline_of  # noqa: E402

ttl_app = ServerApp()


@ttl_app.main()
def push_with_ttl(grid: Grid, context: Context) -> None:
    """One train message to node 0 with the run config's ``ttl``."""
    arrays = ArrayRecord({"w": Array(np.zeros(toy_app.WEIGHTS, dtype=np.float32))})
    content = RecordDict({"arrays": arrays, "config": ConfigRecord({"server-round": 1})})
    node = sorted(grid.get_node_ids())[0]
    grid.send_and_receive([Message(content, node, "train", ttl=float(context.run_config["ttl"]))])


def run_with(tmp_path: Path, server_app, **run_config):
    keys = {"data": {"clients": 4}, "output": {"plot": False}, "flower": {"run_config": run_config}}
    return asyncfl.flower.run(server_app, toy_app.client_app, keys, tmp_path / "run")


@pytest.mark.parametrize("timeout", [-5.0, "nan", "-inf"])  # a string: the run config holds finite numbers
def test_a_negative_or_nan_timeout_is_refused_naming_timeout_and_the_allowed_range(tmp_path, timeout):
    with pytest.raises(ConfigError, match=r"send_and_receive: timeout=.*; allowed: None .* >= 0 \(inf: no deadline\)"):
        run_with(tmp_path, toy_app.direct_server_app, timeout=timeout)
    log = tmp_path / "run" / "events.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    assert not [json.loads(line) for line in lines]  # refused before any message was pushed


def test_an_infinite_timeout_waits_for_every_reply(tmp_path):
    """inf is no deadline, as None: all 4 replies come back, the clock at the last (client 3's 0.501103 s)."""
    run_with(tmp_path, toy_app.direct_server_app, timeout="inf")
    assert len(toy_app.SEEN["direct"]) == 4
    assert toy_app.SEEN["now"] == pytest.approx(0.501103, abs=1e-6)


@pytest.mark.parametrize(("timeout", "seconds"), [(None, math.inf), (0, 0.0), (2.5, 2.5), (np.float32(1.5), 1.5)])
def test_deadline_of_accepts_none_and_every_number_from_zero(timeout, seconds):
    assert deadline_of(timeout) == seconds


def test_deadline_of_refuses_what_is_not_a_number():
    with pytest.raises(ConfigError, match=r"timeout='5' is not a number; allowed: None"):
        deadline_of("5")


@pytest.mark.parametrize("ttl", [-1.0, "nan"])  # 0: Flower's Message takes the default TTL
def test_a_message_ttl_not_above_zero_is_refused(tmp_path, ttl):
    with pytest.raises(ConfigError, match=r"ttl=.*; allowed: ttl > 0 seconds"):
        run_with(tmp_path, ttl_app, ttl=ttl)
