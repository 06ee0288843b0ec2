"""Data sets as numpy arrays (DESIGN.md section 6).

* ``digits``: scikit-learn's 8x8 digits (offline), pixels scaled to [0, 1]; the global test set is
  a stratified 20% hold-out drawn with the seed.
* ``mnist1d``: MNIST-1D (Greydanus 2020, "Scaling down deep learning"), generated procedurally by the
  ``mnist1d`` package's ``make_dataset`` (never its download path): 40-point signals of shape ``[1, 40]``,
  the first ``train_samples`` of the shuffled set for training and the next ``test_samples`` as the
  global test set.  With the defaults (4,000 / 1,000, generator seed 42) this is the published split.
* ``synthetic``: FedProx's Synthetic(alpha, beta) (Li et al. 2020, "Federated Optimization in
  Heterogeneous Networks", section 5.1), with a natural client for every sample.
* ``mnist``, ``fashion_mnist``, ``cifar10``, ``svhn``: torchvision's on-disk formats under
  ``data.data_dir``, read here directly (torchvision's classes would md5-check every file) and
  downloaded through torchvision when missing and ``data.download`` is on.  Pixels go to [0, 1],
  then every channel is standardised with the training set's mean and std.
"""

from __future__ import annotations

import functools
import gzip
import pickle
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from asyncfl.config.loading import ConfigError
from asyncfl.config.schema import Data
from asyncfl.learn.partition import split_train_test

# Fixed tags keying independent random streams off the scenario seed.  Never renumber them:
# the data of earlier runs depends on them.
TAG_DIGITS_HOLDOUT = 11
TAG_SYNTHETIC = 12
DIGITS_TEST_SHARE = 0.2

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def seeded_rng(seed: int, tag: int) -> np.random.Generator:
    """The random stream for one purpose (``tag``) of one scenario seed."""
    return np.random.default_rng(np.random.SeedSequence([seed, tag]))


@dataclass(frozen=True, eq=False)
class RawData:
    """A data set before it is placed on the device.

    ``x_*`` are float32 of shape ``[n, *input_shape]``, ``y_*`` int64 labels in
    ``[0, num_classes)``.  ``client_of_train`` / ``client_of_test`` give the natural client of each
    sample (``synthetic`` only, else None).
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int
    client_of_train: np.ndarray | None = None
    client_of_test: np.ndarray | None = None

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.x_train.shape[1:])


def load_arrays(data: Data, seed: int) -> RawData:
    """Load (or generate) ``data.dataset``; raise :class:`ConfigError` when it cannot be had."""
    if data.dataset == "digits":
        return _digits(seed)
    if data.dataset == "synthetic":
        return _synthetic(data, seed)
    if data.dataset == "mnist1d":
        cfg = data.mnist1d
        return _mnist1d(cfg.train_samples, cfg.test_samples, cfg.seed)
    return _torchvision(data)


# --- digits ------------------------------------------------------------------------------------


def digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits (1,797 8x8 images, pixel values 0..16, labels 0..9): the file it ships,
    ``sklearn/datasets/data/digits.csv.gz``, read as ``load_digits`` reads it (``np.loadtxt``) but
    without importing scikit-learn, whose import (scipy.stats and more) took 1.5 s of every run on
    digits, a quarter of ``scenarios/k_async.yaml``.  Falls back to ``load_digits`` if the file has moved."""
    import importlib.util

    spec = importlib.util.find_spec("sklearn")  # finds the package without running it
    path = Path(spec.origin).parent / "datasets" / "data" / "digits.csv.gz" if spec and spec.origin else None
    if path is None or not path.is_file():
        from sklearn.datasets import load_digits

        bunch = load_digits()
        return bunch.data, bunch.target
    with gzip.open(path, mode="rt", encoding="utf-8") as handle:
        data = np.loadtxt(handle, delimiter=",")
    return data[:, :-1], data[:, -1].astype(int)


def _digits(seed: int) -> RawData:
    data, target = digits_arrays()
    x = (data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = target.astype(np.int64)
    is_test = np.zeros(len(y), dtype=bool)
    rng = seeded_rng(seed, TAG_DIGITS_HOLDOUT)
    for c in np.unique(y):  # stratified: the same share of every class
        idx = rng.permutation(np.flatnonzero(y == c))
        is_test[idx[: round(DIGITS_TEST_SHARE * len(idx))]] = True
    return RawData(x[~is_test], y[~is_test], x[is_test], y[is_test], num_classes=10)


# --- MNIST-1D ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _mnist1d(train_samples: int, test_samples: int, generator_seed: int) -> RawData:
    """Generate MNIST-1D once per (sizes, seed) in this process (about a second per 1,000 samples).

    ``make_dataset`` draws an equal number of samples per class, so the total is rounded up to a multiple
    of ten and the surplus dropped.  It seeds Python's and numpy's global generators; their states are
    restored afterwards so the data set never shifts another component's random numbers.
    """
    from mnist1d.data import get_dataset_args, make_dataset  # local: it imports matplotlib

    args = get_dataset_args()
    total = train_samples + test_samples
    args.num_samples = -(-total // 10) * 10
    args.train_split = 1.0  # split here: the first train_samples are the published training set
    args.seed = generator_seed
    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        generated = make_dataset(args)
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
    x = generated["x"].astype(np.float32)[:, None, :]
    y = generated["y"].astype(np.int64)
    for array in (x, y):
        array.setflags(write=False)  # shared by every run of the process through the cache
    train, test = slice(0, train_samples), slice(train_samples, total)
    return RawData(x[train], y[train], x[test], y[test], num_classes=10)


# --- synthetic (FedProx) -----------------------------------------------------------------------


def _synthetic(data: Data, seed: int) -> RawData:
    """FedProx Synthetic(alpha, beta); each client's samples split by ``data.test_fraction``.

    Following the FedProx generator, alpha and beta are the standard deviations of u_k and B_k.
    """
    if data.test_fraction <= 0:
        raise ConfigError(
            "data.dataset synthetic builds its global test set from the clients' local test splits, "
            "so data.test_fraction must be greater than 0"
        )
    cfg = data.synthetic
    rng = seeded_rng(seed, TAG_SYNTHETIC)
    sizes = np.maximum(2, np.rint(cfg.samples_per_client.sample(rng, data.clients))).astype(int)
    x_std = np.arange(1, cfg.dimension + 1, dtype=float) ** -0.6  # Sigma_jj = j^-1.2
    u = rng.normal(0.0, cfg.alpha, data.clients)
    big_b = rng.normal(0.0, cfg.beta, data.clients)
    train: list[tuple[np.ndarray, np.ndarray, int]] = []
    test: list[tuple[np.ndarray, np.ndarray, int]] = []
    for k, n in enumerate(sizes):
        x, y = _synthetic_client(rng, u[k], big_b[k], x_std, cfg.classes, int(n))
        tr, te = split_train_test(np.arange(n), data.test_fraction, rng)
        train.append((x[tr], y[tr], k))
        test.append((x[te], y[te], k))
    x_tr, y_tr, c_tr = _stack(train)
    x_te, y_te, c_te = _stack(test)
    return RawData(x_tr, y_tr, x_te, y_te, cfg.classes, c_tr, c_te)


def _synthetic_client(
    rng: np.random.Generator, u: float, big_b: float, x_std: np.ndarray, classes: int, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """One client: W ~ N(u, 1), b ~ N(u, 1), v ~ N(B, 1), x ~ N(v, Sigma), y = argmax(W x + b)."""
    dim = len(x_std)
    w = rng.normal(u, 1.0, (classes, dim))
    b = rng.normal(u, 1.0, classes)
    v = rng.normal(big_b, 1.0, dim)
    x = v + x_std * rng.standard_normal((n, dim))
    y = np.argmax(x @ w.T + b, axis=1)  # softmax is monotone: argmax of the logits
    return x.astype(np.float32), y.astype(np.int64)


def _stack(chunks: list[tuple[np.ndarray, np.ndarray, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.concatenate([c[0] for c in chunks])
    y = np.concatenate([c[1] for c in chunks])
    client = np.concatenate([np.full(len(c[1]), c[2], dtype=np.int64) for c in chunks])
    return x, y, client


# --- torchvision data sets ---------------------------------------------------------------------

_IDX_NAMES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]
# dataset -> (folder under data_dir, expected files) in torchvision's layout
_LAYOUT: dict[str, tuple[str, list[str]]] = {
    "mnist": ("MNIST/raw", _IDX_NAMES),
    "fashion_mnist": ("FashionMNIST/raw", _IDX_NAMES),
    "cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]),
    "svhn": (".", ["train_32x32.mat", "test_32x32.mat"]),
}


def _torchvision(data: Data) -> RawData:
    root = Path(data.data_dir).expanduser().resolve()
    if _missing(data.dataset, root):
        if not data.download:
            raise ConfigError(_missing_message(data, root, "data.download is false, so nothing was downloaded"))
        try:
            _download(data.dataset, root)
        except Exception as exc:  # any failure (network, disk, checksum, archive): one user message
            detail = " ".join(str(exc).split())  # torchvision's messages span lines; keep one paragraph
            why = f"the download failed ({type(exc).__name__}: {detail})"
            raise ConfigError(_missing_message(data, root, why)) from None
        if _missing(data.dataset, root):
            raise ConfigError(_missing_message(data, root, "the download finished but the files are still missing"))
    try:
        x_tr, y_tr, x_te, y_te = _READERS[data.dataset](root / _LAYOUT[data.dataset][0])
    except (OSError, ValueError, KeyError, EOFError, pickle.UnpicklingError) as exc:
        raise ConfigError(
            f"data.dataset {data.dataset}: could not read the files under data.data_dir ({root}): "
            f"{type(exc).__name__}: {exc}. Delete them to download afresh, or replace them."
        ) from None
    x_tr, x_te = _standardise(x_tr, x_te)
    return RawData(x_tr, y_tr.astype(np.int64), x_te, y_te.astype(np.int64), num_classes=10)


def _missing(dataset: str, root: Path) -> list[str]:
    folder, names = _LAYOUT[dataset]
    gz_ok = dataset in ("mnist", "fashion_mnist")  # idx files may stay gzipped
    return [
        f"{folder}/{name}"
        for name in names
        if not ((root / folder / name).is_file() or (gz_ok and (root / folder / f"{name}.gz").is_file()))
    ]


def _missing_message(data: Data, root: Path, why: str) -> str:
    folder, names = _LAYOUT[data.dataset]
    where = root if folder == "." else root / folder
    fetch = "run where the download sites are reachable" if data.download else "set data.download: true"
    return (
        f"data.dataset {data.dataset} is not available: data.data_dir ({root}) does not hold its files "
        f"(expected {', '.join(names)} in {where}, torchvision's layout), and {why}. "
        f"Copy the files there, {fetch}, or choose data.dataset digits or synthetic, which need no files."
    )


def _download(dataset: str, root: Path) -> None:
    """Fetch the files through torchvision (it knows the mirrors and checksums)."""
    from torchvision import datasets as tv  # local: importing torchvision is slow

    root.mkdir(parents=True, exist_ok=True)
    if dataset == "svhn":
        for split in ("train", "test"):
            tv.SVHN(str(root), split=split, download=True)
        return
    cls = {"mnist": tv.MNIST, "fashion_mnist": tv.FashionMNIST, "cifar10": tv.CIFAR10}[dataset]
    for train in (True, False):
        cls(str(root), train=train, download=True)


def _read_idx(path: Path) -> np.ndarray:
    """An idx file (LeCun's MNIST format: big-endian header, then unsigned bytes), maybe gzipped."""
    if not path.is_file():
        path = path.with_name(path.name + ".gz")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[:4], "big")
    if magic >> 8 != 0x08:  # type code 0x08 = unsigned byte; torchvision's files are all ubyte
        raise ValueError(f"{path.name} is not an unsigned-byte idx file")
    ndim = magic & 0xFF
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _read_mnist(folder: Path) -> Arrays:
    x_tr, y_tr, x_te, y_te = (_read_idx(folder / name) for name in _IDX_NAMES)
    return x_tr[:, None], y_tr, x_te[:, None], y_te


def _read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with open(path, "rb") as f:
        entry = pickle.load(f, encoding="latin1")  # the batches are Python 2 pickles
    return np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3, 32, 32), np.asarray(entry["labels"])


def _read_cifar10(folder: Path) -> Arrays:
    batches = [_read_cifar_batch(folder / f"data_batch_{i}") for i in range(1, 6)]
    x_te, y_te = _read_cifar_batch(folder / "test_batch")
    return np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches]), x_te, y_te


def _read_svhn_split(path: Path) -> tuple[np.ndarray, np.ndarray]:
    from scipy.io import loadmat

    mat = loadmat(str(path))
    x = np.transpose(mat["X"], (3, 2, 0, 1))  # (H, W, C, N) -> (N, C, H, W)
    return x, mat["y"].ravel() % 10  # SVHN stores digit 0 as label 10


def _read_svhn(folder: Path) -> Arrays:
    return (*_read_svhn_split(folder / "train_32x32.mat"), *_read_svhn_split(folder / "test_32x32.mat"))


_READERS: dict[str, Callable[[Path], Arrays]] = {
    "mnist": _read_mnist,
    "fashion_mnist": _read_mnist,
    "cifar10": _read_cifar10,
    "svhn": _read_svhn,
}


def _standardise(x_train: np.ndarray, x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """uint8 images to float32 [0, 1], then per-channel z-scores with the training statistics."""
    out = []
    axes = (0, 2, 3)
    train = x_train.astype(np.float32) / 255.0
    mean = train.mean(axis=axes, dtype=np.float64).astype(np.float32)
    std = train.std(axis=axes, dtype=np.float64).astype(np.float32)
    std[std == 0] = 1.0  # a constant channel stays at 0 instead of dividing by zero
    for x in (train, x_test.astype(np.float32) / 255.0):
        x -= mean[None, :, None, None]
        x /= std[None, :, None, None]
        out.append(x)
    return out[0], out[1]
