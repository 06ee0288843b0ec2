"""Flower's FedAvg asks the Grid for its nodes twice a round (``configure_train`` counts them, then
``sample_nodes`` samples them), at once: the virtual clock must not move between the two.  A Grid that read the
second ask as a waiting loop moved every round to the next time an unlisted node came back, so FedAvg's rounds
started late and a 200-second study ran 9 rounds where it should run 20."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("flwr")

import toy_app  # noqa: E402  (tests/flower is on sys.path)

import asyncfl.flower  # noqa: E402


def test_fedavg_rounds_start_when_the_round_before_ended(tmp_path: Path):
    """Client 0 is offline until 50 s and never listed (grace 0), so a node is unlisted at every ask before then;
    evaluation is untimed, so nothing else moves the clock between rounds.  Each round starts exactly when the
    one before ended, the first at 0 s, and each trains the three listed clients."""
    trace = tmp_path / "online.csv"
    trace.write_text("client,start_s,end_s\n0,50,1e9\n1,0,1e9\n2,0,1e9\n3,0,1e9\n")
    keys = {
        "data": {"clients": 4}, "output": {"plot": False}, "stop": {"rounds": 3},
        "population": {"availability": {"kind": "trace", "file": str(trace)}, "compute": {"samples_per_s": 100}},
        "flower": {"offline_grace_s": 0, "evaluation": "untimed", "run_config": {"num-server-rounds": 3}},
    }  # fmt: skip
    run = asyncfl.flower.run(toy_app.server_app, toy_app.client_app, keys, tmp_path / "run")
    rounds = run.rounds
    assert list(rounds["round"]) == [1, 2, 3]
    assert rounds["started"][0] == 0.0
    assert list(rounds["started"][1:]) == list(rounds["time"][:-1])  # no virtual time between two rounds
    assert rounds["time"].iloc[-1] < 50.0  # never waited for client 0
    assert list(rounds["selected"]) == [3, 3, 3] and list(rounds["failed_offline"]) == [0, 0, 0]
