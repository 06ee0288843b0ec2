"""trainer.tf32: full float32 unless a scenario opts into TF32 (asyncfl/learn/executors.py
float32_precision), and the fused convolutions' chunk bound on CUDA (issue 29, item 29).

On an H200, torch's default TF32 convolutions made the fused and sequential LeNet-5 trainers differ by
2e-3; in float32 by 1e-6 (the kernels' equality on CUDA: tests/learn/test_fused_conv.py with
ASYNCFL_TEST_DEVICE=cuda).  The chunk bound's test runs with ASYNCFL_TEST_DEVICE=cuda."""

from __future__ import annotations

import pytest
import torch

from asyncfl.config.schema import Data
from asyncfl.learn.executors import float32_precision
from asyncfl.learn.federation import build_federation
from asyncfl.learn.fused_conv import CONV_CUDA_CHUNK_CLIENTS, ConvFusedTrainer
from asyncfl.learn.models import build_model
from asyncfl.learn.training import Trainer, Training
from asyncfl.runner.simulation import Simulation
from asyncfl.runner.start import run_scenario
from tests.conftest import scenario

NEW_API = hasattr(torch.backends.cudnn, "conv") and hasattr(torch.backends.cudnn.conv, "fp32_precision")


def precisions() -> tuple:
    if NEW_API:
        return (
            torch.backends.cudnn.conv.fp32_precision,
            torch.backends.cudnn.rnn.fp32_precision,
            torch.backends.cuda.matmul.fp32_precision,
        )
    return torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32


@pytest.mark.parametrize("tf32", [False, True])
def test_precision_is_set_inside_and_restored_after(tf32):
    before = precisions()
    with float32_precision(Trainer(tf32=tf32)):
        inside = precisions()
    assert precisions() == before
    if NEW_API:
        assert inside == (("tf32",) * 3 if tf32 else ("ieee",) * 3)
    else:
        assert inside == (tf32, tf32)


def test_precision_is_restored_when_the_run_raises():
    before = precisions()
    with pytest.raises(KeyError), float32_precision(Trainer()):
        raise KeyError("boom")
    assert precisions() == before


def test_the_run_plays_in_float32_unless_it_opts_in(tmp_path, monkeypatch):
    seen, play = [], Simulation._play
    monkeypatch.setattr(Simulation, "_play", lambda self: (seen.append(precisions()), play(self))[1])
    before = precisions()
    for tf32 in (False, True):
        data, output = {"dataset": "digits", "clients": 4}, {"plot": False}  # figures: not what is checked
        s = scenario(data=data, stop={"rounds": 1}, trainer={"tf32": tf32}, output=output)
        assert (run_scenario(s, tmp_path / f"run_{tf32}") / "summary.json").exists()
    expected_off, expected_on = (("ieee",) * 3, ("tf32",) * 3) if NEW_API else ((False, False), (True, True))
    assert seen == [expected_off, expected_on]
    assert precisions() == before


@pytest.fixture(scope="module")
def noisy_digits(test_device):
    """digits on ``ASYNCFL_TEST_DEVICE`` (see tests/conftest.py)."""
    if test_device.type != "cuda":
        pytest.skip("the chunk bound is CUDA's: run with ASYNCFL_TEST_DEVICE=cuda on a GPU machine")
    return build_federation(Data(dataset="digits", clients=40), 0, test_device)


def test_cuda_fused_conv_chunks_are_bounded_in_clients(noisy_digits):
    fed = noisy_digits
    model = build_model("lenet5", fed.input_shape, fed.num_classes).to(fed.features.device)
    assert ConvFusedTrainer(model, fed, Training(), 0).chunk_size == CONV_CUDA_CHUNK_CLIENTS
    assert ConvFusedTrainer(model, fed, Training(), 0, chunk_size=500).chunk_size == 500  # an explicit size stays
