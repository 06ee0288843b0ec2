"""pytorchexample: A Flower / PyTorch app."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader


class Net(nn.Module):
    """Model (simple CNN adapted from 'PyTorch: A 60 Minute Blitz')"""

    def __init__(self):
        super(Net, self).__init__()  # noqa: UP008  (Flower's line, kept as written)
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


# --- asyncfl: the data loading below replaces the template's (flwr-datasets' CIFAR-10, downloaded) with
# scikit-learn's digits, shipped with scikit-learn, so that the app runs offline; the rest of the file is
# Flower's.  Each 8x8 image is shown to the CIFAR-10 network as a 3x32x32 image (each pixel repeated 4x4, on 3
# channels, normalised as the template's transform: (x - 0.5) / 0.5); batches are dicts {"img", "label"} as the
# template's.  Everything is fixed by seeds of its own: the same partition gives the same batches in any process
# (Flower's engine runs the nodes in Ray workers that keep their global generators from call to call).
CENTRAL_TEST = 297  # the last images of the digits: the central test set; the first 1,500 are partitioned
SPLIT_SEED = 42  # the template's train_test_split(test_size=0.2, seed=42)


def _digits_as_cifar():
    bunch = load_digits()
    x = torch.tensor(bunch.data / 16.0, dtype=torch.float32).reshape(-1, 1, 8, 8)
    x = x.repeat_interleave(4, dim=2).repeat_interleave(4, dim=3).repeat(1, 3, 1, 1)
    return (x - 0.5) / 0.5, torch.tensor(bunch.target, dtype=torch.int64)


class _Images(torch.utils.data.Dataset):
    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"img": self.images[i], "label": self.labels[i]}


def load_data(partition_id: int, num_partitions: int, batch_size: int):
    """Load partition digits data (IID: equal contiguous shares, as flwr-datasets' IidPartitioner)."""
    images, labels = _digits_as_cifar()
    pool = len(labels) - CENTRAL_TEST
    share = torch.arange(pool).tensor_split(num_partitions)[partition_id]
    # Divide data on each node: 80% train, 20% test
    order = share[torch.randperm(len(share), generator=torch.Generator().manual_seed(SPLIT_SEED))]
    cut = len(order) - round(0.2 * len(order))
    train, test = order[:cut], order[cut:]
    shuffle = torch.Generator().manual_seed(SPLIT_SEED + 1 + partition_id)
    trainloader = DataLoader(
        _Images(images[train], labels[train]), batch_size=batch_size, shuffle=True, generator=shuffle
    )
    testloader = DataLoader(_Images(images[test], labels[test]), batch_size=batch_size)
    return trainloader, testloader


def load_centralized_dataset():
    """Load test set and return dataloader."""
    images, labels = _digits_as_cifar()
    return DataLoader(_Images(images[-CENTRAL_TEST:], labels[-CENTRAL_TEST:]), batch_size=128)


def train(net, trainloader, epochs, lr, device):
    """Train the model on the training set."""
    net.to(device)  # move model to GPU if available
    criterion = torch.nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    net.train()
    running_loss = 0.0
    for _ in range(epochs):
        for batch in trainloader:
            images = batch["img"].to(device)
            labels = batch["label"].to(device)
            optimizer.zero_grad()
            loss = criterion(net(images), labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
    avg_trainloss = running_loss / (epochs * len(trainloader))
    return avg_trainloss


def test(net, testloader, device):
    """Validate the model on the test set."""
    net.to(device)
    criterion = torch.nn.CrossEntropyLoss()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for batch in testloader:
            images = batch["img"].to(device)
            labels = batch["label"].to(device)
            outputs = net(images)
            loss += criterion(outputs, labels).item()
            correct += (torch.max(outputs.data, 1)[1] == labels).sum().item()
    accuracy = correct / len(testloader.dataset)
    loss = loss / len(testloader)
    return loss, accuracy
