"""``digits``: scikit-learn's 8x8 digits (offline), pixels scaled to [0, 1]; the global test set is
a stratified 20% hold-out drawn with the seed."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np

from asyncfl.learn.datasets._base import DataSet, RawData
from asyncfl.seeding import seeded_rng

# Fixed tag keying the hold-out's random stream off the scenario seed.  Never renumber it:
# the data of earlier runs depends on it.
TAG_DIGITS_HOLDOUT = 11
DIGITS_TEST_SHARE = 0.2


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


def load(data: Any, seed: int) -> RawData:
    pixels, target = digits_arrays()
    x = (pixels / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = target.astype(np.int64)
    is_test = np.zeros(len(y), dtype=bool)
    rng = seeded_rng(seed, TAG_DIGITS_HOLDOUT)
    for c in np.unique(y):  # stratified: the same share of every class
        idx = rng.permutation(np.flatnonzero(y == c))
        is_test[idx[: round(DIGITS_TEST_SHARE * len(idx))]] = True
    source_order = np.concatenate([np.flatnonzero(~is_test), np.flatnonzero(is_test)])
    return RawData(x[~is_test], y[~is_test], x[is_test], y[is_test], num_classes=10, source_order=source_order)


# 1,797 images less the stratified hold-out (round(0.2 n) of each class's n), whatever the seed
TRAIN_POOL = 1438
TEST_SPLIT = 1797 - TRAIN_POOL

DATASET = DataSet(
    "digits", load, (1, 8, 8), classes=10, inputs="images", order=10, train_pool=TRAIN_POOL, test_split=TEST_SPLIT
)
