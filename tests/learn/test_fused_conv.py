"""The fused convolution trainer (asyncfl/learn/fused_conv.py) and the device discipline of every
batched trainer's step loop (no host round trips; issue 24, goals 4 and 6).

Equality with the sequential reference uses the tolerance of tests/learn/test_batched.py (1e-5, float32;
1e-4 on CUDA, where cuDNN may pick other algorithms for the two layouts); one gradient is checked
against values worked out by hand.  The kernels run on ``ASYNCFL_TEST_DEVICE`` (tests/conftest.py:
cpu by default, cuda on a GPU machine); the tests of CPU-only choices (chunk sizes, the auto rule)
stay on the CPU.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from types import SimpleNamespace

import pytest
import torch
from conftest import TEST_DEVICE, federation_on
from torch import nn

from asyncfl.config import ConfigError
from asyncfl.config.loading import validate_scenario
from asyncfl.config.schema import Data
from asyncfl.learn.batched import BatchedTrainer, FusedTrainer, bytes_per_client
from asyncfl.learn.executors import auto_executor, make_trainer
from asyncfl.learn.federation import build_federation
from asyncfl.learn.fused_conv import CONV_CPU_CHUNK_BYTES, ConvFusedTrainer, conv_input_shape, conv_layers
from asyncfl.learn.models import build_model, parameter_count
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Trainer, Training
from asyncfl.output.reading import read_csv
from asyncfl.runner.start import run_scenario

TOL = 1e-5 if torch.device(TEST_DEVICE).type == "cpu" else 1e-4


@pytest.fixture(scope="module")
def images_cpu():
    """digits, 40 clients (about 29 samples each), pixels replaced by Gaussian noise: digits' integer
    pixels can tie inside a max-pool window, and a tie broken the other way by a last-bit difference
    moves a whole gradient entry (see tests/learn/test_batched.py::test_lenet5_batched_equals_sequential)."""
    fed = build_federation(Data(dataset="digits", clients=40), 0, torch.device("cpu"))
    noise = torch.randn(fed.features.shape, generator=torch.Generator().manual_seed(1))
    return dataclasses.replace(fed, features=noise)


@pytest.fixture(scope="module")
def signals_cpu():
    return build_federation(
        Data(dataset="mnist1d", clients=12, mnist1d={"train_samples": 400, "test_samples": 50}), 0, torch.device("cpu")
    )


@pytest.fixture(scope="module")
def images(images_cpu, test_device):
    return federation_on(images_cpu, test_device)


@pytest.fixture(scope="module")
def signals(signals_cpu, test_device):
    return federation_on(signals_cpu, test_device)


def _model(name, fed, seed=0):
    """The model (initialised on the CPU: the same weights on every device) on ``fed``'s device."""
    torch.manual_seed(seed)
    model = build_model(name, fed.input_shape, fed.num_classes).to(fed.features.device)
    return model, torch.nn.utils.parameters_to_vector(model.parameters()).detach()


def _max_gap(a, b):
    deltas = max(float((x.delta - y.delta).abs().max()) for x, y in zip(a, b))
    losses = max(abs(x.train_loss - y.train_loss) for x, y in zip(a, b))
    squares = max(abs(x.train_loss_sq - y.train_loss_sq) for x, y in zip(a, b))
    return max(deltas, losses, squares)


@pytest.mark.parametrize(("name", "data"), [("cnn1d", "signals"), ("lenet5", "images"), ("cnn2d", "images")])
def test_fused_conv_equals_sequential(request, name, data):
    """Momentum, weight decay, FedProx, 1 to 7 steps per job (step masks), batches cut to small clients
    (batch 32 > most clients' 29 samples), 3 chunks."""
    fed = request.getfixturevalue(data)
    model, base = _model(name, fed)
    training = Training(batch_size=32, lr=0.05, momentum=0.9, weight_decay=1e-3, prox_mu=0.1)
    jobs = [TrainingJob(c, 0, c % 3, 1 + (5 * c) % 7) for c in range(12)]
    seq = SequentialTrainer(model, fed, training, 0).run(base, jobs)
    fused = ConvFusedTrainer(model, fed, training, 0, chunk_size=5).run(base, jobs)
    assert [r.num_steps for r in fused] == [j.steps for j in jobs]
    assert _max_gap(seq, fused) <= TOL
    assert min(float(r.delta.abs().max()) for r in seq) > 1e-3  # the deltas are not trivially zero
    assert all(r.delta.device == fed.features.device for r in fused)


@pytest.mark.parametrize(("name", "data"), [("cnn1d", "signals"), ("lenet5", "images"), ("cnn2d", "images")])
def test_fused_conv_fedprox_equals_sequential(request, name, data):
    """FedProx alone (no momentum, no weight decay): g = grad + mu (w - w_0), w_0 each job's own base
    (three bases in one cohort, across chunks).  mu = 5 (lr * mu = 0.25) changes every job's delta by
    1.5e-3 to 2.2e-3 (measured, all three models) against gaps of at most 3e-6 to the reference, so a
    proximal term dropped or taken from the wrong base would show."""
    fed = request.getfixturevalue(data)
    model, base = _model(name, fed)
    jobs = [TrainingJob(c, 0, c % 3, 2 + (5 * c) % 7) for c in range(9)]
    bases = [base + 0.01 * (j % 3) for j in range(len(jobs))]
    results = {}
    for mu in (0.0, 5.0):
        training = Training(batch_size=32, lr=0.05, prox_mu=mu)
        seq = SequentialTrainer(model, fed, training, 0).run(bases, jobs)
        fused = ConvFusedTrainer(model, fed, training, 0, chunk_size=4).run(bases, jobs)
        assert _max_gap(seq, fused) <= TOL
        results[mu] = fused
    pull = min(float((a.delta - b.delta).abs().max()) for a, b in zip(results[0.0], results[5.0]))
    assert pull > 5e-4  # the proximal term did change every job's delta


def test_conv_gradient_by_hand(test_device):
    """Two clients, one sample each, Conv1d(1, 1, 2) -> ReLU -> Flatten -> Linear(2, 2), W = identity.
    Client 0: x = [1, 2, 3], conv weight [1, 1], bias 0: h = [1 + 2, 2 + 3] = [3, 5] (ReLU keeps both),
    logits = [3, 5], label 0: p = softmax = [1 / (1 + e^2), e^2 / (1 + e^2)] = [0.11920, 0.88080];
    dlogits = p - onehot = [-0.88080, 0.88080]; dW_lin[i, k] = dlogits[i] * h[k];
    dh = W^T dlogits = dlogits; conv: dw[t] = sum_l dh[l] x[l + t] = -0.8808 * 1 + 0.8808 * 2 = 0.8808
    (t = 0) and -0.8808 * 2 + 0.8808 * 3 = 0.8808 (t = 1); db = dh[0] + dh[1] = 0.
    Client 1: the same model with conv weight [0, 0]: h = [0, 0], ReLU passes nothing, so its conv
    gradients are 0 and its logits [0, 0] give dlogits = [-0.5, 0.5] (label 0) and db_lin = [-0.5, 0.5]."""
    dev = test_device
    model = nn.Sequential(nn.Conv1d(1, 1, 2), nn.ReLU(), nn.Flatten(), nn.Linear(2, 2)).to(dev)
    fed = SimpleNamespace(
        features=torch.tensor([[1.0, 2.0, 3.0]], device=dev),
        labels=torch.tensor([0], device=dev),
        client_train=[torch.tensor([0], device=dev)],
    )
    trainer = ConvFusedTrainer(model, fed, Training(batch_size=1), 0)
    w = {
        "0.weight": torch.tensor([[[[1.0, 1.0]]], [[[0.0, 0.0]]]]),
        "0.bias": torch.zeros(2, 1),
        "3.weight": torch.eye(2).repeat(2, 1, 1),
        "3.bias": torch.zeros(2, 2),
    }
    w = {name: value.to(dev) for name, value in w.items()}
    x, y = fed.features.expand(2, 1, 3), torch.zeros(2, 1, dtype=torch.long, device=dev)
    grads, loss, _ = trainer.gradients(w, x, y, torch.ones(2, 1, device=dev))
    grads, loss = {name: g.cpu() for name, g in grads.items()}, loss.cpu()
    p1 = math.exp(2) / (1 + math.exp(2))  # 0.88080
    assert torch.allclose(grads["0.weight"][0].flatten(), torch.tensor([p1, p1]), atol=1e-6)
    assert torch.allclose(grads["0.bias"][0], torch.zeros(1), atol=1e-6)
    assert torch.allclose(grads["3.weight"][0], torch.tensor([[-3 * p1, -5 * p1], [3 * p1, 5 * p1]]), atol=1e-5)
    assert torch.equal(grads["0.weight"][1], torch.zeros(1, 1, 2)) and torch.equal(grads["0.bias"][1], torch.zeros(1))
    assert torch.allclose(grads["3.bias"][1], torch.tensor([-0.5, 0.5]))
    assert torch.allclose(loss, torch.tensor([math.log(1 + math.exp(2)), math.log(2)]))  # -log p0 each


def test_max_pool_gradient_goes_to_the_window_maximum(images):
    """Conv -> MaxPool over a 4x4 image: one pooling window's gradient lands on its argmax only, so a
    weight update equals the reference's, and the pooled positions that lost get none."""
    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32, 10))
    model = model.to(images.features.device)
    base = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    jobs = [TrainingJob(c, 0, 0, 3) for c in range(4)]
    seq = SequentialTrainer(model, images, Training(batch_size=8), 0).run(base, jobs)
    assert _max_gap(seq, ConvFusedTrainer(model, images, Training(batch_size=8), 0).run(base, jobs)) <= TOL


def test_conv_layers_recognises_supported_chains():
    assert conv_layers(build_model("cnn1d", (40,), 10)) == [
        ("conv", "0.1.weight", "0.1.bias", (1, 2), (0, 1)),  # 1-D layers as 2-D ones of height 1
        ("relu",),
        ("conv", "0.3.weight", "0.3.bias", (1, 2), (0, 1)),
        ("relu",),
        ("conv", "0.5.weight", "0.5.bias", (1, 2), (0, 1)),
        ("relu",),
        ("flatten",),
        ("linear", "1.weight", "1.bias"),
    ]
    assert [s[0] for s in conv_layers(build_model("lenet5", (1, 8, 8), 10))].count("pool") == 2
    unsupported = [
        build_model("mlp", (1, 8, 8), 10),  # no convolution: the fused MLP path
        nn.Sequential(nn.Conv2d(1, 4, 3, dilation=2), nn.Flatten(), nn.Linear(64, 10)),
        nn.Sequential(nn.Conv2d(2, 4, 3, groups=2), nn.Flatten(), nn.Linear(144, 10)),
        nn.Sequential(nn.Conv2d(1, 4, 3, padding="same"), nn.Flatten(), nn.Linear(256, 10)),
        nn.Sequential(nn.Conv2d(1, 4, 3), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(36, 10)),
        nn.Sequential(nn.Conv2d(1, 4, 3), nn.MaxPool2d(2, stride=1), nn.Flatten(), nn.Linear(100, 10)),
        nn.Sequential(nn.Conv2d(1, 4, 3), nn.Flatten(), nn.Linear(144, 10), nn.ReLU()),  # must end in Linear
        nn.Sequential(nn.Conv2d(1, 4, 3), nn.Tanh(), nn.Flatten(), nn.Linear(144, 10)),
        build_model("resnet18", (3, 8, 8), 10),  # not a Sequential: vmap
    ]
    assert all(conv_layers(model) is None for model in unsupported)
    assert conv_input_shape(1, (40,)) == (1, 1, 40) and conv_input_shape(1, (3, 40)) == (3, 1, 40)
    assert conv_input_shape(2, (1, 8, 8)) == (1, 8, 8)
    with pytest.raises(ValueError, match="2-D convolution cannot take samples of shape"):
        conv_input_shape(2, (64,))


def test_auto_picks_fused_for_conv_chains(images_cpu):
    images = images_cpu
    cpu, cuda, spec = torch.device("cpu"), torch.device("cuda"), Trainer(executor="auto")
    for name in ("lenet5", "cnn2d"):
        model = _model(name, images)[0]
        assert auto_executor(model, cpu) == auto_executor(model, cuda) == "fused"
        assert type(make_trainer(model, images, Training(), 0, spec, cpu)) is ConvFusedTrainer
    assert type(make_trainer(_model("mlp", images)[0], images, Training(), 0, spec, cpu)) is FusedTrainer
    resnet = build_model("resnet18", images.input_shape, 10)
    assert auto_executor(resnet, cuda) == "batched" and auto_executor(resnet, cpu) == "sequential"
    assert parameter_count(resnet) > 10_000_000
    with pytest.raises(ConfigError, match="trainer.executor: fused needs a chain of Conv1d/Conv2d"):
        make_trainer(resnet, images, Training(), 0, Trainer(executor="fused"), cpu)


def _meta_federation(fed):
    """The federation with its data on the meta device: shapes only, any read of a value fails."""
    return dataclasses.replace(fed, features=fed.features.to("meta"), labels=fed.labels.to("meta"))


@pytest.mark.parametrize(
    ("kernel", "name", "data"),
    [
        (BatchedTrainer, "lenet5", "images"),
        (FusedTrainer, "mlp", "images"),
        (ConvFusedTrainer, "lenet5", "images"),
        (ConvFusedTrainer, "cnn1d", "signals"),
    ],
)
def test_step_loop_stays_on_the_device(request, kernel, name, data):
    """The step loop (``train_rows``) runs with data, parameters and momentum on the meta device, where
    any read of a value on the host (``.item()``, ``.tolist()``, ``.cpu()``, a Python ``if`` on a
    tensor) raises: so it has no host round trip, and on CUDA it would not wait for the GPU.  Every
    tensor it returns is on that device.  The same function, on the CPU, gives the reference's result."""
    fed = request.getfixturevalue(data)
    model, base = _model(name, fed)
    training = Training(batch_size=32, lr=0.05, momentum=0.9, weight_decay=1e-3, prox_mu=0.1)
    jobs = [TrainingJob(c, 0, 0, 2 + c % 3) for c in range(6)]  # ragged steps: the masked path too
    meta = kernel(copy.deepcopy(model).to("meta"), _meta_federation(fed), training, 0)
    index, weight, steps = meta.cohort_batches(jobs)
    rows = base.to("meta").unsqueeze(0).expand(len(jobs), -1)
    out = meta.train_rows(rows, index, weight, steps)
    assert all(t.device.type == "meta" for t in out)
    assert out[0].shape == (len(jobs), base.numel()) and out[1].shape == (len(jobs), max(steps))
    with pytest.raises(NotImplementedError, match="meta tensor"):
        out[1].tolist()  # the meta device does refuse host reads
    with pytest.raises(RuntimeError, match="meta tensors"):
        float(out[1].sum())
    trainer = kernel(model, fed, training, 0)
    delta, losses, _ = trainer.train_rows(base.unsqueeze(0).expand(len(jobs), -1), index, weight, steps)
    seq = SequentialTrainer(model, fed, training, 0).run(base, jobs)
    assert max(float((delta[j] - r.delta).abs().max()) for j, r in enumerate(seq)) <= TOL
    assert max(abs(float(losses[j].sum()) / r.num_steps - r.train_loss) for j, r in enumerate(seq)) <= TOL


def test_whole_cnn1d_run_same_metrics_as_sequential(tmp_path, test_device):
    """A whole sync run (trainer.executor fused vs sequential, cnn1d on a small MNIST-1D): same rounds,
    updates and virtual times; accuracies and losses to float tolerance (the deltas differ in the last
    bits, which three rounds do not grow past 1e-4)."""
    raw = {
        "name": "conv",
        "device": test_device.type,
        "data": {"dataset": "mnist1d", "clients": 12, "mnist1d": {"train_samples": 400, "test_samples": 100}},
        "model": {"name": "cnn1d"},
        "training": {"local_steps": 4, "momentum": 0.5},
        "server": {"mode": "sync", "deadline_s": 4.0},
        "stop": {"rounds": 3},
        "output": {"plot": False},
    }
    runs = {}
    for executor in ("sequential", "fused"):
        scenario = validate_scenario({**raw, "trainer": {"executor": executor}})
        runs[executor] = read_csv(run_scenario(scenario, tmp_path / executor) / "metrics.csv")
    assert len(runs["fused"]) == len(runs["sequential"]) == 4
    for a, b in zip(runs["sequential"], runs["fused"]):
        assert (a["round"], a["updates"], a["time"]) == (b["round"], b["updates"], b["time"])
        for key in ("test_accuracy", "test_loss", "train_loss"):
            x, y = float(a[key] or "nan"), float(b[key] or "nan")
            assert (math.isnan(x) and math.isnan(y)) or abs(x - y) <= 1e-4
    first, last = runs["fused"][0], runs["fused"][-1]
    assert int(last["updates"]) > 0 and abs(float(last["test_loss"]) - float(first["test_loss"])) > 1e-3  # it trained


def test_default_chunk_sizes_on_the_cpu(images_cpu, signals_cpu):
    """CONV_CPU_CHUNK_BYTES // bytes_per_client: 32 MiB / 1,033,888 bytes = 32 cnn2d clients on digits
    (batch 32); an explicit chunk_size wins."""
    images, signals = images_cpu, signals_cpu
    cnn2d = _model("cnn2d", images)[0]
    per_client = bytes_per_client(cnn2d, images, Training())
    assert per_client == 1_033_888 and (32 << 20) // per_client == 32
    assert ConvFusedTrainer(cnn2d, images, Training(), 0).chunk_size == CONV_CPU_CHUNK_BYTES // per_client == 32
    assert ConvFusedTrainer(cnn2d, images, Training(), 0, chunk_size=500).chunk_size == 500
    cnn1d = _model("cnn1d", signals)[0]
    assert ConvFusedTrainer(cnn1d, signals, Training(), 0).chunk_size == CONV_CPU_CHUNK_BYTES // 573_600 == 58


@pytest.mark.parametrize("channels", [1, 3])
def test_cohort_images_are_channels_last_in_memory(channels):
    """One channel per client made a view whose strides were neither channels-last nor contiguous, which
    oneDNN's convolutions ran 2-3x slower on; the cohort tensor holds client j's channel c at j * C + c."""
    from asyncfl.learn.fused_conv import cohort_images

    a = torch.arange(4 * 5 * channels * 6 * 7, dtype=torch.float32).reshape(4, 5, channels, 6, 7)
    cohort = cohort_images(a)
    assert cohort.shape == (5, 4 * channels, 6, 7)
    assert cohort.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(cohort[2, 3 * channels + channels - 1], a[3, 2, channels - 1])
