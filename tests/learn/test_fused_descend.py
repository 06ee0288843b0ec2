"""FusedTrainer.descend: a plain SGD step fused into the backward pass (``W -= lr * dh^T a`` by one
``baddbmm_``).  It must give the sequential reference's deltas to float rounding, be taken exactly where the
rule is plain SGD at full precision on every row of a step, and leave the other steps to gradients() and
masked_sgd_step."""

from __future__ import annotations

import pytest
import torch
from conftest import federation_on

from asyncfl.config.schema import Data
from asyncfl.learn.batched import FusedTrainer
from asyncfl.learn.federation import build_federation
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Training

TOL = 1e-5  # as tests/learn/test_batched.py: float32 rounding of a few local steps


@pytest.fixture(scope="module")
def digits(test_device):
    return federation_on(build_federation(Data(dataset="digits", clients=20), 0, torch.device("cpu")), test_device)


def _counted(trainer):
    """The trainer with its descend and gradients calls counted."""
    calls = {"descend": 0, "gradients": 0}
    for name in calls:
        method = getattr(trainer, name)

        def counted(*args, _method=method, _name=name, **kwargs):
            calls[_name] += 1
            return _method(*args, **kwargs)

        setattr(trainer, name, counted)
    return trainer, calls


@pytest.mark.parametrize("layers", [1, 2])
def test_plain_sgd_descends_in_one_pass_to_the_references_deltas(digits, layers):
    torch.manual_seed(0)
    model = build_model("mlp", digits.input_shape, digits.num_classes, hidden=32, layers=layers).to(
        digits.features.device
    )
    base = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    training = Training(batch_size=8, lr=0.3)
    jobs = [TrainingJob(c, 0, c % 2, 3 + c % 3) for c in range(12)]  # 3 to 5 steps: masked steps too
    reference = SequentialTrainer(model, digits, training, 0).run(base, jobs)
    trainer, calls = _counted(FusedTrainer(model, digits, training, 0, chunk_size=12))
    fused = trainer.run(base, jobs)
    assert calls == {"descend": 3, "gradients": 2}  # steps 0-2 every job takes; 3 and 4 are masked
    assert max(float((a.delta - b.delta).abs().max()) for a, b in zip(reference, fused)) <= TOL
    assert max(abs(a.train_loss - b.train_loss) for a, b in zip(reference, fused)) <= TOL
    assert min(float(r.delta.abs().max()) for r in reference) > 1e-3  # the steps moved the weights


@pytest.mark.parametrize("rule", [{"momentum": 0.9}, {"weight_decay": 1e-3}, {"prox_mu": 0.1}])
def test_any_other_rule_keeps_the_two_pass_step(digits, rule):
    model = build_model("mlp", digits.input_shape, digits.num_classes, hidden=16).to(digits.features.device)
    base = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    trainer, calls = _counted(FusedTrainer(model, digits, Training(batch_size=8, lr=0.1, **rule), 0))
    trainer.run(base, [TrainingJob(c, 0, 0, 2) for c in range(4)])
    assert calls == {"descend": 0, "gradients": 2}
