"""The local update rule of asyncfl.learn.trainer is torch.optim.SGD's (dampening 0, no Nesterov)."""

from __future__ import annotations

import pytest
import torch

from asyncfl.learn.trainer import sgd_step
from asyncfl.learn.training import Training


@pytest.mark.parametrize("momentum, weight_decay", [(0.0, 0.0), (0.9, 0.0), (0.0, 0.05), (0.9, 0.05)])
def test_sgd_step_matches_torch_optim_sgd(momentum, weight_decay):
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(8, 5, generator=gen, dtype=torch.float64), torch.randn(8, generator=gen, dtype=torch.float64)
    start = torch.randn(5, generator=gen, dtype=torch.float64)

    def loss(w: torch.Tensor) -> torch.Tensor:
        return ((a @ w - b) ** 2).mean() + torch.sin(w).sum()  # not quadratic: gradients change with w

    cfg = Training(lr=0.1, momentum=momentum, weight_decay=weight_decay)
    w, buf = start.clone(), None
    for _ in range(6):
        leaf = w.detach().requires_grad_(True)
        (grad,) = torch.autograd.grad(loss(leaf), leaf)
        w, buf = sgd_step(leaf.detach(), grad, buf, cfg)

    param = torch.nn.Parameter(start.clone())
    optimizer = torch.optim.SGD([param], lr=0.1, momentum=momentum, weight_decay=weight_decay)
    for _ in range(6):
        optimizer.zero_grad()
        loss(param).backward()
        optimizer.step()
    assert not torch.equal(w, start)
    torch.testing.assert_close(w, param.detach(), rtol=0, atol=1e-12)
