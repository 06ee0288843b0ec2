"""``svhn``: Street View House Numbers (32x32 colour), torchvision's ``.mat`` files under ``data.data_dir``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from asyncfl.learn.datasets._base import Arrays
from asyncfl.learn.datasets._torchvision import Layout, torchvision_dataset


def read(folder: Path) -> Arrays:
    return (*_read_split(folder / "train_32x32.mat"), *_read_split(folder / "test_32x32.mat"))


def _read_split(path: Path) -> tuple[np.ndarray, np.ndarray]:
    from scipy.io import loadmat

    mat = loadmat(str(path))
    x = np.transpose(mat["X"], (3, 2, 0, 1))  # (H, W, C, N) -> (N, C, H, W)
    return x, mat["y"].ravel() % 10  # SVHN stores digit 0 as label 10


def download(root: Path) -> None:
    from torchvision import datasets as tv  # local: importing torchvision is slow

    for split in ("train", "test"):
        tv.SVHN(str(root), split=split, download=True)


LAYOUT = Layout("svhn", ".", ["train_32x32.mat", "test_32x32.mat"], read, download)
DATASET = torchvision_dataset(LAYOUT, input_shape=(3, 32, 32), order=70, train_pool=73_257, test_split=26_032)
