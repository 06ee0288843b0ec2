"""``trainer.workers`` without Ray: how a group of jobs is cut into worker calls, and the job book's side of a
remote trainer (asyncfl.learn.workers, asyncfl.learn.jobs).  A stand-in pool trains each call in this process with
the batched trainer, so what is checked is the bookkeeping: every job sent once, in calls that depend on the
group alone, results waited for only when asked, a checkpoint holding results and never calls in flight."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from asyncfl.config.schema import Data
from asyncfl.learn.batched import FusedTrainer
from asyncfl.learn.federation import build_federation
from asyncfl.learn.jobs import JobBook
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import TrainingJob
from asyncfl.learn.training import Training
from asyncfl.learn.workers import Call, calls_of


@pytest.mark.parametrize(
    ("count", "most", "sizes"),
    [
        (10, 8, [5, 5]),
        (20, 8, [7, 7, 6]),
        (8, 8, [8]),
        (9, 8, [5, 4]),
        (3, 1, [1, 1, 1]),
        (0, 8, []),
        (17, 5, [5, 4, 4, 4]),
    ],
)
def test_a_group_is_cut_into_the_fewest_near_equal_calls(count, most, sizes):
    assert [len(call) for call in calls_of(count, most)] == sizes


@given(st.integers(0, 500), st.integers(1, 64))
def test_calls_cover_the_group_in_order_and_never_exceed_the_limit(count, most):
    calls = calls_of(count, most)
    assert [i for call in calls for i in call] == list(range(count))
    assert len(calls) == math.ceil(count / most)
    if calls:
        lengths = [len(call) for call in calls]
        assert max(lengths) <= most and max(lengths) - min(lengths) <= 1


class InProcessPool:
    """A stand-in for :class:`~asyncfl.learn.workers.WorkerPool`: ``send`` cuts the group as the pool does and
    trains nothing yet; ``results`` trains the call (as a worker would) and counts it."""

    remote, batched = True, False

    def __init__(self, trainer, jobs_per_call: int) -> None:
        self.trainer, self.jobs_per_call = trainer, jobs_per_call
        self.sent: list[list[tuple[int, int]]] = []
        self.gathered = 0
        self.closed = False

    def send(self, bases, jobs):
        calls = []
        for positions in calls_of(len(jobs), self.jobs_per_call):
            part = [jobs[i] for i in positions]
            work = ([bases[job.base_version] for job in part], part)
            calls.append(Call([(job.client, job.attempt) for job in part], work, 0))
            self.sent.append(calls[-1].keys)
        return calls

    def results(self, call):
        self.gathered += 1
        return self.trainer.run(*call.handle)

    def close(self):
        self.closed = True


@pytest.fixture(scope="module")
def trainer():
    fed = build_federation(Data(dataset="digits", clients=12), 0, torch.device("cpu"))
    torch.manual_seed(0)
    model = build_model("mlp", fed.input_shape, fed.num_classes, hidden=16, layers=1)
    base = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    return FusedTrainer(model, fed, Training(batch_size=8, lr=0.1), 0, None), base


def _jobs(clients, version=0):
    return [TrainingJob(c, version, 0, 1 + c % 3) for c in clients]


def _book_with_sent_group(trainer, jobs_per_call: int, count: int) -> tuple[InProcessPool, JobBook]:
    """A job book over a stand-in pool, ``count`` jobs from base 0 submitted and dispatched as one group."""
    local, base = trainer
    pool = InProcessPool(local, jobs_per_call)
    book = JobBook(pool)
    book.publish(0, base)
    for job in _jobs(range(count)):
        book.submit(job)
    book.dispatch()
    return pool, book


def test_each_queued_group_is_sent_once_and_results_match_the_calls_trained_alone(trainer):
    local, base = trainer
    pool, book = _book_with_sent_group(trainer, jobs_per_call=3, count=7)
    book.dispatch()  # nothing new: nothing sent
    assert pool.sent == [[(0, 0), (1, 0), (2, 0)], [(3, 0), (4, 0)], [(5, 0), (6, 0)]]
    assert pool.gathered == 0  # sent, not waited for
    got = book.result(4, 0)
    assert pool.gathered == 1  # only the call holding job 4
    alone = local.run(base, _jobs([3, 4]))  # the same call, trained directly
    assert torch.equal(got.delta, alone[1].delta)
    assert book.result(3, 0).train_loss == alone[0].train_loss and pool.gathered == 1  # kept from that call


def test_a_checkpoint_holds_results_not_calls_in_flight(trainer):
    local, base = trainer
    pool, book = _book_with_sent_group(trainer, jobs_per_call=2, count=4)
    state = book.state()
    assert pool.gathered == 2 and not book.in_flight
    assert sorted(state["done"]) == [(c, 0) for c in range(4)]
    restored = JobBook(pool)
    restored.restore(state)
    assert torch.equal(restored.result(2, 0).delta, local.run(base, _jobs([2, 3]))[0].delta)
    assert pool.gathered == 2  # nothing trained again


def test_a_job_dropped_as_stale_while_in_flight_is_not_kept(trainer):
    local, base = trainer
    pool = InProcessPool(local, jobs_per_call=4)
    book = JobBook(pool, max_staleness=1)
    book.publish(0, base)
    book.submit(TrainingJob(0, 0, 0, 1))
    book.dispatch()
    book.publish(1, base + 1)
    book.submit(TrainingJob(1, 1, 0, 1))
    book.dispatch()
    book.publish(2, base + 2)  # job (0, 0), base 0, is now 2 versions behind: dropped
    assert (0, 0) not in book.pending and 0 not in book.bases
    assert book.result(1, 0).num_steps == 1
    book.state()  # gathers the dropped job's call too
    assert not book.done and not book.in_flight
    book.close()
    assert pool.closed
