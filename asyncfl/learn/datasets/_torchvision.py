"""What the torchvision data sets (``mnist``, ``fashion_mnist``, ``cifar10``, ``svhn``) share.

Their on-disk formats under ``data.data_dir`` are read directly (torchvision's classes would
md5-check every file) and downloaded through torchvision when missing and ``data.download`` is on.
Pixels go to [0, 1], then every channel is standardised with the training set's mean and std.
"""

from __future__ import annotations

import functools
import gzip
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from asyncfl.errors import ConfigError
from asyncfl.learn.datasets._base import Arrays, DataSet, RawData

IDX_NAMES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]


@dataclass(frozen=True)
class Layout:
    """Where a data set's files live under ``data.data_dir`` (torchvision's layout) and how to read them."""

    name: str
    folder: str
    files: list[str]
    read: Callable[[Path], Arrays]  # the folder -> uint8 images [n, C, H, W] and labels, train then test
    download: Callable[[Path], None]  # fetch into data_dir
    gz_ok: bool = False  # idx files may stay gzipped


def torchvision_dataset(
    layout: Layout, input_shape: tuple[int, ...], order: int, train_pool: int, test_split: int
) -> DataSet:
    """The registry entry of a torchvision data set of ten classes with ``train_pool`` training images and
    ``test_split`` test images."""
    return DataSet(
        layout.name,
        functools.partial(_load, layout),
        input_shape,
        classes=10,
        order=order,
        train_pool=train_pool,
        test_split=test_split,
        check_files=functools.partial(_check_files, layout),
    )


def _check_files(layout: Layout, data: Any) -> None:
    """Raise for files missing with ``data.download`` off, the one case loading is sure to fail (a download
    may work or not: only trying tells)."""
    root = Path(data.data_dir).expanduser().resolve()
    if not data.download and _missing(layout, root):
        raise ConfigError(_missing_message(layout, data, root, "data.download is false"))


def download_train_test(class_name: str) -> Callable[[Path], None]:
    """Fetch both splits through the torchvision class ``class_name`` (``train=True`` / ``False``)."""

    def download(root: Path) -> None:
        from torchvision import datasets as tv  # local: importing torchvision is slow

        for train in (True, False):
            getattr(tv, class_name)(str(root), train=train, download=True)

    return download


def read_mnist(folder: Path) -> Arrays:
    """MNIST's (and Fashion-MNIST's) four idx files."""
    x_tr, y_tr, x_te, y_te = (read_idx(folder / name) for name in IDX_NAMES)
    return x_tr[:, None], y_tr, x_te[:, None], y_te


def read_idx(path: Path) -> np.ndarray:
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


def _load(layout: Layout, data: Any, seed: int) -> RawData:
    root = Path(data.data_dir).expanduser().resolve()
    if _missing(layout, root):
        if not data.download:
            raise ConfigError(_missing_message(layout, data, root, "data.download is false, so nothing was downloaded"))
        try:
            root.mkdir(parents=True, exist_ok=True)
            layout.download(root)
        except Exception as exc:  # any failure (network, disk, checksum, archive): one user message
            detail = " ".join(str(exc).split())  # torchvision's messages span lines; keep one paragraph
            why = f"the download failed ({type(exc).__name__}: {detail})"
            raise ConfigError(_missing_message(layout, data, root, why)) from None
        if _missing(layout, root):
            why = "the download finished but the files are still missing"
            raise ConfigError(_missing_message(layout, data, root, why))
    try:
        x_tr, y_tr, x_te, y_te = layout.read(root / layout.folder)
    except ConfigError as exc:  # a file its reader refused (a pickle naming code): the message names it
        raise ConfigError(
            f"data.dataset {layout.name}: {exc} Delete the file to download afresh, or replace it."
        ) from None
    except (OSError, ValueError, KeyError, EOFError) as exc:
        raise ConfigError(
            f"data.dataset {layout.name}: could not read the files under data.data_dir ({root}): "
            f"{type(exc).__name__}: {exc}. Delete them to download afresh, or replace them."
        ) from None
    x_tr, x_te = _standardise(x_tr, x_te)
    return RawData(x_tr, y_tr.astype(np.int64), x_te, y_te.astype(np.int64), num_classes=10)


def _missing(layout: Layout, root: Path) -> list[str]:
    folder = root / layout.folder
    return [
        f"{layout.folder}/{name}"
        for name in layout.files
        if not ((folder / name).is_file() or (layout.gz_ok and (folder / f"{name}.gz").is_file()))
    ]


def _missing_message(layout: Layout, data: Any, root: Path, why: str) -> str:
    where = root if layout.folder == "." else root / layout.folder
    fetch = "run where the download sites are reachable" if data.download else "set data.download: true"
    return (
        f"data.dataset {layout.name} is not available: data.data_dir ({root}) does not hold its files "
        f"(expected {', '.join(layout.files)} in {where}, torchvision's layout), and {why}. "
        f"Copy the files there, {fetch}, or choose data.dataset digits or synthetic, which need no files."
    )


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
