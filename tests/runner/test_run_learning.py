"""The learning side (asyncfl.runner.learning) and its stand-ins: queued jobs trained when a closed round
needs them, the staleness the loop computed handed to the strategy, what the aggregation returns."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import scenario

from asyncfl.algorithms import make_strategy
from asyncfl.learn.federation import build_federation
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import SequentialTrainer
from asyncfl.runner.learning import Learner, all_finite
from asyncfl.runner.record import staleness_of
from asyncfl.runner.replay import ReplayLearner
from asyncfl.runner.timing_learning import TimingLearner
from asyncfl.sim.clients import TaskPlan
from asyncfl.sim.servers import ClosedRound


@pytest.fixture
def learner():
    s = scenario(data={"dataset": "digits", "clients": 4}, model={"name": "logreg"}, algorithm={"name": "fedbuff"},
                 server={"mode": "k_async", "k": 2, "concurrency": 4})  # fmt: skip
    fed = build_federation(s.data, s.seed, torch.device("cpu"))
    model = build_model("logreg", fed.input_shape, fed.num_classes)
    w0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()
    trainer = SequentialTrainer(model, fed, s.training, s.seed)
    return Learner(model, fed, make_strategy(s.algorithm, 4, w0), trainer, s.training)


def test_jobs_are_computed_only_when_a_closed_round_needs_them_and_carry_the_loops_staleness(learner):
    first = [TaskPlan(0, 0, 0, 0.0, [], 1.0), TaskPlan(1, 0, 0, 0.0, [], 2.0), TaskPlan(2, 0, 0, 0.0, [], 9.0)]
    closed = ClosedRound(1, 0.0, 2.0, received=first[:2], started_tasks=first)
    learner.queue(closed.started_tasks)
    assert learner.jobs.computed == 0  # queued, not trained
    updates = learner.train(closed, staleness_of(closed))
    assert learner.jobs.computed == 2  # sequential: only the two received
    learned = learner.apply(closed, updates, record_weights=True)
    assert learner.version == 1 and [u.staleness for u in updates] == [0, 0]
    assert len(learned.train_loss) == 2 and all(math.isfinite(x) for x in learned.train_loss)
    assert {row["round"] for row in learned.weight_rows} == {1} and not learned.diverged
    # the round that makes version 2 receives client 2's update, started from version 0: one version behind
    later = ClosedRound(2, 2.0, 9.0, received=[first[2], TaskPlan(3, 1, 0, 3.0, [], 8.0)])
    learner.queue([later.received[1]])
    updates = learner.train(later, staleness_of(later))
    assert [(u.client, u.base_version, u.staleness) for u in updates] == [(2, 0, 1), (3, 1, 0)]


def test_a_model_with_non_finite_parameters_has_diverged(learner):
    learner.params = torch.full_like(learner.params, math.nan)
    closed = ClosedRound(1, 0.0, 1.0)
    assert learner.apply(closed, [], record_weights=False).diverged


@pytest.mark.parametrize("stand_in", [TimingLearner(4000), ReplayLearner()], ids=["timing", "replay"])
def test_the_stand_ins_train_nothing_and_return_nan_losses(stand_in):
    received = [TaskPlan(c, 0, 0, 0.0, [], 1.0) for c in (0, 1, 2)]
    closed = ClosedRound(1, 0.0, 1.0, received=received, started_tasks=received)
    stand_in.queue(closed.started_tasks)
    assert stand_in.train(closed, staleness_of(closed)) == []
    learned = stand_in.apply(closed, [], record_weights=True)
    assert len(learned.train_loss) == 3 and all(math.isnan(x) for x in learned.train_loss + learned.train_loss_sq)
    assert learned.weight_rows == () and not learned.diverged


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_all_finite_finds_any_nan_or_infinity_wherever_it_is(dtype):
    """The divergence check (Learner.apply) reads a vector's least and greatest values: NaN propagates through
    both, so a single NaN or infinity anywhere makes it false; the largest finite numbers are finite."""
    vector = torch.randn(1000).to(dtype)
    assert all_finite(vector) and all_finite(torch.full((3,), torch.finfo(dtype).max, dtype=dtype))
    for bad in (math.nan, math.inf, -math.inf):
        for at in (0, 500, 999):
            broken = vector.clone()
            broken[at] = bad
            assert not all_finite(broken)
