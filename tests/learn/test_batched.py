"""The batched trainer gives the sequential reference's deltas (docs/explanation/architecture.md sections 2 and 7).

Both batched kernels (torch.func vmap for any module, fused matrix products for Linear/ReLU chains):
same update rule (momentum, weight decay), same minibatch order, clients with fewer samples than a
batch (weights 1/n) and with fewer local steps (step masks), chunking, one base per job, and a whole
run with each executor.  Tolerance: max |difference| <= 1e-5 in float32.  The kernels run on
``ASYNCFL_TEST_DEVICE`` (tests/conftest.py: cpu by default, cuda on a GPU machine); the tests of
CPU-only choices (chunk sizes, width groups, the auto rule) stay on the CPU.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from conftest import federation_on
from torch import nn

from asyncfl.config import ConfigError
from asyncfl.config.loading import validate_scenario
from asyncfl.config.schema import Data
from asyncfl.learn import executors
from asyncfl.learn.batched import (
    CHUNK_BUDGET_BYTES,
    CPU_CACHE_CHUNK_BYTES,
    BatchedTrainer,
    FusedTrainer,
    bytes_per_client,
    fused_layers,
    width_groups,
)
from asyncfl.learn.executors import auto_executor, make_trainer
from asyncfl.learn.federation import build_federation
from asyncfl.learn.fused_conv import ConvFusedTrainer
from asyncfl.learn.jobs import JobBook
from asyncfl.learn.models import build_model, parameter_count
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Trainer, Training
from asyncfl.output.reading import read_csv
from asyncfl.runner.start import run_scenario

TOL = 1e-5


@pytest.fixture(scope="module")
def digits_cpu():
    """40 clients: about 29 training samples each, so a batch of 32 is cut to the client's size."""
    return build_federation(Data(dataset="digits", clients=40), 0, torch.device("cpu"))


@pytest.fixture(scope="module")
def digits(digits_cpu, test_device):
    return federation_on(digits_cpu, test_device)


def _model(name, fed, seed=0):
    """``mlp2``: the mlp with two hidden layers (``model.layers: 2``); initialised on the CPU (the same
    weights on every device), on ``fed``'s device."""
    torch.manual_seed(seed)
    name, layers = ("mlp", 2) if name == "mlp2" else (name, 1)
    model = build_model(name, fed.input_shape, fed.num_classes, hidden=32, layers=layers)
    return _on(model, fed)


def _on(model, fed):
    """``model`` on ``fed``'s device, and its parameter vector."""
    model = model.to(fed.features.device)
    return model, torch.nn.utils.parameters_to_vector(model.parameters()).detach()


def _jobs(clients):
    """Different clients, attempts and step counts (1 to 7)."""
    return [TrainingJob(c, 0, c % 3, 1 + (5 * c) % 7) for c in clients]


def _max_gap(a, b):
    deltas = max(float((x.delta - y.delta).abs().max()) for x, y in zip(a, b))
    losses = max(abs(x.train_loss - y.train_loss) for x, y in zip(a, b))
    return deltas, losses


@pytest.mark.parametrize("kernel", [BatchedTrainer, FusedTrainer])
@pytest.mark.parametrize("name", ["logreg", "mlp", "mlp2"])
def test_batched_equals_sequential_dense(digits, name, kernel):
    model, base = _model(name, digits)
    training = Training(batch_size=16, lr=0.1, momentum=0.9, weight_decay=1e-3)
    jobs = _jobs(range(0, 40, 2))
    sizes = {len(digits.client_train[j.client]) for j in jobs}
    steps = {j.steps for j in jobs}
    assert len(steps) > 3 and min(sizes) >= 16  # the cohort mixes step counts
    seq = SequentialTrainer(model, digits, training, 0).run(base, jobs)
    bat = kernel(model, digits, training, 0, chunk_size=7).run(base, jobs)  # 3 chunks
    assert [r.num_steps for r in bat] == [j.steps for j in jobs]
    gap_delta, gap_loss = _max_gap(seq, bat)
    assert gap_delta <= TOL and gap_loss <= TOL
    assert min(float(r.delta.abs().max()) for r in seq) > 1e-3  # the deltas are not trivially zero
    assert all(r.delta.device == digits.features.device for r in bat)


@pytest.mark.parametrize("kernel", [BatchedTrainer, FusedTrainer])
def test_small_clients_use_their_own_batch_size(digits, kernel):
    """Every client holds fewer than batch_size=64 samples: the reference uses batches of n, the
    batched trainer pads to 64 with weight-0 samples.  Multi-epoch orders (steps * n > n) included."""
    model, base = _model("mlp", digits)
    training = Training(batch_size=64, lr=0.2)
    jobs = [TrainingJob(c, 0, 1, 4 + c % 3) for c in range(8)]
    assert all(len(digits.client_train[c]) < 64 for c in range(8))
    seq = SequentialTrainer(model, digits, training, 0).run(base, jobs)
    bat = kernel(model, digits, training, 0).run(base, jobs)
    assert max(_max_gap(seq, bat)) <= TOL
    index, weight, _ = BatchedTrainer(model, digits, training, 0).cohort_batches(jobs[:1])
    n = len(digits.client_train[0])
    assert torch.allclose(weight[0, 0].sum(), torch.tensor(1.0)) and int((weight[0, 0] > 0).sum()) == n
    assert index.shape[2] == n  # padded to the widest batch in the cohort, not to batch_size


def test_lenet5_batched_equals_sequential(digits):
    """LeNet-5 on continuous inputs.  (On digits' integer-valued pixels a max-pool can hold an exact
    tie that the grouped convolution of the batched path breaks the other way -- an ulp-level
    difference in conv outputs that moves one gradient; see docs/findings/performance.md.)"""
    gen = torch.Generator().manual_seed(1)
    noise = torch.randn(digits.features.shape, generator=gen).to(digits.features.device)
    fed = dataclasses.replace(digits, features=noise)
    model, base = _model("lenet5", fed)
    training = Training(batch_size=16, lr=0.05, momentum=0.5, weight_decay=1e-4)
    jobs = _jobs(range(12))
    seq = SequentialTrainer(model, fed, training, 0).run(base, jobs)
    bat = BatchedTrainer(model, fed, training, 0).run(base, jobs)
    assert max(_max_gap(seq, bat)) <= TOL


@pytest.mark.parametrize("kernel", [BatchedTrainer, FusedTrainer])
def test_result_does_not_depend_on_cohort(digits, kernel):
    model, base = _model("mlp", digits)
    training = Training(batch_size=16)
    job = TrainingJob(5, 0, 2, 6)
    trainer = kernel(model, digits, training, 0)
    alone = trainer.run(base, [job])[0]
    crowd = trainer.run(base, _jobs(range(10, 30)) + [job])[-1]
    assert float((alone.delta - crowd.delta).abs().max()) <= TOL


def test_job_book_trains_across_base_versions(digits):
    """A batched trainer gets every outstanding job not yet computed in one call, whatever base
    version each started from; each result equals the reference trained from its own base, and a
    base vector is dropped once its last job is taken."""
    model, base = _model("logreg", digits)
    training = Training(batch_size=8)
    calls = []

    class Recording(FusedTrainer):
        def run(self, base, jobs):
            calls.append([(j.client, j.base_version) for j in jobs])
            return super().run(base, jobs)

    book = JobBook(Recording(model, digits, training, 0))
    book.publish(0, base)
    for c in (1, 2, 3):
        book.submit(TrainingJob(c, 0, 0, 3))
    newer = base + 0.01
    book.publish(1, newer)
    book.submit(TrainingJob(4, 1, 0, 3))
    got = {c: book.result(c, 0) for c in (2, 4)}
    assert calls == [[(1, 0), (2, 0), (3, 0), (4, 1)]]  # one call for both versions
    reference = SequentialTrainer(model, digits, training, 0)
    for c, b in ((2, base), (4, newer)):
        expected = reference.run(b, [TrainingJob(c, 0, 0, 3)])[0]
        assert float((got[c].delta - expected.delta).abs().max()) <= TOL
    book.submit(TrainingJob(5, 1, 0, 3))
    book.result(1, 0)
    assert len(calls) == 1 and book.computed == 4 and 0 in book.bases  # client 3 not yet taken
    book.result(5, 0)
    assert calls[1] == [(5, 1)] and book.computed == 5
    book.result(3, 0)
    assert 0 not in book.bases and not book.pending and not book.done


def test_width_groups_least_padding_plus_calls():
    """Widths 1, 2, 3, 5, 5, 30, 31, 32 with 4 rows per extra call: {1, 2} 4 + 2 * 2, {3, 5, 5} 4 + 3 * 5,
    {30, 31, 32} 4 + 3 * 32 = 127, less than any other split (one group: 4 + 8 * 32 = 260)."""
    widths = [30, 1, 5, 2, 32, 3, 31, 5]
    assert width_groups(widths, 4) == [[1, 3], [2, 5, 7], [0, 4, 6]]
    assert width_groups(widths, 1000) == [list(range(8))]  # calls too dear: one group
    assert width_groups(widths, None) == [list(range(8))]  # None: never split (CUDA)
    assert width_groups([7, 7, 7], 0) == [[0, 1, 2]]


def test_width_groups_keep_results(digits_cpu):
    """A cohort split into width groups gives every job its own reference delta (on the CPU: CUDA never
    splits a cohort)."""
    digits = digits_cpu
    model, base = _model("mlp", digits)
    training = Training(batch_size=64, lr=0.2, momentum=0.5)
    fed = dataclasses.replace(digits, client_train=[idx[: 3 + 4 * c] for c, idx in enumerate(digits.client_train)])
    jobs = [TrainingJob(c, 0, 1, 3) for c in range(8)]  # widths 3, 7, 11, ... (capped by the client's size)
    trainer = FusedTrainer(model, fed, training, 0)  # one chunk would hold them all
    trainer.CALL_OVERHEAD_ROWS = 8
    widths = []
    run_chunk = trainer._run_chunk
    trainer._run_chunk = lambda base, chunk: (
        widths.append(trainer.cohort_batches(chunk)[0].shape[2]) or run_chunk(base, chunk)
    )
    seq = SequentialTrainer(model, fed, training, 0).run(base, jobs)
    assert max(_max_gap(seq, trainer.run(base, jobs))) <= TOL
    assert len(widths) > 1 and min(widths) < max(widths)  # split by width: narrow jobs ran in narrower calls


@pytest.mark.parametrize("kernel", [BatchedTrainer, FusedTrainer])
def test_one_base_per_job_equals_sequential(digits, kernel):
    """Jobs from different bases in one cohort (and across chunks): each gets its own base's delta."""
    model, base = _model("mlp", digits)
    training = Training(batch_size=16, lr=0.1, momentum=0.5)
    jobs = _jobs(range(9))
    bases = [base + 0.01 * (j % 3) for j in range(len(jobs))]
    seq = SequentialTrainer(model, digits, training, 0).run(bases, jobs)
    bat = kernel(model, digits, training, 0, chunk_size=4).run(bases, jobs)
    assert max(_max_gap(seq, bat)) <= TOL
    shared = kernel(model, digits, training, 0).run(bases[0], jobs[:1])[0]
    assert float((shared.delta - seq[0].delta).abs().max()) <= TOL


def test_fused_layers_recognises_linear_relu_chains(digits_cpu):
    digits = digits_cpu
    assert fused_layers(_model("logreg", digits)[0]) == [("linear", "1.weight", "1.bias")]
    assert fused_layers(_model("mlp", digits)[0]) == [
        ("linear", "1.weight", "1.bias"),
        ("relu",),
        ("linear", "3.weight", "3.bias"),
    ]
    assert fused_layers(_model("lenet5", digits)[0]) is None
    assert fused_layers(nn.Sequential(nn.Flatten(), nn.Linear(64, 8), nn.Tanh(), nn.Linear(8, 10))) is None
    assert fused_layers(nn.Sequential(nn.Flatten(), nn.Linear(64, 8), nn.ReLU())) is None  # must end in Linear
    with pytest.raises(ValueError, match="Flatten, Linear and ReLU"):
        FusedTrainer(_model("lenet5", digits)[0], digits, Training(), 0)


def test_default_chunk_sizes(digits_cpu):
    """vmap: as many clients as fit in CHUNK_BUDGET_BYTES; fused on the CPU: CPU_CACHE_CHUNK_BYTES
    (about 44 MLP-200 clients on digits); an explicit chunk_size wins."""
    digits = digits_cpu
    model = build_model("mlp", digits.input_shape, digits.num_classes)  # hidden 200
    training = Training()
    per_client = bytes_per_client(model, digits, training)
    assert BatchedTrainer(model, digits, training, 0).chunk_size == CHUNK_BUDGET_BYTES // per_client
    fused = FusedTrainer(model, digits, training, 0)
    assert fused.chunk_size == CPU_CACHE_CHUNK_BYTES // per_client and 30 <= fused.chunk_size <= 64
    assert FusedTrainer(model, digits, training, 0, chunk_size=500).chunk_size == 500


def test_fused_without_bias_and_nested(digits):
    torch.manual_seed(3)
    model = nn.Sequential(nn.Flatten(), nn.Sequential(nn.Linear(64, 16, bias=False), nn.ReLU()), nn.Linear(16, 10))
    model, base = _on(model, digits)
    training = Training(batch_size=16, lr=0.2, weight_decay=1e-2)
    jobs = _jobs(range(6))
    seq = SequentialTrainer(model, digits, training, 0).run(base, jobs)
    assert max(_max_gap(seq, FusedTrainer(model, digits, training, 0).run(base, jobs))) <= TOL


class _Conv1dNet(nn.Module):
    """Not a Sequential, with a 1-D convolution: only the generic torch.func path can train it."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(1, 4, 5, padding=2)
        self.head = nn.Linear(4 * 64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.conv(x.reshape(x.shape[0], 1, -1)))
        return self.head(h.flatten(1))


def test_any_module_uses_the_generic_batched_path(digits):
    gen = torch.Generator().manual_seed(1)
    noise = torch.randn(digits.features.shape, generator=gen).to(digits.features.device)
    fed = dataclasses.replace(digits, features=noise)
    torch.manual_seed(0)
    model, base = _on(_Conv1dNet(), fed)
    device = fed.features.device
    assert auto_executor(model, device) == "batched"
    training = Training(batch_size=16, lr=0.05, momentum=0.5)
    jobs = _jobs(range(8))
    seq = SequentialTrainer(model, fed, training, 0).run(base, jobs)
    trainer = make_trainer(model, fed, training, 0, Trainer(executor="auto"), device)
    assert trainer.kernel == "vmap"
    assert max(_max_gap(seq, trainer.run(base, jobs))) <= TOL


def test_auto_rule_and_factory(digits_cpu, monkeypatch):
    """auto: fused for Linear/ReLU and convolution chains on any device, else batched on CUDA or for
    small CPU models (the conv chains' own checks: tests/learn/test_fused_conv.py)."""
    digits = digits_cpu
    spec, cpu, cuda = Trainer(executor="auto"), torch.device("cpu"), torch.device("cuda")
    picks = {name: auto_executor(_model(name, digits)[0], cpu) for name in ("logreg", "mlp", "lenet5")}
    assert picks == {"logreg": "fused", "mlp": "fused", "lenet5": "fused"}
    assert auto_executor(_model("mlp", digits)[0], cuda) == "fused"
    assert auto_executor(_model("lenet5", digits)[0], cuda) == "fused"
    other = _Conv1dNet()  # not a chain: vmap where it fits
    monkeypatch.setattr(executors, "CPU_BATCHED_MAX_PARAMS", parameter_count(other) - 1)  # "too big" for the CPU
    assert auto_executor(other, cpu) == "sequential" and auto_executor(other, cuda) == "batched"
    monkeypatch.undo()
    kinds = {name: type(make_trainer(_model(name, digits)[0], digits, Training(), 0, spec, cpu)) for name in picks}
    assert kinds == {"logreg": FusedTrainer, "mlp": FusedTrainer, "lenet5": ConvFusedTrainer}
    model, _ = _model("mlp", digits)
    chunked = make_trainer(model, digits, Training(), 0, Trainer(executor="batched", chunk_size=3), cpu)
    assert type(chunked) is BatchedTrainer and chunked.chunk_size == 3 and chunked.kernel == "vmap"
    assert not make_trainer(model, digits, Training(), 0, Trainer(executor="sequential"), cpu).batched
    with pytest.raises(ConfigError, match="trainer.executor: fused"):
        make_trainer(_Conv1dNet(), digits, Training(), 0, Trainer(executor="fused"), cpu)


def same_metrics_scenario(mode: str) -> dict:
    """The run compared across executors (also measured over seeds by ``benchmarks/experiments/accuracy_spread.py``)."""
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
    return raw


@pytest.mark.parametrize("mode", ["sync", "k_async"])
def test_whole_run_same_metrics_with_either_executor(tmp_path, mode, test_device):
    raw = {**same_metrics_scenario(mode), "device": test_device.type}
    runs = {}
    for executor in ("sequential", "batched", "fused"):
        scenario = validate_scenario({**raw, "trainer": {"executor": executor}})
        runs[executor] = read_csv(run_scenario(scenario, tmp_path / executor) / "metrics.csv")
    seq = runs["sequential"]
    for other in (runs["batched"], runs["fused"]):
        assert len(seq) == len(other) == 7
        for a, b in zip(seq, other):
            assert (a["round"], a["updates"], a["time"]) == (b["round"], b["updates"], b["time"])
            for key in ("test_accuracy", "test_loss", "train_loss"):
                x, y = float(a[key] or "nan"), float(b[key] or "nan")
                assert (math.isnan(x) and math.isnan(y)) or abs(x - y) <= TOL
    # it did learn: final - first accuracy at seed 0 is 0.281 (sync) / 0.242 (k_async) on every kernel path, and
    # positive on seeds 0-9 (0.064..0.315, std 0.072 / 0.025..0.242, std 0.070;
    # benchmarks/experiments/accuracy_spread.py)
    assert float(seq[-1]["test_accuracy"]) > float(seq[0]["test_accuracy"])


def test_jobs_dropped_as_too_stale_are_forgotten(tmp_path, monkeypatch):
    """K-async with max_staleness: a job whose base is more than max_staleness versions old can only be
    dropped when it arrives, so the job book forgets it (its result and its base vector) at once
    instead of holding them, and writing them into every checkpoint, to the end of the run."""
    raw = {
        "name": "stale",
        "data": {"clients": 12},
        "model": {"name": "logreg"},
        "training": {"local_steps": 2},
        "population": {"compute": {"samples_per_s": {"dist": "pareto", "scale": 20, "shape": 1.2}}},
        "server": {"mode": "k_async", "k": 2, "concurrency": 8, "max_staleness": 1},
        "stop": {"rounds": 30},
        "output": {"plot": False, "events": "none"},
    }
    books = []
    publish = JobBook.publish

    def watch(self, version, params):
        publish(self, version, params)
        books.append((self, version, len(self.pending), len(self.bases)))

    monkeypatch.setattr(JobBook, "publish", watch)
    run_dir = run_scenario(validate_scenario(raw), tmp_path / "run")
    dropped = sum(int(r["dropped_stale"]) for r in read_csv(run_dir / "rounds.csv"))
    assert dropped > 5  # the scenario does drop stale updates
    book, version = books[-1][0], books[-1][1]
    assert all(version - job.base_version <= 1 for job in book.pending.values())
    assert max(n for _, _, n, _ in books) <= 8 and max(b for _, _, _, b in books) <= 3  # concurrency, staleness + 2
