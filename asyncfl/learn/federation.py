"""The federation: the whole data set on the device plus per-client index tensors
(docs/explanation/architecture.md section 6).

Keeping every sample in one tensor and giving clients index tensors means local training gathers
a batch with one indexing operation -- no DataLoader on the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from asyncfl.learn.datasets import REGISTRY, RawData, load_arrays
from asyncfl.learn.partition import partition, regroup, split_train_test
from asyncfl.sections import Section  # also types the scenario sections assembled above (config)
from asyncfl.seeding import seeded_rng

# Random-stream tags (asyncfl.seeding.seeded_rng); never renumber.
TAG_PARTITION = 21
TAG_LOCAL_SPLIT = 22


@dataclass(frozen=True, eq=False)
class Federation:
    """Every sample on ``device``, and which of them each client holds.

    ``features`` / ``labels`` hold the training pool first, then the global test set;
    ``client_train``, ``client_test`` and ``test_indices`` are int64 index tensors into them.
    """

    features: torch.Tensor
    labels: torch.Tensor
    client_train: list[torch.Tensor]
    client_test: list[torch.Tensor]
    test_indices: torch.Tensor
    num_classes: int
    input_shape: tuple[int, ...]

    @property
    def num_clients(self) -> int:
        return len(self.client_train)

    def label_histogram(self, client: int) -> np.ndarray:
        """Normalised label histogram (length ``num_classes``) of the client's training split."""
        y = self.labels[self.client_train[client]].cpu().numpy()
        counts = np.bincount(y, minlength=self.num_classes).astype(np.float64)
        return counts / max(counts.sum(), 1.0)


def build_federation(data: Section, seed: int, device: torch.device) -> Federation:
    """Load ``data.dataset``, split it across ``data.clients`` clients and move it to ``device``.

    ``synthetic`` keeps its natural clients (FedProx generates data per client), so
    ``data.partition`` is ignored for it; every other data set's training pool is partitioned by
    ``data.partition`` and each client's share split into local train/test by
    ``data.test_fraction``.  The global test set is the data set's test split (for ``synthetic``:
    the union of the clients' test splits; for a ``file`` partition with a test list: that list).
    Same ``data`` and ``seed`` => identical federation.
    """
    raw, train, test = _deal(data, seed)
    n_train = len(raw.y_train)
    features = torch.from_numpy(np.concatenate([raw.x_train, raw.x_test])).to(device)
    labels = torch.from_numpy(np.concatenate([raw.y_train, raw.y_test]).astype(np.int64)).to(device)

    def on_device(idx: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(idx, dtype=torch.int64).to(device)

    return Federation(
        features=features,
        labels=labels,
        client_train=[on_device(i) for i in train],
        client_test=[on_device(i) for i in test],
        test_indices=on_device(np.arange(n_train, n_train + len(raw.y_test))),
        num_classes=raw.num_classes,
        input_shape=raw.input_shape,
    )


def client_train_sizes(data: Section, seed: int) -> list[int] | None:
    """Every client's training-split size as :func:`build_federation` deals it (same ``data`` and
    ``seed``: the same numbers), without a device or a model, for timing-only runs; None when the data
    set is read from files (``check_files``: a timing-only run downloads and reads nothing) or
    ``data.clients`` exceeds its training pool (no training run could deal it)."""
    spec = REGISTRY[data.dataset]
    pool = spec.pool_size(data)
    if spec.check_files is not None or (pool is not None and data.clients > pool):
        return None
    return [len(split) for split in _deal(data, seed)[1]]


def _deal(data: Section, seed: int) -> tuple[RawData, list[np.ndarray], list[np.ndarray]]:
    """The data set and every client's (train, test) indices into its training pool / test part."""
    raw = load_arrays(data, seed)
    if raw.client_of_train is not None:
        return raw, *_natural_clients(raw, data.clients)
    raw = regroup(raw, data.partition)  # a file partition may bring its own test split
    return raw, *_partitioned_clients(raw, data, seed)


def _natural_clients(raw: RawData, clients: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Clients as generated; local test indices point into the test part (after the pool)."""
    offset = len(raw.y_train)
    train = [np.flatnonzero(raw.client_of_train == k) for k in range(clients)]
    test = [offset + np.flatnonzero(raw.client_of_test == k) for k in range(clients)]
    return train, test


def _partitioned_clients(raw: RawData, data: Section, seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Partition the training pool, then split every client's share into local train/test."""
    shares = partition(raw.y_train, data.clients, data.partition, seeded_rng(seed, TAG_PARTITION))
    rng = seeded_rng(seed, TAG_LOCAL_SPLIT)
    splits = [split_train_test(share, data.test_fraction, rng) for share in shares]
    return [s[0] for s in splits], [s[1] for s in splits]
