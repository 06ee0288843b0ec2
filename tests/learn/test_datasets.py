"""Data set loaders and the federation: shapes, determinism, on-disk formats, clear errors."""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from asyncfl.config.schema import Data
from asyncfl.errors import ConfigError
from asyncfl.learn.datasets import load_arrays
from asyncfl.learn.federation import build_federation

CPU = torch.device("cpu")


def data(**kw) -> Data:
    return Data.model_validate(kw)


# --- digits ------------------------------------------------------------------------------------


def test_digits_loads_offline_with_a_stratified_holdout():
    raw = load_arrays(data(dataset="digits"), seed=0)
    assert raw.x_train.shape[1:] == (1, 8, 8) and raw.x_train.dtype == np.float32
    assert raw.y_train.dtype == np.int64 and raw.num_classes == 10
    assert len(raw.y_train) + len(raw.y_test) == 1797
    assert 0.0 <= raw.x_train.min() and raw.x_train.max() == 1.0
    counts = np.bincount(np.concatenate([raw.y_train, raw.y_test]), minlength=10)
    np.testing.assert_array_equal(np.bincount(raw.y_test, minlength=10), np.round(0.2 * counts))
    assert raw.client_of_train is None and raw.client_of_test is None


def test_digits_holdout_depends_on_the_seed_only():
    a, b, c = (load_arrays(data(dataset="digits"), seed=s) for s in (4, 4, 5))
    np.testing.assert_array_equal(a.x_test, b.x_test)
    assert not np.array_equal(a.x_test, c.x_test)


# --- synthetic ---------------------------------------------------------------------------------


def synthetic(**kw) -> Data:
    base = {"alpha": 1.0, "beta": 1.0, "dimension": 5, "classes": 3, "samples_per_client": 50}
    return data(dataset="synthetic", clients=4, synthetic={**base, **kw})


def test_synthetic_shapes_and_natural_clients():
    raw = load_arrays(synthetic(), seed=0)
    assert raw.x_train.shape == (160, 5) and raw.x_test.shape == (40, 5)  # 50 per client, 20% test
    assert raw.x_train.dtype == np.float32 and raw.y_train.dtype == np.int64
    assert raw.num_classes == 3 and set(np.unique(raw.y_train)) <= {0, 1, 2}
    np.testing.assert_array_equal(np.bincount(raw.client_of_train), [40] * 4)
    np.testing.assert_array_equal(np.bincount(raw.client_of_test), [10] * 4)


def test_synthetic_sizes_follow_the_distribution_with_a_floor_of_two():
    sizes = {"dist": "uniform", "low": 0.1, "high": 9}
    d = data(dataset="synthetic", clients=30, synthetic={"samples_per_client": sizes})
    raw = load_arrays(d, seed=1)
    sizes = np.bincount(raw.client_of_train, minlength=30) + np.bincount(raw.client_of_test, minlength=30)
    assert sizes.min() >= 2 and sizes.max() <= 9
    assert np.bincount(raw.client_of_train, minlength=30).min() >= 1


def client_mean_spread(raw) -> float:
    """Std across clients of each client's average feature value."""
    means = [raw.x_train[raw.client_of_train == k].mean() for k in range(raw.client_of_train.max() + 1)]
    return float(np.std(means))


def test_synthetic_larger_beta_spreads_client_feature_means():
    def spread(beta):
        d = synthetic(alpha=0.0, beta=beta, dimension=20).model_copy(update={"clients": 30})
        return client_mean_spread(load_arrays(d, 0))

    assert spread(5.0) > 5 * spread(0.0)
    assert 2.5 < spread(5.0) < 8.0  # B_k ~ N(0, beta): the spread tracks beta


def test_synthetic_is_learnable_structure_not_noise():
    # With alpha = beta = 0 every client draws W, b around 0, but labels still come from a linear
    # model: a per-client least-squares fit separates them far better than chance (1/3).
    raw = load_arrays(synthetic(alpha=0.0, beta=0.0, samples_per_client=400), seed=2)
    mask = raw.client_of_train == 0
    x, y = raw.x_train[mask], raw.y_train[mask]
    xb = np.hstack([x, np.ones((len(x), 1))])
    coef, *_ = np.linalg.lstsq(xb, np.eye(3)[y], rcond=None)
    # seeds 0-9: 0.875..0.984, mean 0.939, std 0.044 (benchmarks/experiments/accuracy_spread.py):
    # 0.6 < mean - 4 std (0.76)
    assert (np.argmax(xb @ coef, axis=1) == y).mean() > 0.6


def test_synthetic_needs_a_test_fraction():
    with pytest.raises(ConfigError, match=r"data\.test_fraction"):
        load_arrays(data(dataset="synthetic", test_fraction=0.0), seed=0)


# --- federation --------------------------------------------------------------------------------


def test_federation_is_deterministic_and_partitions_the_pool():
    d = data(dataset="digits", clients=15, partition={"kind": "dirichlet", "alpha": 0.3}, test_fraction=0.25)
    a, b, c = build_federation(d, 7, CPU), build_federation(d, 7, CPU), build_federation(d, 8, CPU)
    for x, y in zip(a.client_train + a.client_test, b.client_train + b.client_test, strict=True):
        assert torch.equal(x, y)
    assert torch.equal(a.features, b.features) and torch.equal(a.test_indices, b.test_indices)
    assert not all(torch.equal(x, y) for x, y in zip(a.client_train, c.client_train, strict=True))
    n_test = len(a.test_indices)
    n_pool = len(a.labels) - n_test
    held = torch.cat(a.client_train + a.client_test).sort().values
    assert torch.equal(held, torch.arange(n_pool))  # the pool, exactly once
    assert torch.equal(a.test_indices, torch.arange(n_pool, n_pool + n_test))
    assert a.num_clients == 15 and a.input_shape == (1, 8, 8) and a.num_classes == 10
    assert a.features.dtype == torch.float32 and a.labels.dtype == torch.int64
    for k in range(15):
        n_train, n_local_test = len(a.client_train[k]), len(a.client_test[k])
        assert n_train >= 1
        assert n_local_test == (0 if n_train + n_local_test == 1 else max(1, round(0.25 * (n_train + n_local_test))))


def test_label_histogram_matches_the_train_split():
    fed = build_federation(data(dataset="digits", clients=10, partition={"kind": "classes", "per_client": 2}), 0, CPU)
    for k in range(fed.num_clients):
        hist = fed.label_histogram(k)
        assert hist.shape == (10,) and np.isclose(hist.sum(), 1.0)
        assert np.count_nonzero(hist) == 2
        y = fed.labels[fed.client_train[k]].numpy()
        assert np.isclose(hist[y[0]], np.mean(y == y[0]))


def test_synthetic_federation_uses_natural_clients_and_ignores_the_partition():
    d = synthetic().model_copy(update={"partition": data(partition={"kind": "classes", "per_client": 1}).partition})
    fed = build_federation(d, 0, CPU)
    raw = load_arrays(d, 0)
    assert fed.num_clients == 4 and fed.input_shape == (5,)
    for k in range(4):
        np.testing.assert_array_equal(fed.client_train[k].numpy(), np.flatnonzero(raw.client_of_train == k))
        assert fed.client_test[k].min() >= 160  # local tests live in the global test part
    assert torch.equal(torch.cat(fed.client_test).sort().values, fed.test_indices)


# --- torchvision on-disk formats ---------------------------------------------------------------


def write_idx(path: Path, array: np.ndarray, gz: bool = False) -> None:
    header = (0x0800 | array.ndim).to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape)
    payload = header + array.astype(np.uint8).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(payload))
    else:
        path.write_bytes(payload)


def images(rng, n, shape):
    return rng.integers(0, 256, size=(n, *shape), dtype=np.uint8), rng.integers(0, 10, size=n)


def write_mnist(root: Path, folder: str, rng, gz: bool = False):
    (xtr, ytr), (xte, yte) = images(rng, 30, (28, 28)), images(rng, 12, (28, 28))
    raw = root / folder / "raw"
    for name, arr in [
        ("train-images-idx3-ubyte", xtr),
        ("train-labels-idx1-ubyte", ytr),
        ("t10k-images-idx3-ubyte", xte),
        ("t10k-labels-idx1-ubyte", yte),
    ]:
        write_idx(raw / name, arr, gz)
    return xtr[:, None], ytr, xte[:, None], yte


def write_cifar10(root: Path, rng):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    parts = []
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        x, y = images(rng, 4, (3, 32, 32))
        with open(folder / name, "wb") as f:
            pickle.dump({"data": x.reshape(4, -1), "labels": y.tolist(), "batch_label": name}, f)
        parts.append((x, y))
    return (np.concatenate([p[0] for p in parts[:5]]), np.concatenate([p[1] for p in parts[:5]]), *parts[5])


class _RunsAShellCommand:
    """What a malicious batch file holds: unpickling it calls os.system (here: create a marker file)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


def test_a_cifar10_batch_that_would_run_code_is_refused_not_run(tmp_path):
    write_cifar10(tmp_path, np.random.default_rng(0))
    marker, batch = tmp_path / "executed", tmp_path / "cifar-10-batches-py" / "data_batch_3"
    batch.write_bytes(pickle.dumps({"data": _RunsAShellCommand(marker), "labels": [1]}))
    with pytest.raises(ConfigError) as err:
        load_arrays(data(dataset="cifar10", data_dir=tmp_path, download=False), seed=0)
    message = str(err.value)
    assert message.startswith(f"data.dataset cifar10: {batch}: refused to unpickle the global ")
    assert "posix.system" in message or "os.system" in message  # the global it names
    assert "Nothing was executed" in message and "\n" not in message
    assert not marker.exists()


def test_a_python2_cifar10_batch_reads_as_the_real_files_are_written(tmp_path):
    """The real batches: protocol 2, numpy 1's module names (numpy.core), byte strings read as latin1."""
    x_train, y_train, x_test, y_test = write_cifar10(tmp_path, np.random.default_rng(1))
    for path in (tmp_path / "cifar-10-batches-py").iterdir():
        entry = pickle.loads(path.read_bytes())
        written = pickle.dumps({**entry, "batch_label": b"training batch"}, protocol=2)
        path.write_bytes(written.replace(b"numpy._core.multiarray", b"numpy.core.multiarray"))
    assert b"numpy.core.multiarray\n_reconstruct" in path.read_bytes()
    raw = load_arrays(data(dataset="cifar10", data_dir=tmp_path, download=False), seed=0)
    np.testing.assert_array_equal(raw.y_train, y_train)
    np.testing.assert_array_equal(raw.y_test, y_test)
    assert raw.x_train.shape == (20, 3, 32, 32)


def write_svhn(root: Path, rng):
    from scipy.io import savemat

    out = []
    for split, n in (("train", 9), ("test", 5)):
        x, y = images(rng, n, (3, 32, 32))
        y_mat = np.where(y == 0, 10, y).reshape(-1, 1)  # SVHN stores the digit 0 as 10
        root.mkdir(parents=True, exist_ok=True)
        savemat(str(root / f"{split}_32x32.mat"), {"X": x.transpose(2, 3, 1, 0), "y": y_mat})
        out += [x, y]
    return tuple(out)


WRITERS = {
    "mnist": lambda root, rng: write_mnist(root, "MNIST", rng),
    "fashion_mnist": lambda root, rng: write_mnist(root, "FashionMNIST", rng, gz=True),
    "cifar10": write_cifar10,
    "svhn": write_svhn,
}
SHAPES = {"mnist": (1, 28, 28), "fashion_mnist": (1, 28, 28), "cifar10": (3, 32, 32), "svhn": (3, 32, 32)}


@pytest.mark.parametrize("name", list(WRITERS))
def test_reads_torchvision_files_and_standardises_with_train_statistics(name, tmp_path):
    xtr, ytr, xte, yte = WRITERS[name](tmp_path, np.random.default_rng(0))
    raw = load_arrays(data(dataset=name, data_dir=tmp_path, download=False), seed=0)
    assert raw.x_train.shape == (len(ytr), *SHAPES[name]) and raw.x_test.shape == (len(yte), *SHAPES[name])
    assert raw.x_train.dtype == np.float32 and raw.y_train.dtype == np.int64 and raw.num_classes == 10
    np.testing.assert_array_equal(raw.y_train, ytr)
    np.testing.assert_array_equal(raw.y_test, yte)
    scaled = xtr.astype(np.float64) / 255
    mean, std = scaled.mean(axis=(0, 2, 3)), scaled.std(axis=(0, 2, 3))
    np.testing.assert_allclose(raw.x_train.mean(axis=(0, 2, 3)), 0, atol=1e-5)
    np.testing.assert_allclose(raw.x_train.std(axis=(0, 2, 3)), 1, atol=1e-4)
    restored = raw.x_test * std[None, :, None, None] + mean[None, :, None, None]
    np.testing.assert_allclose(restored * 255, xte, atol=1e-3)  # the same pixels, in order


@pytest.mark.parametrize("name", list(WRITERS))
def test_missing_files_without_download_is_a_clear_config_error(name, tmp_path):
    where = tmp_path / "nothing-here"
    with pytest.raises(ConfigError) as err:
        load_arrays(data(dataset=name, data_dir=where, download=False), seed=0)
    msg = str(err.value)
    assert f"data.dataset {name}" in msg and "data.data_dir" in msg and str(where.resolve()) in msg
    assert "data.download is false" in msg
    expected = {"svhn": "train_32x32.mat", "cifar10": "data_batch_1"}.get(name, "train-images-idx3-ubyte")
    assert expected in msg
    assert "\n" not in msg  # one paragraph


TV_CLASS = {"mnist": "MNIST", "fashion_mnist": "FashionMNIST", "cifar10": "CIFAR10", "svhn": "SVHN"}


@pytest.mark.parametrize("name", list(WRITERS))
def test_failed_download_is_a_clear_config_error(name, tmp_path, monkeypatch):
    import torchvision.datasets

    calls = []

    def offline(root, *args, **kwargs):
        calls.append((root, kwargs))
        raise RuntimeError("Error downloading: <urlopen error [Errno -3] Temporary failure in name resolution>")

    monkeypatch.setattr(torchvision.datasets, TV_CLASS[name], offline)
    with pytest.raises(ConfigError) as err:
        load_arrays(data(dataset=name, data_dir=tmp_path / "dl", download=True), seed=0)
    assert calls and calls[0][0] == str((tmp_path / "dl").resolve()) and calls[0][1]["download"] is True
    msg = str(err.value)
    assert "data.data_dir" in msg and str((tmp_path / "dl").resolve()) in msg
    assert "download failed (RuntimeError: Error downloading" in msg


def test_successful_download_is_then_read_from_disk(tmp_path, monkeypatch):
    import torchvision.datasets

    written = {}

    def fake_mnist(root, train, download):
        if "x" not in written:  # torchvision fetches every file on the first call
            written["x"] = write_mnist(Path(root), "MNIST", np.random.default_rng(3))

    monkeypatch.setattr(torchvision.datasets, "MNIST", fake_mnist)
    raw = load_arrays(data(dataset="mnist", data_dir=tmp_path, download=True), seed=0)
    np.testing.assert_array_equal(raw.y_test, written["x"][3])


def test_corrupt_files_are_a_config_error(tmp_path):
    write_mnist(tmp_path, "MNIST", np.random.default_rng(0))
    (tmp_path / "MNIST" / "raw" / "t10k-images-idx3-ubyte").write_bytes(b"\x00\x00\x08\x03garbage")
    with pytest.raises(ConfigError, match=r"could not read the files under data\.data_dir"):
        load_arrays(data(dataset="mnist", data_dir=tmp_path, download=False), seed=0)
