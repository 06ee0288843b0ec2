"""The run loop (asyncfl.runner.simulation): a server hands each closed round to it through SimPy and hears
back whether to stop; each aggregation becomes one AggregationRecord whose columns are computed once."""

from __future__ import annotations

import math

import pytest
import simpy
from conftest import run, scenario, table

import asyncfl
from asyncfl.runner.loop_guards import RunInterrupted
from asyncfl.runner.record import Learned, record_of, staleness_of
from asyncfl.runner.start import resume_run, run_scenario
from asyncfl.sim.clients import TaskPlan
from asyncfl.sim.servers import ClosedRound, RoundHandoff


def plan(client: int, base_version: int, start: float, end: float) -> TaskPlan:
    return TaskPlan(client, base_version, 0, start, [start], end)


def test_the_record_computes_staleness_and_base_versions_once_on_a_hand_built_k_async_schedule():
    """K = 2: the round that makes version 3 (aggregation index 2) receives an update started from version 2
    (fresh) and one started from version 0 (two versions behind): staleness = round - 1 - base_version."""
    closed = ClosedRound(3, 10.0, 14.0, received=[plan(4, 2, 11.0, 13.5), plan(7, 0, 2.0, 14.0)])
    staleness = staleness_of(closed)
    assert staleness == [0, 2]
    record = record_of(closed, staleness, Learned((0.5, 1.5), (0.25, 2.25)))
    assert (record.round, record.clients, record.base_versions, record.staleness) == (3, (4, 7), (2, 0), (0, 2))
    assert record.task_s == (2.5, 12.0) and record.arrivals == (13.5, 14.0)
    assert record.train_loss_mean == 1.0 and record.staleness_mean == 1.0 and not record.diverged


def test_the_stop_decision_travels_back_to_the_server_through_a_simpy_event():
    env = simpy.Environment()
    rounds = RoundHandoff(env)
    heard, seen = [], []

    def server():
        for number in (1, 2, 3):
            yield env.timeout(1.0)
            stop = yield rounds.close(ClosedRound(number, env.now - 1.0, env.now))
            heard.append((number, env.now, stop))
            if stop:
                return number

    def loop():
        while True:
            closed, answer = yield rounds.next_round()
            seen.append(closed.round)
            rounds.reply(answer, closed.round == 2)

    env.process(loop())
    assert env.run(until=env.process(server())) == 2
    assert seen == [1, 2] and heard == [(1, 1.0, False), (2, 2.0, True)]


def test_nothing_else_runs_between_a_close_and_the_servers_going_on():
    """Another process's event at the moment of the close waits until the server went on: the loop's work
    sits where the server closed the round, as if the server had called it (events.jsonl keeps its order)."""
    env = simpy.Environment()
    rounds = RoundHandoff(env)
    order = []

    def server():
        yield env.timeout(1.0)  # scheduled first: runs first at t = 1
        order.append("server closes")
        yield rounds.close(ClosedRound(1, 0.0, env.now))
        order.append("server goes on")

    def loop():
        closed, answer = yield rounds.next_round()
        order.append("loop records")
        rounds.reply(answer, False)

    def client():
        yield env.timeout(1.0)
        order.append("client event")

    env.process(loop())
    env.process(server())
    env.process(client())
    env.run()
    assert order == ["server closes", "loop records", "server goes on", "client event"]


K_ASYNC = dict(
    data={"clients": 12}, server={"mode": "k_async", "k": 3, "concurrency": 6}, algorithm={"name": "fedbuff"},
    population={"availability": {"kind": "markov", "p": 0.7, "mean_cycle_s": 30}},
    stop={"rounds": 12}, output={"plot": False},
)  # fmt: skip


class Records(asyncfl.Callback):
    def __init__(self) -> None:
        self.records = []

    def on_aggregation(self, state, record) -> None:
        self.records.append(record)


def test_timing_only_records_carry_nan_learning_columns_and_the_same_timing(tmp_path):
    timing, full = Records(), Records()
    run_scenario(scenario(**K_ASYNC, timing_only=True), tmp_path / "timing", callbacks=[timing])
    run_scenario(scenario(**K_ASYNC), tmp_path / "full", callbacks=[full])
    assert len(timing.records) == len(full.records) == 12
    for t, f in zip(timing.records, full.records):
        assert all(math.isnan(x) for x in t.train_loss + t.train_loss_sq) and math.isnan(t.train_loss_mean)
        assert all(math.isfinite(x) for x in f.train_loss) and not t.diverged and t.weight_rows == ()
        assert (t.round, t.time, t.clients, t.base_versions, t.staleness) == (
            f.round, f.time, f.clients, f.base_versions, f.staleness,
        )  # fmt: skip


def test_updates_csv_holds_the_records_base_versions_and_each_one_is_the_tasks_start_version(tmp_path):
    """updates.csv: base_version + staleness = round - 1 (round: the aggregation the update went into), and the
    base version is the version the client's task logged when it started downloading (events.jsonl's
    ``base_version`` of its ``download`` event)."""
    run_dir = run(tmp_path, **{**K_ASYNC, "timing_only": True})
    rows = table(run_dir / "updates.csv")
    assert rows and any(int(r["staleness"]) > 0 for r in rows)
    for r in rows:
        assert int(r["base_version"]) + int(r["staleness"]) == int(r["round"]) - 1
    starts = {}  # client -> base versions of its downloads, in order
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        if '"event":"download"' in line:
            client = int(line.split('"client":')[1].split(",")[0])
            starts.setdefault(client, []).append(int(line.split('"base_version":')[1].split("}")[0].split(",")[0]))
    for r in rows:
        assert int(r["base_version"]) in starts[int(r["client"])]


class InterruptAt(asyncfl.Callback):
    def __init__(self, round: int) -> None:
        self.round = round

    def on_aggregation(self, state, record) -> None:
        if record.round == self.round:
            raise KeyboardInterrupt


def test_a_resumed_run_replays_to_its_checkpoint_and_writes_the_rows_of_the_uninterrupted_run(tmp_path):
    sections = {**K_ASYNC, "checkpoint": {"every_rounds": 4, "min_wall_s": 0}}
    reference = run_scenario(scenario(**sections), tmp_path / "reference")
    with pytest.raises(RunInterrupted):
        run_scenario(scenario(**sections), tmp_path / "resumed", callbacks=[InterruptAt(7)])  # checkpoint at 4
    resumed = resume_run(tmp_path / "resumed")
    for name in ("rounds.csv", "updates.csv", "events.jsonl"):
        assert (resumed / name).read_bytes() == (reference / name).read_bytes(), name
    drop_wall = [{k: v for k, v in r.items() if k != "wall_seconds"} for r in table(reference / "metrics.csv")]
    assert [{k: v for k, v in r.items() if k != "wall_seconds"} for r in table(resumed / "metrics.csv")] == drop_wall
