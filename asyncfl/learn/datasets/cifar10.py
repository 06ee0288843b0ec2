"""``cifar10``: CIFAR-10 (32x32 colour), torchvision's Python batches under ``data.data_dir``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from asyncfl.errors import ConfigError
from asyncfl.learn.datasets._base import Arrays
from asyncfl.learn.datasets._torchvision import Layout, download_train_test, torchvision_dataset
from asyncfl.safe_pickle import NUMPY, PLAIN, load_restricted

# A batch is a dict of a uint8 array (data), a list of ints (labels) and strings: plain data and numpy
# arrays only.  The files come from the internet, and a plain pickle.load would run any code they name.
BATCH_GLOBALS = {**PLAIN, **NUMPY}
BATCH = "a CIFAR-10 batch (a dict with 'data', a uint8 array of rows of 3x32x32 pixels, and 'labels')"


def read(folder: Path) -> Arrays:
    batches = [_read_batch(folder / f"data_batch_{i}") for i in range(1, 6)]
    x_te, y_te = _read_batch(folder / "test_batch")
    return np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches]), x_te, y_te


def _read_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    entry = load_restricted(path, BATCH_GLOBALS, BATCH, encoding="latin1")  # the batches are Python 2 pickles
    if not isinstance(entry, dict) or "data" not in entry or "labels" not in entry:
        raise ConfigError(f"{path}: expected {BATCH}, found {type(entry).__name__} without them.")
    return np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3, 32, 32), np.asarray(entry["labels"])


FILES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
LAYOUT = Layout("cifar10", "cifar-10-batches-py", FILES, read, download_train_test("CIFAR10"))
DATASET = torchvision_dataset(LAYOUT, input_shape=(3, 32, 32), order=60, train_pool=50_000, test_split=10_000)
