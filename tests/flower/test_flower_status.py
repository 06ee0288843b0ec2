"""Every Flower run ends with a final status in summary.json (asyncfl.runner.run_end), as a native run does: a
ServerApp that raises, sends something that is not a Message, or waits for
more nodes than the population has, ends the run ``failed`` with the exception as ``reason``, and the exception
reaches the caller (the command line: exit 2 for a ConfigError, with its message).  toy_app.py's ClientApp trains
nothing, so every run here takes a fraction of a second."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

import status_apps  # noqa: E402  (tests/flower is on sys.path)
import toy_app  # noqa: E402

import asyncfl  # noqa: E402
import asyncfl.flower  # noqa: E402
from asyncfl.cli.main import main  # noqa: E402
from asyncfl.errors import ConfigError  # noqa: E402
from asyncfl.flower.k_async import run_k_async  # noqa: E402
from asyncfl.results import read_run  # noqa: E402

KEYS = {"data": {"clients": 4}, "output": {"plot": False}}


def _flower_run(tmp_path: Path, server_app, **sections):
    return asyncfl.flower.run(server_app, toy_app.client_app, {**KEYS, **sections}, tmp_path / "run")


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def test_a_server_app_raising_after_one_round_ends_the_run_failed(tmp_path):
    with pytest.raises(RuntimeError, match="^the ServerApp broke after round 1$"):
        _flower_run(tmp_path, status_apps.raises_after_one_round)
    run_dir = tmp_path / "run"
    summary = _summary(run_dir)
    assert summary["status"] == "failed" and summary["reason"] == "RuntimeError: the ServerApp broke after round 1"
    assert summary["rounds"] == 1 and len((run_dir / "rounds.csv").read_text().splitlines()) == 2
    assert len((run_dir / "clients.csv").read_text().splitlines()) == 5  # the end-of-run files: 4 clients
    with pytest.raises(
        ConfigError, match=r"stopped on an error \(RuntimeError: .*run it again \(a Flower ServerApp run cannot"
    ):
        read_run(run_dir)


def test_a_server_app_sending_a_bad_message_ends_the_run_failed_with_the_error(tmp_path):
    """(A message to an unknown node is dropped with Flower's log line instead: test_message_rules.py.)"""
    with pytest.raises(Exception) as raised:
        _flower_run(tmp_path, status_apps.sends_no_message)
    summary = _summary(tmp_path / "run")
    assert summary["status"] == "failed"
    assert summary["reason"] == f"{type(raised.value).__name__}: {raised.value}"
    assert summary["rounds"] == 0


def test_a_server_app_waiting_for_more_nodes_exits_2_and_its_run_says_failed(tmp_path, capsys):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("name: toy\ndata: {clients: 4}\noutput: {plot: false}\nflower:\n"
                        "  run_config: {num-server-rounds: 2, min-available-nodes: 5}\n")  # fmt: skip
    apps = ["--server-app", "toy_app:server_app", "--client-app", "toy_app:client_app"]
    code = main(["flower", str(scenario), "--quiet", "--out", str(tmp_path / "run"), *apps])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    (said,) = [line for line in err.splitlines() if line.startswith("error: ")]
    summary = _summary(tmp_path / "run")
    assert summary["status"] == "failed" and "needs more than the 4 clients" in summary["reason"]
    assert summary["reason"] == "ConfigError: " + " ".join(said.removeprefix("error: ").split())


def test_a_flower_run_that_ends_normally_is_finished_or_target_reached(tmp_path):
    run = _flower_run(tmp_path, toy_app.server_app, flower={"run_config": {"num-server-rounds": 2}})
    assert run.summary["status"] == "finished" and not {"reason", "failed_stage", "error"} & run.summary.keys()
    # toy_app's evaluation: accuracy 0.15 after round 1, past a target of 0.1: round 2's train round never starts
    (tmp_path / "run").rename(tmp_path / "finished")
    run = _flower_run(
        tmp_path, toy_app.server_app, stop={"rounds": 5, "target_accuracy": 0.1},
        flower={"run_config": {"num-server-rounds": 5}},
    )  # fmt: skip
    assert run.summary["status"] == "target_reached" and run.summary["rounds"] == 1


class RefusesRound2(asyncfl.Callback):
    def on_aggregation(self, state, record) -> None:
        if record.round == 2:
            raise ConfigError("callback: round 2 is refused; allowed: round 1")


def test_a_k_async_flower_run_raising_mid_run_ends_failed_and_is_offered_the_flower_resume(tmp_path):
    s = asyncfl.Scenario.from_dict({
        "data": {"dataset": "digits", "clients": 2}, "server": {"mode": "k_async", "k": 1, "concurrency": 2},
        "algorithm": {"name": "fedasync"}, "stop": {"rounds": 4}, "output": {"plot": False},
        "flower": {"client_app": "x:app", "initial_arrays": "x:arrays"},
    })  # fmt: skip
    with pytest.raises(ConfigError, match="^callback: round 2 is refused; allowed: round 1$"):
        run_k_async(status_apps.plus_one, s, tmp_path / "run", first_arrays=lambda: [np.zeros(3, np.float32)],
                    callbacks=[RefusesRound2()])  # fmt: skip
    summary = _summary(tmp_path / "run")
    assert (
        summary["status"] == "failed"
        and summary["reason"] == "ConfigError: callback: round 2 is refused; allowed: round 1"
    )
    assert summary["rounds"] == 2
    with pytest.raises(ConfigError, match=r"continue it with `python -m asyncfl flower --resume .*run`, or read"):
        read_run(tmp_path / "run")
