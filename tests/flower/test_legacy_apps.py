"""Legacy Flower apps (``ServerApp(server_fn=...)``, the legacy ``FedAvg``, a ``NumPyClient``) on the virtual Grid:
Flower's pool threads' calls become one round per ``fit_round`` (asyncfl/flower/threads.py), the same seed gives the
same files whatever order the threads run in, and the app ends where its new-style twin ends."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

pytest.importorskip("flwr")

import digits_app  # noqa: E402  (tests/flower is on sys.path)
import legacy_app  # noqa: E402
from flwr.server.compat.grid_client_proxy import GridClientProxy  # noqa: E402

import asyncfl.flower  # noqa: E402

ROUNDS = 3
SECTIONS = {**digits_app.SECTIONS, "stop": {"rounds": ROUNDS}, "output": {"plot": False}}


def run_legacy(out, fraction_evaluate=1.0):
    run_config = {"num-server-rounds": ROUNDS, "fraction-evaluate": fraction_evaluate}
    flower = {**legacy_app.FLOWER, "run_config": run_config}
    return asyncfl.flower.run(legacy_app.server_app, legacy_app.client_app, {**SECTIONS, "flower": flower}, out)


def without_wall_seconds(path):
    """metrics.csv's lines without the wall_seconds column (real time, the one column a rerun changes)."""
    lines = [line.split(",") for line in path.read_text().splitlines()]
    drop = lines[0].index("wall_seconds")
    return [[cell for i, cell in enumerate(line) if i != drop] for line in lines]


def test_legacy_rounds_are_one_row_each_with_every_client_received(tmp_path):
    """Before: each pool thread's call was a round of its own (12 rows) and the concurrent calls drove SimPy
    backwards ("Negative delay"), so Flower saw failures.  Now: 3 fit_rounds => 3 rows of 4 received, and
    metrics.csv's times never go back."""
    run = run_legacy(tmp_path / "r")
    assert list(run.rounds["round"]) == [1, 2, 3]
    assert list(run.rounds["received"]) == [4, 4, 4]
    assert run.rounds[["failed_offline", "failed_deadline", "failed_client_app"]].to_numpy().sum() == 0
    # a round starts where the evaluate round after the previous one ended (train, then evaluate, as Flower)
    assert list(run.metrics["round"]) == [0, 1, 2, 3]
    assert np.all(np.diff(run.metrics["time"]) > 0)
    assert run.rounds["started"].iloc[1] == run.metrics["time"].iloc[1]
    assert len(legacy_app.ROUNDS) == ROUNDS


def test_legacy_fedavg_ends_at_the_new_style_twins_parameters(tmp_path):
    """The legacy FedAvg and the new-style FedAvg (digits_app, tied to Flower's own engine by test_cross_check)
    train identically; their aggregations differ in float arithmetic only (in-place weighted sum vs. the new
    FedAvg's), so they agree to a few float32 ulps of |w| < 0.2 after every round."""
    run_legacy(tmp_path / "legacy", fraction_evaluate=0.0)
    flower = {"run_config": {"num-server-rounds": ROUNDS, "fraction-evaluate": 0.0}}
    asyncfl.flower.run(digits_app.server_app, digits_app.client_app, {**SECTIONS, "flower": flower}, tmp_path / "n")
    assert len(legacy_app.ROUNDS) == len(digits_app.ROUNDS) == ROUNDS
    for legacy, new_style in zip(legacy_app.ROUNDS, digits_app.ROUNDS):
        assert not np.array_equal(legacy, digits_app.world()["initial"].numpy())
        np.testing.assert_allclose(legacy, new_style, rtol=0, atol=1e-6)


@pytest.mark.slow
def test_same_seed_same_files_whatever_the_threads_order(tmp_path, monkeypatch):
    """Five runs of one legacy app, each pool thread held back a random real time (os.urandom, not the seeded
    generators) before its call: byte-identical rounds.csv, events.jsonl and metrics.csv (wall_seconds aside)."""
    send = GridClientProxy._send_receive_recorddict

    def jittered(self, *args, **kwargs):
        time.sleep(os.urandom(1)[0] / 255 * 0.01)  # 0 to 10 ms: the threads arrive in a different order each time
        return send(self, *args, **kwargs)

    monkeypatch.setattr(GridClientProxy, "_send_receive_recorddict", jittered)
    runs = [tmp_path / f"run{i}" for i in range(5)]
    for out in runs:
        run_legacy(out)
    for name in ("rounds.csv", "events.jsonl"):
        first = (runs[0] / name).read_bytes()
        assert all((out / name).read_bytes() == first for out in runs[1:]), name
    metrics = [without_wall_seconds(out / "metrics.csv") for out in runs]
    assert all(table == metrics[0] for table in metrics[1:])


def test_a_pool_smaller_than_the_round_answers_every_call_in_turn(tmp_path):
    """A legacy Server with one pool thread for 4 sampled clients: the calls come one after another, the Grid still
    makes one round of them (no call waits for one the pool has not started), with the strategy wrapped inside the
    app's own Server; the same rounds and parameters as the default pool gives."""
    flower = {**legacy_app.FLOWER, "run_config": {"num-server-rounds": ROUNDS}}
    scenario = {**SECTIONS, "flower": flower}
    one = asyncfl.flower.run(legacy_app.one_thread_server_app, legacy_app.client_app, scenario, tmp_path / "one")
    one_thread = [w.copy() for w in legacy_app.ROUNDS]
    pool = run_legacy(tmp_path / "pool")
    assert (tmp_path / "one" / "rounds.csv").read_bytes() == (tmp_path / "pool" / "rounds.csv").read_bytes()
    assert list(one.rounds["received"]) == list(pool.rounds["received"]) == [4, 4, 4]
    for a, b in zip(one_thread, legacy_app.ROUNDS):
        np.testing.assert_array_equal(a, b)


def test_stop_rounds_ends_a_legacy_app_without_an_exception(tmp_path):
    """stop.rounds: 2 under a ServerConfig of 4 rounds: the strategy asks no node after round 2 (Flower's legacy
    Server skips a round without instructions), so the app returns normally: 2 rows, stopped_by stop.rounds."""
    flower = {**legacy_app.FLOWER, "run_config": {"num-server-rounds": 4, "fraction-evaluate": 0.0}}
    run = asyncfl.flower.run(
        legacy_app.server_app, legacy_app.client_app, {**SECTIONS, "stop": {"rounds": 2}, "flower": flower},
        tmp_path / "r",
    )  # fmt: skip
    assert list(run.rounds["round"]) == [1, 2] and list(run.rounds["received"]) == [4, 4]
    assert run.summary["status"] == "finished" and run.summary["stopped_by"] == "stop.rounds"
