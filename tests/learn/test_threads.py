"""trainer.threads: the torch CPU thread count a run trains with, and that the caller's is restored."""

from __future__ import annotations

import pytest
import torch
from conftest import run
from torch import nn

from asyncfl.config import ConfigError, validate_scenario
from asyncfl.learn.executors import CPU_BATCHED_MAX_PARAMS, training_threads
from asyncfl.learn.training import Trainer
from asyncfl.runner.simulation import Simulation

CPU, CUDA = torch.device("cpu"), torch.device("cuda")  # a device object only: nothing runs on it


def test_default_pins_one_thread_for_small_cpu_models_only():
    small = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
    large = nn.Linear(CPU_BATCHED_MAX_PARAMS, 2)  # 2M parameters
    assert training_threads(small, CPU, Trainer()) == 1
    assert training_threads(large, CPU, Trainer()) is None  # torch's default
    assert training_threads(small, CUDA, Trainer()) is None
    assert training_threads(small, CPU, Trainer(threads=3)) == 3
    assert training_threads(large, CUDA, Trainer(threads=2)) == 2


@pytest.mark.parametrize("bad", [0, -1, "many", 1.5])
def test_bad_thread_counts_name_the_key(bad):
    with pytest.raises(ConfigError, match="trainer.threads"):
        validate_scenario({"trainer": {"threads": bad}})


@pytest.mark.parametrize("threads, expected", [(None, 1), (2, 2)])
def test_a_run_trains_with_its_threads_and_restores_the_callers(tmp_path, monkeypatch, threads, expected):
    seen: list[int] = []
    close_round = Simulation._close_round

    def spy(self, info):
        seen.append(torch.get_num_threads())
        return close_round(self, info)

    monkeypatch.setattr(Simulation, "_close_round", spy)
    torch.set_num_threads(3)
    try:
        run(tmp_path, data={"clients": 4}, model={"name": "logreg"}, trainer={"threads": threads},
            stop={"rounds": 2}, output={"plot": False})  # fmt: skip
        assert seen and set(seen) == {expected}
        assert torch.get_num_threads() == 3  # the caller's setting is back
    finally:
        torch.set_num_threads(1)  # conftest's
