"""The sequential trainer's gradient (asyncfl.learn.trainer.flat_gradient): one autograd leaf per parameter
tensor, concatenated, gives the very bits of the gradient with respect to one flat parameter vector (what the
trainer took before, at the cost of a zero-padded copy of the whole vector per tensor), and zeros for a
parameter the loss does not use."""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call

from asyncfl.learn.federation import Federation
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob, flat_gradient, unflatten
from asyncfl.learn.training import Training


def test_flat_gradient_has_the_bits_of_the_flat_leaf_gradient():
    torch.manual_seed(0)
    model = build_model("lenet5", (1, 8, 8), 10)
    flat = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    x, y = torch.randn(5, 1, 8, 8), torch.tensor([0, 3, 9, 3, 1])

    leaf = flat.clone().requires_grad_(True)
    loss = nn.functional.cross_entropy(functional_call(model, unflatten(model, leaf), (x,)), y)
    (reference,) = torch.autograd.grad(loss, leaf)

    leaves = {name: view.detach().requires_grad_(True) for name, view in unflatten(model, flat).items()}
    loss = nn.functional.cross_entropy(functional_call(model, leaves, (x,)), y)
    ours = flat_gradient(loss, list(leaves.values()))
    assert ours.shape == reference.shape == flat.shape
    assert torch.equal(ours, reference)
    assert float(ours.abs().max()) > 1e-3


class WithUnused(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.used = nn.Linear(2, 2)
        self.unused = nn.Parameter(torch.ones(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.used(x)


def test_a_parameter_the_loss_does_not_use_gets_a_zero_gradient():
    """Linear(2, 2) with weight 0 and bias 0 on x = [1, 2], label 0: softmax [0.5, 0.5], so the weight's
    gradient is [[-0.5, -1], [0.5, 1]] and the bias's [-0.5, 0.5]; lr 1 moves the weights by minus that,
    and the unused parameter (first in the flat vector: a module's own
    parameters come before its children's) stays put."""
    model = WithUnused()
    with torch.no_grad():
        model.used.weight.zero_()
        model.used.bias.zero_()
    fed = _one_sample_federation()
    base = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    (result,) = SequentialTrainer(model, fed, Training(batch_size=1, lr=1.0), 0).run(base, [TrainingJob(0, 0, 0, 1)])
    assert torch.allclose(result.delta, torch.tensor([0.0, 0.0, 0.0, 0.5, 1.0, -0.5, -1.0, 0.5, -0.5]))


def _one_sample_federation():
    train = [torch.tensor([0])]
    return Federation(torch.tensor([[1.0, 2.0]]), torch.tensor([0]), train, [train[0][:0]], train[0][:0], 2, (2,))
