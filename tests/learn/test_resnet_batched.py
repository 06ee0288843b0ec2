"""ResNet-18 with GroupNorm on the ``vmap`` batched trainer gives the sequential reference's deltas, to a
measured tolerance: its 20 layers of float32 sums round differently in ``vmap``'s grouped convolutions and
decomposed GroupNorm than in the per-client kernels.  Measured gaps (largest absolute delta difference):
2.0e-5 on CIFAR-shaped inputs (1 step of batch 32, lr 0.05; benchmarks/performance/bench_realistic.py) and
2e-7 here (8x8 images, batch 4, lr 0.05, momentum); the bound is 5e-5, against deltas of 1e-2 and more."""

from __future__ import annotations

import pytest
import torch
from conftest import federation_on

from asyncfl.learn.batched import BatchedTrainer
from asyncfl.learn.federation import Federation
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Training

RESNET_TOL = 5e-5


def small_images(clients: int = 3, samples: int = 6) -> Federation:
    gen = torch.Generator().manual_seed(5)
    total = clients * samples
    features = torch.randn(total, 3, 8, 8, generator=gen)
    labels = torch.randint(0, 10, (total,), generator=gen)
    train = list(torch.arange(total).view(clients, samples))
    return Federation(features, labels, train, [train[0][:0]] * clients, train[0][:0], 10, (3, 8, 8))


@pytest.mark.slow  # 11M parameters: building and stepping them takes seconds on a small CPU
def test_resnet18_gn_batched_equals_sequential(test_device):
    """Two chunks (chunk_size 2 over 3 jobs), 1 or 2 steps per job, momentum."""
    fed = federation_on(small_images(), test_device)
    torch.manual_seed(0)
    model = build_model("resnet18", fed.input_shape, fed.num_classes).to(fed.features.device)
    base = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    training = Training(batch_size=4, lr=0.05, momentum=0.9)
    jobs = [TrainingJob(c, 0, 0, 1 + c % 2) for c in range(3)]
    seq = SequentialTrainer(model, fed, training, 0).run(base, jobs)
    batched = BatchedTrainer(model, fed, training, 0, chunk_size=2).run(base, jobs)
    gap = max(float((a.delta - b.delta).abs().max()) for a, b in zip(seq, batched))
    assert gap <= RESNET_TOL
    assert max(abs(a.train_loss - b.train_loss) for a, b in zip(seq, batched)) <= RESNET_TOL
    assert min(float(r.delta.abs().max()) for r in seq) > 1e-2  # the deltas are not trivially zero
