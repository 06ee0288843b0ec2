"""FedNova (asyncfl/algorithms/fednova.py): hand-computed aggregations, equality with sample-weighted
FedAvg when every client ran the same number of steps, and the settings it refuses."""

from __future__ import annotations

from functools import partial

import pytest
import torch
from conftest import scenario, update

from asyncfl.algorithms import Context, Update, make_strategy
from asyncfl.config import ConfigError

_update = partial(update, lr=0.1, dtype=torch.float32)  # the shared builder


def _fednova(**params):
    return make_strategy(scenario(algorithm={"name": "fednova", **params}).algorithm, 3, torch.zeros(2))


def test_three_updates_by_hand():
    """deltas [1, 0], [0, 2], [3, 3]; steps 1, 2, 3; samples 10, 30, 60:
    p = [0.1, 0.3, 0.6]; tau_eff = 0.1*1 + 0.3*2 + 0.6*3 = 2.5;
    normalised d = [1, 0], [0, 1], [1, 1]; sum p_i d_i = [0.1 + 0.6, 0.3 + 0.6] = [0.7, 0.9];
    w = w0 + eta_g * 2.5 * [0.7, 0.9] = [1, -1] + [1.75, 2.25] (eta_g 1) or + [0.875, 1.125] (eta_g 0.5)."""
    updates = [
        _update(0, [1, 0], steps=1, samples=10),
        _update(1, [0, 2], steps=2, samples=30),
        _update(2, [3, 3], steps=3, samples=60),
    ]
    w0 = torch.tensor([1.0, -1.0])
    result = _fednova().aggregate(w0, updates, Context(version=0, time=0.0, num_clients=3))
    assert torch.allclose(result.params, torch.tensor([2.75, 1.25]), atol=1e-6)
    # weight of each raw delta: tau_eff * p_i / tau_i = 0.25, 0.375, 0.5
    assert result.weights == pytest.approx({0: 0.25, 1: 0.375, 2: 0.5})
    assert result.notes[1] == {"local_steps": 2, "tau_eff": pytest.approx(2.5)}
    half = _fednova(server_lr=0.5).aggregate(w0, updates, Context(version=0, time=0.0, num_clients=3))
    assert torch.allclose(half.params, torch.tensor([1.875, 0.125]), atol=1e-6)


def test_two_updates_by_hand_equal_samples():
    """deltas [4], [1]; steps 4, 1; samples 5, 5: p = 1/2 each; tau_eff = 2.5;
    sum p_i d_i = (4/4 + 1/1) / 2 = 1; w = 0 + 2.5 * 1 = 2.5  (FedAvg would give (4 + 1) / 2 = 2.5 too
    here, but with samples 9 and 1: FedAvg 0.9*4 + 0.1*1 = 3.7, FedNova tau_eff = 3.7, d = 0.9 + 0.1 = 1 -> 3.7;
    with steps 4 and 2, deltas [4], [1]: tau_eff = 0.9*4 + 0.1*2 = 3.8, sum p d = 0.9 + 0.05 = 0.95 -> 3.61)."""
    ctx = Context(version=0, time=0.0, num_clients=3)
    strategy = _fednova()
    two = [Update(0, torch.tensor([4.0]), 0, 0, 5, 4, 0.1), Update(1, torch.tensor([1.0]), 0, 0, 5, 1, 0.1)]
    assert strategy.aggregate(torch.zeros(1), two, ctx).params.item() == pytest.approx(2.5)
    skewed = [Update(0, torch.tensor([4.0]), 0, 0, 9, 4, 0.1), Update(1, torch.tensor([1.0]), 0, 0, 1, 2, 0.1)]
    assert strategy.aggregate(torch.zeros(1), skewed, ctx).params.item() == pytest.approx(3.61)


def test_equal_steps_is_fedavg_weighted_by_samples():
    torch.manual_seed(0)
    ctx = Context(version=0, time=0.0, num_clients=5)
    updates = [Update(c, torch.randn(50), 0, 0, n, 7, 0.1) for c, n in enumerate([3, 40, 12, 9, 100])]
    w0 = torch.randn(50)
    nova = make_strategy(scenario(algorithm={"name": "fednova"}).algorithm, 5, w0)
    fedavg = make_strategy(scenario(algorithm={"name": "fedavg", "weighting": "samples"}).algorithm, 5, w0)
    a, b = nova.aggregate(w0, updates, ctx), fedavg.aggregate(w0, updates, ctx)
    assert torch.allclose(a.params, b.params, atol=1e-6)
    assert a.weights == pytest.approx(b.weights)


def test_no_update_leaves_the_model():
    w0 = torch.tensor([1.0, 2.0])
    assert torch.equal(_fednova().aggregate(w0, [], Context(version=0, time=0.0, num_clients=3)).params, w0)


@pytest.mark.parametrize("key", ["momentum", "prox_mu"])
def test_momentum_and_prox_are_refused(key):
    with pytest.raises(ConfigError, match=f"training.{key} > 0 changes a_i"):
        scenario(algorithm={"name": "fednova"}, training={key: 0.5})


def test_k_async_is_refused():
    with pytest.raises(ConfigError, match="fednova"):
        scenario(algorithm={"name": "fednova"}, server={"mode": "k_async", "k": 2})
