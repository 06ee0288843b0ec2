"""LEAF's FEMNIST CNN (``model.name: leaf_cnn``, asyncfl/learn/models/leaf_cnn.py): its size, that it runs on
the fused convolution kernel, and that the kernel gives the sequential reference's deltas (tolerance of
tests/learn/test_batched.py: 1e-5 in float32; 1e-4 where a max-pool window holds a near-tie)."""

from __future__ import annotations

import pytest
import torch
from conftest import TEST_DEVICE, federation_on

from asyncfl.config import ConfigError
from asyncfl.config.loading import validate_scenario
from asyncfl.learn.executors import auto_executor, make_trainer
from asyncfl.learn.federation import Federation
from asyncfl.learn.fused_conv import ConvFusedTrainer
from asyncfl.learn.models import build_model, parameter_count
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Trainer, Training

TOL = 1e-5 if torch.device(TEST_DEVICE).type == "cpu" else 1e-4
# A max-pool window whose two largest values are within float rounding of each other may route its gradient
# to the other one in the grouped convolution: measured once in five jobs of benchmarks/performance/
# bench_realistic.py's workload (a gap of 5.4e-5 in conv2's weight, 1.1e-5 in conv1's, the other four jobs
# within 1.5e-8), as LeNet-5 on digits' tied pixels (tests/learn/test_batched.py)
TIE_TOL = 1e-4


def femnist_shaped(clients: int = 4, samples: int = 12) -> Federation:
    """``clients`` clients of ``samples`` Gaussian-noise 1x28x28 images (no pixel ties inside a max-pool
    window) with labels among FEMNIST's 62 classes."""
    gen = torch.Generator().manual_seed(3)
    total = clients * samples
    features = torch.randn(total, 1, 28, 28, generator=gen)
    labels = torch.randint(0, 62, (total,), generator=gen)
    train = list(torch.arange(total).view(clients, samples))
    return Federation(features, labels, train, [train[0][:0]] * clients, train[0][:0], 62, (1, 28, 28))


def test_leaf_cnn_has_leafs_layers_and_size():
    """conv 1->32 5x5: 32*25 + 32 = 832; conv 32->64 5x5: 64*32*25 + 64 = 51,264; 28 -> 14 -> 7 after the two
    pools, so dense 64*7*7 = 3,136 -> 2,048: 3,136*2,048 + 2,048 = 6,424,576; 2,048 -> 62: 127,038.
    Total 6,603,710."""
    model = build_model("leaf_cnn", (1, 28, 28), 62)
    shapes = [tuple(p.shape) for p in model.parameters()]
    assert shapes == [(32, 1, 5, 5), (32,), (64, 32, 5, 5), (64,), (2048, 3136), (2048,), (62, 2048), (62,)]
    assert parameter_count(model) == 6_603_710
    assert model(torch.zeros(3, 1, 28, 28)).shape == (3, 62)


def test_auto_trains_leaf_cnn_with_the_fused_convolution_kernel():
    fed = femnist_shaped()
    model = build_model("leaf_cnn", fed.input_shape, fed.num_classes)
    for device in ("cpu", "cuda"):
        assert auto_executor(model, torch.device(device)) == "fused"
    trainer = make_trainer(model, fed, Training(), 0, Trainer(), torch.device("cpu"))
    assert isinstance(trainer, ConvFusedTrainer)


def test_fused_leaf_cnn_equals_sequential(test_device):
    """Momentum and weight decay, 1 or 2 steps per job (step masks), batch 10 as LEAF, two chunks; every job
    within TIE_TOL, the median one within TOL."""
    fed = federation_on(femnist_shaped(), test_device)
    torch.manual_seed(0)
    model = build_model("leaf_cnn", fed.input_shape, fed.num_classes).to(fed.features.device)
    base = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    training = Training(batch_size=10, lr=0.05, momentum=0.9, weight_decay=1e-3)
    jobs = [TrainingJob(c, 0, c % 2, 1 + c % 2) for c in range(3)]
    seq = SequentialTrainer(model, fed, training, 0).run(base, jobs)
    fused = ConvFusedTrainer(model, fed, training, 0, chunk_size=2).run(base, jobs)
    assert [r.num_steps for r in fused] == [1, 2, 1]
    gaps = sorted(float((a.delta - b.delta).abs().max()) for a, b in zip(seq, fused))
    assert gaps[1] <= TOL  # the median job
    assert gaps[-1] <= TIE_TOL
    assert max(abs(a.train_loss - b.train_loss) for a, b in zip(seq, fused)) <= TOL
    assert min(float(r.delta.abs().max()) for r in seq) > 1e-3  # the deltas are not trivially zero


def test_leaf_cnn_is_refused_on_data_that_are_not_images():
    with pytest.raises(ConfigError, match="leaf_cnn") as refused:
        validate_scenario({"data": {"dataset": "mnist1d"}, "model": {"name": "leaf_cnn"}})
    assert "convolves over images" in str(refused.value)
