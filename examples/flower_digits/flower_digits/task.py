"""flower_digits: the model, the data and the training of a small Flower app (as in Flower's PyTorch quickstart).

Covers: scikit-learn's 8x8 digits (1,797 images, shipped with scikit-learn: no download), split into
``num_partitions`` label-skewed shares (Dirichlet, alpha = 1), each share 80 % train / 20 % test; a
two-layer perceptron trained with plain SGD.  Everything is seeded: the same partition, round and
arrays give the same reply, whichever process or simulator calls it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
from flwr.app import ArrayRecord
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

# What pyproject.toml's [tool.flwr.app.config] says.  Flower's run_simulation() passes no run config,
# so the apps fall back on these; `flwr run` and asyncfl pass the file's (or the scenario's) values.
DEFAULT_RUN_CONFIG: dict[str, int | float] = {
    "num-server-rounds": 10,
    "fraction-train": 0.5,
    "fraction-evaluate": 1.0,
    "timeout": 3600.0,  # seconds a round waits for replies (Flower's default)
    "local-epochs": 1,
    "batch-size": 16,
    "lr": 0.3,
}
PARTITION_SEED = 42  # fixes who holds which image
PARTITION_ALPHA = 1.0  # Dirichlet concentration over labels: smaller is more skewed
MIN_PARTITION_SIZE = 10  # images; a draw leaving a share smaller than this is drawn again
TEST_SHARE = 0.2  # of each partition
INIT_SEED = 0  # the initial model's weights


def run_config_value(run_config: dict, key: str) -> int | float:
    """``run_config[key]``, or its default when the runtime passed no run config."""
    return run_config.get(key, DEFAULT_RUN_CONFIG[key])


class Net(nn.Module):
    """A two-layer perceptron for 8x8 images: 64 -> 64 -> 10."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def initial_arrays() -> ArrayRecord:
    """The initial global model, the same every call (the global random generator is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(INIT_SEED)
        return ArrayRecord(Net().state_dict())


@lru_cache(maxsize=1)
def _digits() -> tuple[torch.Tensor, torch.Tensor]:
    bunch = load_digits()
    x = torch.tensor(bunch.data / 16.0, dtype=torch.float32)  # pixels 0..16 -> [0, 1]
    return x, torch.tensor(bunch.target, dtype=torch.int64)


@lru_cache(maxsize=4)
def _partitions(num_partitions: int) -> tuple[np.ndarray, ...]:
    """Label-skewed shares: each class's images spread over the partitions by Dirichlet(alpha) weights."""
    labels = _digits()[1].numpy()
    rng = np.random.default_rng(PARTITION_SEED)
    while True:
        shares: list[list[int]] = [[] for _ in range(num_partitions)]
        for label in range(10):
            idx = rng.permutation(np.flatnonzero(labels == label))
            weights = rng.dirichlet(np.full(num_partitions, PARTITION_ALPHA))
            cuts = (np.cumsum(weights)[:-1] * len(idx)).astype(int)
            for share, part in zip(shares, np.split(idx, cuts)):
                share.extend(part.tolist())
        if min(len(share) for share in shares) >= MIN_PARTITION_SIZE:
            return tuple(rng.permutation(np.array(share)) for share in shares)


def load_data(partition_id: int, num_partitions: int, batch_size: int = 16, shuffle_seed: int = 0):
    """The train and test loaders of one partition; ``shuffle_seed`` fixes the order of the batches."""
    x, y = _digits()
    idx = torch.from_numpy(_partitions(num_partitions)[partition_id])
    n_test = round(TEST_SHARE * len(idx))
    train_idx, test_idx = idx[n_test:], idx[:n_test]
    generator = torch.Generator().manual_seed(shuffle_seed)
    trainloader = DataLoader(
        TensorDataset(x[train_idx], y[train_idx]), batch_size=batch_size, shuffle=True, generator=generator
    )
    testloader = DataLoader(TensorDataset(x[test_idx], y[test_idx]), batch_size=256)
    return trainloader, testloader


def train(net: nn.Module, trainloader: DataLoader, epochs: int, lr: float, device: torch.device) -> float:
    """Plain SGD for ``epochs`` passes; the mean training loss over every batch."""
    net.to(device)
    net.train()
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    criterion = nn.CrossEntropyLoss()
    total, batches = 0.0, 0
    for _ in range(epochs):
        for images, labels in trainloader:
            optimizer.zero_grad()
            loss = criterion(net(images.to(device)), labels.to(device))
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
    return total / max(batches, 1)


def test(net: nn.Module, testloader: DataLoader, device: torch.device) -> tuple[float, float]:
    """Mean loss and accuracy over the test loader."""
    net.to(device)
    net.eval()
    criterion = nn.CrossEntropyLoss(reduction="sum")
    loss, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for images, labels in testloader:
            outputs = net(images.to(device))
            loss += criterion(outputs, labels.to(device)).item()
            correct += (outputs.argmax(1) == labels.to(device)).sum().item()
            seen += len(labels)
    return loss / max(seen, 1), correct / max(seen, 1)
