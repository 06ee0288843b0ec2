"""The fused batched trainer of the character LSTM (asyncfl/learn/fused_lstm.py) against torch's own LSTM: its
hand-written gradients in float64 against autograd, per client, on shared and on per-client weights; its
deltas and losses against the sequential trainer for cohorts with different client sizes, step counts and
bases; and the trainer ``trainer.executor: auto`` picks for the model."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn
from torch.func import functional_call
from torch.nn.utils import parameters_to_vector

from asyncfl.learn import fused_lstm
from asyncfl.learn.executors import auto_executor, make_trainer
from asyncfl.learn.fused_lstm import LstmFusedTrainer
from asyncfl.learn.models import build_model
from asyncfl.learn.models.lstm_shakespeare import LstmShakespeare
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Trainer, Training

LENGTH, VOCABULARY = 80, 80


def _federation(sizes: list[int], seed: int = 0) -> SimpleNamespace:
    """Clients with ``sizes`` random windows of LENGTH characters each (next-character labels)."""
    generator = torch.Generator().manual_seed(seed)
    start = np.cumsum([0] + sizes)
    x = torch.randint(0, VOCABULARY, (int(start[-1]), LENGTH), dtype=torch.uint8, generator=generator)
    y = torch.randint(0, VOCABULARY, (int(start[-1]),), generator=generator)
    train = [torch.arange(start[k], start[k + 1]) for k in range(len(sizes))]
    return SimpleNamespace(features=x, labels=y, client_train=train, client_test=train, test_indices=train[0])


def _model(units: int = 12, layers: int = 2) -> nn.Module:
    torch.manual_seed(0)
    return build_model("lstm_shakespeare", (LENGTH,), VOCABULARY, params=LstmShakespeare(units=units, layers=layers))


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("layers", [1, 3])
def test_the_written_out_gradients_equal_autograd_in_float64(shared, layers):
    """One step's per-client gradients and losses, float64, to 1e-10: every parameter, weighted padding rows
    included (client 1 has 4 real samples of 6, the others weigh theirs 1/6)."""
    model = _model(units=7, layers=layers).double()
    jobs, batch = 3, 6
    generator = torch.Generator().manual_seed(1)
    x = torch.randint(0, VOCABULARY, (jobs, batch, LENGTH), generator=generator)
    y = torch.randint(0, VOCABULARY, (jobs, batch), generator=generator)
    weight = torch.full((jobs, batch), 1 / batch, dtype=torch.float64)
    weight[1, 4:], weight[1, :4] = 0.0, 0.25
    base = {name: p.detach() for name, p in model.named_parameters()}
    if shared:  # every client on the same weights: the first step of a cohort from one base
        w = {name: p.expand(jobs, *p.shape).clone() for name, p in base.items()}
    else:
        w = {
            name: p + 0.1 * torch.randn(jobs, *p.shape, dtype=p.dtype, generator=generator) for name, p in base.items()
        }
    trainer = LstmFusedTrainer(model, _federation([batch] * jobs), Training(batch_size=batch), seed=0)
    trainer.shared_step = shared
    grads, loss, square = trainer.gradients(w, x, y, weight)
    for j in range(jobs):
        params = {name: w[name][j].clone().requires_grad_(True) for name in w}
        each = nn.functional.cross_entropy(functional_call(model, params, (x[j],)), y[j], reduction="none")
        reference = torch.autograd.grad((each * weight[j]).sum(), list(params.values()))
        for name, expected in zip(params, reference):
            torch.testing.assert_close(grads[name][j], expected, rtol=1e-10, atol=1e-12, msg=name)
        assert float(loss[j]) == pytest.approx(float((each.detach() * weight[j]).sum()), rel=1e-12)
        assert float(square[j]) == pytest.approx(float((each.detach().square() * weight[j]).sum()), rel=1e-12)


def _assert_same_results(reference, fused, rtol=1e-5):
    for a, b in zip(reference, fused, strict=True):
        assert a.num_steps == b.num_steps
        assert float(a.delta.abs().max()) > 1e-3  # the jobs did move the model
        torch.testing.assert_close(b.delta, a.delta, rtol=rtol, atol=1e-6)
        assert b.train_loss == pytest.approx(a.train_loss, rel=1e-6)
        assert b.train_loss_sq == pytest.approx(a.train_loss_sq, rel=1e-6)


class Recording(LstmFusedTrainer):
    """Notes each chunk's step count and, per local step, whether it ran on shared weights."""

    def train_rows(self, rows, index, weight, steps):
        self.chunk_steps.append(max(steps))
        return super().train_rows(rows, index, weight, steps)

    def gradients(self, w, x, y, weight):
        self.calls.append(self.shared_step)
        return super().gradients(w, x, y, weight)


@pytest.mark.parametrize("bases", ["one", "per job"])
def test_the_fused_trainer_gives_the_sequential_deltas_from_one_base_or_many(bases):
    """Clients of 2 to 31 samples (batches of 2 to 10), 1 to 4 steps, momentum, weight decay and FedProx: the
    same deltas and losses, in chunks of 4; from one base every chunk's first step runs on shared weights,
    from per-job bases (K-async: different model versions) none does."""
    model = _model()
    sizes = [2, 31, 10, 5, 17, 9, 12]
    fed = _federation(sizes)
    training = Training(batch_size=10, lr=0.3, momentum=0.9, weight_decay=1e-3, prox_mu=0.01)
    vector = parameters_to_vector(model.parameters()).detach()
    jobs = [TrainingJob(k, 0, attempt=k % 2, steps=1 + k % 4) for k in range(len(sizes))]
    if bases == "one":
        base = vector
    else:
        generator = torch.Generator().manual_seed(2)
        base = [vector + 0.05 * torch.randn(vector.shape, generator=generator) for _ in jobs]
    reference = SequentialTrainer(model, fed, training, seed=5).run(base, jobs)
    fused = Recording(model, fed, training, seed=5, chunk_size=4)
    fused.calls, fused.chunk_steps = [], []
    _assert_same_results(reference, fused.run(base, jobs))
    assert len(fused.chunk_steps) >= 2
    first_steps = [step == 0 for steps in fused.chunk_steps for step in range(steps)]
    assert fused.calls == (first_steps if bases == "one" else [False] * len(first_steps))


def test_leafs_model_matches_the_sequential_trainer_on_a_cohort():
    """LEAF's sizes (8, 2 x 256): five clients, two steps from one base, then the same jobs from two bases."""
    model = _model(units=256)
    fed = _federation([10, 14, 3, 25, 10], seed=3)
    training = Training(batch_size=10, lr=0.8)
    vector = parameters_to_vector(model.parameters()).detach()
    jobs = [TrainingJob(k, 0, 0, 2) for k in range(5)]
    for base in (vector, [vector, vector.clone(), vector, vector.clone(), vector]):
        reference = SequentialTrainer(model, fed, training, seed=0).run(base, jobs)
        _assert_same_results(reference, LstmFusedTrainer(model, fed, training, seed=0).run(base, jobs), rtol=1e-4)


def test_auto_picks_the_sequential_trainer_on_the_cpu_and_the_fused_one_on_cuda():
    model, fed = _model(), _federation([12, 4])
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert auto_executor(model, cpu) == "sequential" and auto_executor(model, cuda) == "fused"
    auto = make_trainer(model, fed, Training(), 0, Trainer(executor="auto"), cpu)
    assert isinstance(auto, SequentialTrainer)
    fused = make_trainer(model, fed, Training(), 0, Trainer(executor="fused", chunk_size=3), cpu)
    assert isinstance(fused, LstmFusedTrainer) and fused.chunk_size == 3
    jobs = [TrainingJob(0, 0, 0, 2), TrainingJob(1, 0, 0, 1)]
    vector = parameters_to_vector(model.parameters()).detach()
    _assert_same_results(auto.run(vector, jobs), fused.run(vector, jobs))


def test_the_cpu_chunk_is_bounded_by_its_budget():
    """LEAF's model at batch 10 keeps ~15 MB of activations a client: a 256 MB budget holds about ten."""
    trainer = LstmFusedTrainer(_model(units=256), _federation([10]), Training(batch_size=10), 0)
    assert trainer.chunk_size == fused_lstm.CPU_LSTM_CHUNK_BYTES // trainer.bytes_per_client()
    assert 5 <= trainer.chunk_size <= 12
