"""The training work of ``epochs`` follows every client's own size (issue 45, item 11): the steps of a task
are ceil(E n_i / min(batch, n_i)) for client i, so with natural, heavy-tailed sizes the mean client's steps
are far from the mean of the clients' steps (shakespeare_sync: 1 step from the mean size, 7.5 from the
sizes)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from asyncfl.cli import main
from asyncfl.config import load_scenario, validate_scenario
from asyncfl.config.runnable import check_runnable
from asyncfl.config.training_work import training_work
from asyncfl.errors import ConfigError
from asyncfl.learn.datasets import REGISTRY as DATASETS
from asyncfl.learn.datasets import load_arrays, shakespeare
from asyncfl.sim.clients import ClientDevice, Work

SHAKESPEARE = {
    "name": "roles",
    "data": {"dataset": "shakespeare", "clients": 3, "test_fraction": 0.1},
    "model": {"name": "lstm_shakespeare"},
    "training": {"local_work": {"kind": "epochs", "epochs": 0.5}, "batch_size": 10},
    "server": {"mode": "sync"},
    "stop": {"rounds": 2},
}


def test_epochs_count_each_clients_own_size(monkeypatch):
    """Clients of 4, 25 and 100 training samples, 0.5 epochs of batch 10: ceil(0.5 x 4 / 4) = 1,
    ceil(0.5 x 25 / 10) = 2, ceil(0.5 x 100 / 10) = 5 steps, a mean of 8/3; 2 rounds x 3 clients: 16.
    The mean size (43) would say ceil(0.5 x 43 / 10) = 3 steps, 18 client-steps."""
    entry = dataclasses.replace(DATASETS["shakespeare"], client_sizes=lambda data: [4, 25, 100])
    monkeypatch.setitem(DATASETS, "shakespeare", entry)
    work = training_work(validate_scenario(SHAKESPEARE))
    assert work.steps_per_task == pytest.approx(8 / 3) and work.client_steps == pytest.approx(16)
    assert work.sentence() == (
        "training work: about 16 client-steps: 2 rounds x 3 clients each x 2.7 local steps (training.local_work.epochs)"
    )


def test_shakespeare_sizes_are_those_its_load_gives():
    """client_sizes reads the roles' lengths only; loading builds the windows: the same training splits."""
    data = validate_scenario({**SHAKESPEARE, "data": {**SHAKESPEARE["data"], "clients": 40}}).data
    raw = load_arrays(data, seed=0)
    assert shakespeare.client_sizes(data) == np.bincount(raw.client_of_train).tolist()


def test_the_shipped_scenarios_work_is_the_sum_over_its_roles():
    """Every role is asked every round, so the work is rounds x the sum of Work.steps over the loaded roles."""
    scenario = load_scenario("scenarios/shakespeare_sync.yaml")
    work, training = training_work(scenario), scenario.training
    rule = Work(0, training.batch_size, 0, epochs=training.local_work.epochs)
    sizes = np.bincount(load_arrays(scenario.data, seed=0).client_of_train)
    steps = sum(rule.steps(ClientDevice(k, None, None, None, train_samples=int(n))) for k, n in enumerate(sizes))
    assert work.client_steps == pytest.approx(scenario.stop.rounds * steps)


def test_a_missing_data_file_is_one_problem_not_two(tmp_path, monkeypatch):
    """Without the file no size is known; the estimate falls back and the files check alone reports it."""
    monkeypatch.setattr(shakespeare, "DATA_FILE", tmp_path / "shakespeare.json.xz")
    scenario = validate_scenario(SHAKESPEARE)
    assert shakespeare.client_sizes(scenario.data) is None
    with pytest.raises(ConfigError) as raised:
        check_runnable(scenario)
    problem = str(raised.value)
    assert problem.startswith("data.dataset shakespeare: its data file") and "problem(s)" not in problem


def test_synthetic_epochs_average_the_steps_of_drawn_sizes():
    """Sizes 2 or 80 with equal odds (test_fraction 0.5: 1 or 40 train), 1 epoch of batch 10: 1 or 4 steps,
    2.5 a task on average; the mean size (20.5 train) would say ceil(20.5 / 10) = 3."""
    raw = {
        "name": "drawn",
        "data": {"dataset": "synthetic", "clients": 4, "test_fraction": 0.5,
                 "synthetic": {"samples_per_client": {"dist": "tiers", "tiers": [{"share": 0.5, "value": 2},
                                                                                 {"share": 0.5, "value": 80}]}}},
        "model": {"name": "logreg"},
        "training": {"local_work": {"kind": "epochs", "epochs": 1}, "batch_size": 10},
    }  # fmt: skip
    assert training_work(validate_scenario(raw)).steps_per_task == pytest.approx(2.5, abs=0.15)


@pytest.mark.slow
def test_the_estimate_is_the_steps_of_the_tasks_the_run_began(tmp_path, capsys):
    """Two rounds of the shipped scenario: clients.csv's attempts x each client's steps, summed, is the
    estimate the run's start printed (every task begun; those past the deadline are not trained)."""
    out = tmp_path / "run"
    code = main(["scenarios/shakespeare_sync.yaml", "--quiet", "--out", str(out), "--set", "stop.rounds=2",
                 "--set", "output.plot=false"])  # fmt: skip
    assert code == 0
    scenario = load_scenario("scenarios/shakespeare_sync.yaml", ["stop.rounds=2"])
    clients = pd.read_csv(out / "clients.csv")
    n, epochs = clients["train_samples"], scenario.training.local_work.epochs
    steps = [max(1, math.ceil(epochs * k / min(scenario.training.batch_size, k) - 1e-9)) for k in n]
    begun = int((clients["attempts"] * steps).sum())
    assert f"training work: about {begun:,} client-steps: 2 rounds" in capsys.readouterr().err
    assert training_work(scenario).client_steps == pytest.approx(begun)


@pytest.mark.parametrize(("server", "noted"), [
    ({"mode": "sync", "deadline_s": 60}, True),
    ({"mode": "sync", "deadline_s": 60, "late_updates": "next_round"}, False),  # late updates are aggregated
    ({"mode": "sync"}, False),
])  # fmt: skip
def test_the_work_says_when_a_deadline_leaves_tasks_untrained(server, noted):
    sentence = training_work(validate_scenario({**SHAKESPEARE, "server": server})).sentence()
    assert sentence.endswith("; tasks that miss server.deadline_s are counted, not trained") == noted
