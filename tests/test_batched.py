"""The batched trainer gives the sequential reference's deltas (DESIGN.md sections 2 and 7).

Same update rule (momentum, weight decay), same minibatch order, clients with fewer samples than a
batch (weights 1/n) and with fewer local steps (step masks), chunking, and a whole run with either
executor.  Tolerance: max |difference| <= 1e-5 in float32.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from asyncfl.config.loading import validate_scenario
from asyncfl.config.schema import Data, Trainer, Training
from asyncfl.learn.batched import BatchedTrainer
from asyncfl.learn.executors import auto_executor, make_trainer
from asyncfl.learn.federation import build_federation
from asyncfl.learn.jobs import JobBook
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.results import read_csv
from asyncfl.runner import run_scenario

TOL = 1e-5


@pytest.fixture(scope="module")
def digits():
    """40 clients: about 29 training samples each, so a batch of 32 is cut to the client's size."""
    return build_federation(Data(dataset="digits", clients=40), 0, torch.device("cpu"))


def _model(name, fed, seed=0):
    torch.manual_seed(seed)
    model = build_model(name, fed.input_shape, fed.num_classes, hidden=32)
    return model, torch.nn.utils.parameters_to_vector(model.parameters()).detach()


def _jobs(clients):
    """Different clients, attempts and step counts (1 to 7)."""
    return [TrainingJob(c, 0, c % 3, 1 + (5 * c) % 7) for c in clients]


def _max_gap(a, b):
    deltas = max(float((x.delta - y.delta).abs().max()) for x, y in zip(a, b))
    losses = max(abs(x.train_loss - y.train_loss) for x, y in zip(a, b))
    return deltas, losses


@pytest.mark.parametrize("name", ["logreg", "mlp"])
def test_batched_equals_sequential_dense(digits, name):
    model, base = _model(name, digits)
    training = Training(batch_size=16, lr=0.1, momentum=0.9, weight_decay=1e-3)
    jobs = _jobs(range(0, 40, 2))
    sizes = {len(digits.client_train[j.client]) for j in jobs}
    steps = {j.steps for j in jobs}
    assert len(steps) > 3 and min(sizes) >= 16  # the cohort mixes step counts
    seq = SequentialTrainer(model, digits, training, 0).run(base, jobs)
    bat = BatchedTrainer(model, digits, training, 0, chunk_size=7).run(base, jobs)  # 3 chunks
    assert [r.num_steps for r in bat] == [j.steps for j in jobs]
    gap_delta, gap_loss = _max_gap(seq, bat)
    assert gap_delta <= TOL and gap_loss <= TOL
    assert min(float(r.delta.abs().max()) for r in seq) > 1e-3  # the deltas are not trivially zero


def test_small_clients_use_their_own_batch_size(digits):
    """Every client holds fewer than batch_size=64 samples: the reference uses batches of n, the
    batched trainer pads to 64 with weight-0 samples.  Multi-epoch orders (steps * n > n) included."""
    model, base = _model("mlp", digits)
    training = Training(batch_size=64, lr=0.2)
    jobs = [TrainingJob(c, 0, 1, 4 + c % 3) for c in range(8)]
    assert all(len(digits.client_train[c]) < 64 for c in range(8))
    seq = SequentialTrainer(model, digits, training, 0).run(base, jobs)
    bat = BatchedTrainer(model, digits, training, 0).run(base, jobs)
    assert max(_max_gap(seq, bat)) <= TOL
    index, weight, _ = BatchedTrainer(model, digits, training, 0).cohort_batches(jobs[:1])
    n = len(digits.client_train[0])
    assert torch.allclose(weight[0, 0].sum(), torch.tensor(1.0)) and int((weight[0, 0] > 0).sum()) == n


def test_lenet5_batched_equals_sequential(digits):
    """LeNet-5 on continuous inputs.  (On digits' integer-valued pixels a max-pool can hold an exact
    tie that the grouped convolution of the batched path breaks the other way -- an ulp-level
    difference in conv outputs that moves one gradient; see README "Performance".)"""
    gen = torch.Generator().manual_seed(1)
    fed = dataclasses.replace(digits, features=torch.randn(digits.features.shape, generator=gen))
    model, base = _model("lenet5", fed)
    training = Training(batch_size=16, lr=0.05, momentum=0.5, weight_decay=1e-4)
    jobs = _jobs(range(12))
    seq = SequentialTrainer(model, fed, training, 0).run(base, jobs)
    bat = BatchedTrainer(model, fed, training, 0).run(base, jobs)
    assert max(_max_gap(seq, bat)) <= TOL


def test_result_does_not_depend_on_cohort(digits):
    model, base = _model("mlp", digits)
    training = Training(batch_size=16)
    job = TrainingJob(5, 0, 2, 6)
    trainer = BatchedTrainer(model, digits, training, 0)
    alone = trainer.run(base, [job])[0]
    crowd = trainer.run(base, _jobs(range(10, 30)) + [job])[-1]
    assert float((alone.delta - crowd.delta).abs().max()) <= TOL


def test_job_book_batches_by_base_version(digits):
    """A batched trainer gets every outstanding job of one base version in one call; jobs of
    another version wait for their own call; results come back to the right (client, attempt)."""
    model, base = _model("logreg", digits)
    training = Training(batch_size=8)
    calls = []

    class Recording(BatchedTrainer):
        def run(self, base, jobs):
            calls.append([(j.client, j.base_version) for j in jobs])
            return super().run(base, jobs)

    book = JobBook(Recording(model, digits, training, 0))
    book.publish(0, base)
    for c in (1, 2, 3):
        book.submit(TrainingJob(c, 0, 0, 3))
    book.publish(1, base + 0.01)
    book.submit(TrainingJob(4, 1, 0, 3))
    got = book.result(2, 0)
    assert calls == [[(1, 0), (2, 0), (3, 0)]]
    reference = SequentialTrainer(model, digits, training, 0).run(base, [TrainingJob(2, 0, 0, 3)])[0]
    assert float((got.delta - reference.delta).abs().max()) <= TOL
    book.result(1, 0), book.result(4, 0)
    assert calls[1] == [(4, 1)] and book.computed == 4 and 0 in book.bases  # client 3 not yet taken
    book.result(3, 0)
    assert 0 not in book.bases and not book.pending


def test_auto_rule_and_factory(digits):
    spec = Trainer(executor="auto")
    for name in ("logreg", "mlp", "lenet5"):
        model, _ = _model(name, digits)
        expected = auto_executor(model, torch.device("cpu"))
        trainer = make_trainer(model, digits, Training(), 0, spec, torch.device("cpu"))
        assert trainer.batched == (expected == "batched")
        assert auto_executor(model, torch.device("cuda")) == "batched"
    model, _ = _model("mlp", digits)
    chunked = make_trainer(model, digits, Training(), 0, Trainer(executor="batched", chunk_size=3), torch.device("cpu"))
    assert isinstance(chunked, BatchedTrainer) and chunked.chunk_size == 3
    assert not make_trainer(model, digits, Training(), 0, Trainer(executor="sequential"), torch.device("cpu")).batched


@pytest.mark.parametrize("mode", ["sync", "k_async"])
def test_whole_run_same_metrics_with_either_executor(tmp_path, mode):
    raw = {
        "name": "same",
        "data": {"clients": 12},
        "model": {"name": "mlp", "hidden": 32},
        "training": {"local_steps": 4, "momentum": 0.5},
        "population": {"compute": {"samples_per_s": {"dist": "lognormal", "median": 60, "sigma": 0.8}}},
        "server": {"mode": mode, "k": 4, "concurrency": 8, "deadline_s": 4.0},
        "stop": {"rounds": 6},
        "output": {"plot": False},
    }
    for key in ("deadline_s",) if mode == "k_async" else ("k", "concurrency"):  # keys of the other mode
        del raw["server"][key]
    runs = {}
    for executor in ("sequential", "batched"):
        scenario = validate_scenario({**raw, "trainer": {"executor": executor}})
        runs[executor] = read_csv(run_scenario(scenario, tmp_path / executor) / "metrics.csv")
    seq, bat = runs["sequential"], runs["batched"]
    assert len(seq) == len(bat) == 7
    for a, b in zip(seq, bat):
        assert (a["round"], a["updates"], a["time"]) == (b["round"], b["updates"], b["time"])
        for key in ("test_accuracy", "test_loss", "train_loss"):
            x, y = float(a[key] or "nan"), float(b[key] or "nan")
            assert (math.isnan(x) and math.isnan(y)) or abs(x - y) <= TOL
    assert float(seq[-1]["test_accuracy"]) > float(seq[0]["test_accuracy"])  # it did learn
