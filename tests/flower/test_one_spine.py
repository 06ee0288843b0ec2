"""A Flower ServerApp's rounds go through the native run loop (asyncfl/runner/simulation.py: ``run_loop``,
``recorded``): the Grid hands every trip over through SimPy as a native server hands a closed round, a round's rows
are written whole under Ctrl-C, the loop's garbage-collection guard runs at each aggregation, and a Grid trip closes
by the sync server's rule (``asyncfl.sim.servers.sync.closes``).  toy_app: no training, 3 nodes, exact timing."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

import toy_app  # noqa: E402  (tests/flower is on sys.path)

import asyncfl.flower  # noqa: E402
import asyncfl.flower.grid as grid_module  # noqa: E402
from asyncfl.runner.callbacks.round_log import RoundLog  # noqa: E402
from asyncfl.runner.loop_guards import LoopGuards  # noqa: E402
from asyncfl.sim.servers import RoundHandoff  # noqa: E402
from asyncfl.sim.servers import sync as sync_module  # noqa: E402


def _run(out: Path, **run_config):
    config = {"num-server-rounds": 2, **run_config}
    keys = {"data": {"clients": 3}, "output": {"plot": False}, "flower": {"run_config": config}}
    return asyncfl.flower.run(toy_app.server_app, toy_app.client_app, keys, out)


def test_every_trip_is_handed_to_the_run_loop_through_simpy(tmp_path, monkeypatch):
    """2 rounds of train + evaluate: 4 trips, each handed over at its close (the train ones at rounds.csv's times);
    before, the Grid called a stored listener and no RoundHandoff was used."""
    handed = []
    close = RoundHandoff.close

    def spy(self, closed):
        handed.append((closed.closed.time, self.env.now, any(task.train for task in closed.tasks)))
        return close(self, closed)

    monkeypatch.setattr(RoundHandoff, "close", spy)
    run = _run(tmp_path / "r")
    assert [train for _, _, train in handed] == [True, False, True, False]
    assert all(closed_at == now for closed_at, now, _ in handed)  # handed over at the trip's close, not later
    assert [t for t, _, train in handed if train] == pytest.approx(list(run.rounds["time"]), abs=1e-6)


def test_ctrl_c_during_a_flower_round_s_rows_lands_after_them(tmp_path, monkeypatch):
    """Ctrl-C while round 1's rows are written is held back until they all are, as in a native run: rounds.csv has
    the row summary.json counts.  Before, it cut the round short: summary.json counted 1 round, rounds.csv had none."""
    on_aggregation = RoundLog.on_aggregation

    def interrupted(self, state, record):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the signal is delivered here; it must not cut the round's rows short
        on_aggregation(self, state, record)

    monkeypatch.setattr(RoundLog, "on_aggregation", interrupted)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, as in a terminal
    try:
        with pytest.raises(KeyboardInterrupt):
            _run(tmp_path / "r")
    finally:
        signal.signal(signal.SIGINT, previous)
    rows = (tmp_path / "r" / "rounds.csv").read_text().splitlines()
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["rounds"] == 1
    assert len(rows) == 2 and rows[1].split(",")[1] == "1"  # the header and round 1


def test_the_loop_s_garbage_collection_guard_runs_at_each_flower_aggregation(tmp_path, monkeypatch):
    """LoopGuards.round_closed once per aggregation (2 rounds: 2), as the native loop calls it; before: never."""
    calls = []
    monkeypatch.setattr(LoopGuards, "round_closed", staticmethod(lambda: calls.append(1)))
    run = _run(tmp_path / "r")
    assert len(run.rounds) == 2 and len(calls) == 2


def test_a_grid_trip_closes_by_the_sync_server_s_rule(tmp_path, monkeypatch):
    """Every timed task of a trip goes through sync.closes (2 rounds x (3 train + 3 evaluate) = 12 tasks), and the
    closed round is what that rule makes: partition i's toy train task takes 0.2011 + 0.1 i s, so at a 0.3 s timeout
    partition 0's is received and the other two are still running, late, failed ``deadline``; before, the Grid had
    its own copy of the rule."""
    seen = []
    closes = sync_module.closes

    def spy(closed, plan, close_at):
        closed_now = closes(closed, plan, close_at)
        seen.append((plan.end, close_at, closed_now))
        return closed_now

    monkeypatch.setattr(grid_module, "closes", spy)
    run = _run(tmp_path / "r", timeout=0.3)
    assert len(seen) == 12
    assert all(closed_now == (end <= close_at) for end, close_at, closed_now in seen)
    assert list(run.rounds["received"]) == [1, 1] and list(run.rounds["time"]) == [0.3, 0.9]
    assert list(run.rounds["late"]) == [2, 2] and list(run.rounds["failed_deadline"]) == [2, 2]
