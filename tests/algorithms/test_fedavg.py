"""FedAvg and FedBuff against hand-computed values, and the learner's use of the trainer's deltas."""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch
from conftest import scenario, update

from asyncfl.algorithms import Context, Update, make_strategy
from asyncfl.algorithms.staleness import (
    ExponentialStaleness,
    HingeStaleness,
    PolynomialStaleness,
    staleness_weight,
)

_update = partial(update, steps=5, lr=0.1, dtype=torch.float32)  # the shared builder, as FedAvg's tests use it


def _strategy(name, **params):
    algorithm = {"name": name, **params}
    mode = "k_async" if name == "fedbuff" else "sync"
    s = scenario(algorithm=algorithm, server={"mode": mode, "k": 2} if mode == "k_async" else {})
    return make_strategy(s.algorithm, 4, torch.zeros(2))


CTX = Context(version=0, time=0.0, num_clients=4)


def test_fedavg_is_the_mean_of_received_deltas():
    w = torch.tensor([1.0, -1.0])
    updates = [_update(0, [1.0, 2.0]), _update(2, [3.0, -4.0]), _update(3, [-1.0, 0.5])]
    out = _strategy("fedavg").aggregate(w, updates, CTX)
    assert out.params.tolist() == pytest.approx([1.0 + 1.0, -1.0 - 0.5])  # mean = (1, -0.5)
    assert out.weights == pytest.approx({0: 1 / 3, 2: 1 / 3, 3: 1 / 3})


def test_fedavg_sample_weighting_and_server_lr():
    w = torch.zeros(2)
    updates = [_update(0, [1.0, 0.0], samples=30), _update(1, [0.0, 1.0], samples=10)]
    out = _strategy("fedavg", weighting="samples", server_lr=2.0).aggregate(w, updates, CTX)
    assert out.params.tolist() == pytest.approx([2.0 * 0.75, 2.0 * 0.25])


def test_fedavg_without_updates_keeps_the_model_and_does_not_mutate_inputs():
    w = torch.tensor([1.0, 2.0])
    assert _strategy("fedavg").aggregate(w, [], CTX).params.tolist() == [1.0, 2.0]
    delta = torch.tensor([1.0, 1.0])
    _strategy("fedavg").aggregate(w, [Update(0, delta, 0, 0, 1, 1, 0.1)], CTX)
    assert w.tolist() == [1.0, 2.0] and delta.tolist() == [1.0, 1.0]


def test_fedbuff_discounts_stale_updates():
    """K = 2, polynomial a = 0.5: weights s(0)/2 = 0.5 and s(3)/2 = (1 + 3)^-0.5 / 2 = 0.25."""
    w = torch.zeros(2)
    updates = [_update(0, [4.0, 0.0], staleness=0), _update(1, [0.0, 4.0], staleness=3)]
    out = _strategy("fedbuff").aggregate(w, updates, CTX)
    assert out.params.tolist() == pytest.approx([2.0, 1.0])
    assert out.notes[1]["staleness"] == 3


@pytest.mark.parametrize(
    ("spec", "tau", "expected"),
    [
        (PolynomialStaleness(kind="polynomial", a=0.5), 3, 0.5),
        (HingeStaleness(kind="hinge", a=10, b=4), 4, 1.0),
        (HingeStaleness(kind="hinge", a=10, b=4), 6, 1 / 21),
        (ExponentialStaleness(kind="exponential"), 2, (math.e / 2) ** -2),
    ],
)
def test_staleness_functions(spec, tau, expected):
    assert staleness_weight(spec, tau) == pytest.approx(expected)


def test_learner_applies_the_mean_of_the_trainers_deltas():
    """One sync round through the Learner equals w0 + mean of independently trained deltas."""
    from asyncfl.learn.federation import build_federation
    from asyncfl.learn.models import build_model
    from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
    from asyncfl.runner.learning import Learner
    from asyncfl.runner.record import staleness_of
    from asyncfl.sim.clients import TaskPlan
    from asyncfl.sim.servers import ClosedRound

    s = scenario(data={"dataset": "digits", "clients": 4}, model={"name": "logreg"})
    fed = build_federation(s.data, s.seed, torch.device("cpu"))
    model = build_model("logreg", fed.input_shape, fed.num_classes)
    w0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()
    trainer = SequentialTrainer(model, fed, s.training, s.seed)
    learner = Learner(model, fed, make_strategy(s.algorithm, 4, w0), trainer, s.training)
    plans = [TaskPlan(c, 0, 0, 0.0, [], 1.0) for c in (0, 2, 3)]
    closed = ClosedRound(1, 0.0, 1.0, selected=[0, 1, 2, 3], received=plans, started_tasks=plans)
    learner.queue(closed.started_tasks)
    learner.apply(closed, learner.train(closed, staleness_of(closed)), record_weights=False)
    deltas = [trainer.run(w0, [TrainingJob(c, 0, 0, s.training.local_steps)])[0].delta for c in (0, 2, 3)]
    expected = w0 + torch.stack(deltas).mean(0)
    assert torch.allclose(learner.params, expected, atol=1e-6)
    assert not torch.allclose(learner.params, w0)
