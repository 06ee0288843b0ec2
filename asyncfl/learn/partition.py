"""Split a pooled training set across clients (DESIGN.md section 6).

Every partitioner returns one sorted int64 index array per client; together they cover the pool
exactly once and no client is left empty.  Partitioners:

* ``iid``: a random permutation cut into near-equal parts.
* ``dirichlet``: for each class, the class's samples are split across clients by proportions
  drawn from Dirichlet(alpha) -- the label-skew scheme of Hsu, Qi & Brown 2019 ("Measuring the
  effects of non-identical data distribution for federated visual classification").
* ``classes``: shards, as in FedAvg (McMahan et al. 2017) and used by FedAR / MIFA: the label-sorted
  pool is cut into ``clients * per_client`` shards and each client gets ``per_client`` shards of
  distinct classes.
* ``clusters``: clients form contiguous groups; label classes are dealt round-robin into disjoint
  groups, and each cluster's clients draw iid from their label group (what FL-FDMS needs).
* ``isolated_class``: every sample of one class goes to clients ``0 .. clients-1`` only (dealt
  evenly); the other classes are partitioned over all clients by ``base``.  FedHist's fairness
  experiment (fedhist.txt, Fig. 5: "the tenth class ... only in a small fraction of slow clients").
"""

from __future__ import annotations

import numpy as np

from asyncfl.config.loading import ConfigError
from asyncfl.config.schema import (
    ClassesPartition,
    ClustersPartition,
    DirichletPartition,
    IidPartition,
    IsolatedClassPartition,
)

PartitionSpec = IidPartition | DirichletPartition | ClassesPartition | ClustersPartition | IsolatedClassPartition


def partition(labels: np.ndarray, num_clients: int, spec: PartitionSpec, rng: np.random.Generator) -> list[np.ndarray]:
    """Indices into ``labels`` for each of ``num_clients`` clients, following ``spec``."""
    labels = np.asarray(labels)
    if num_clients < 1:
        raise ConfigError(f"data.clients must be at least 1, got {num_clients}")
    if len(labels) < num_clients:
        raise ConfigError(
            f"data.clients ({num_clients}) is larger than the training pool ({len(labels)} samples): "
            "every client needs at least one sample. Lower data.clients or use a larger data set."
        )
    if spec.kind == "iid":
        parts = np.array_split(rng.permutation(len(labels)), num_clients)
    elif spec.kind == "dirichlet":
        parts = _dirichlet(labels, num_clients, spec.alpha, rng)
    elif spec.kind == "classes":
        parts = _shards(labels, num_clients, spec.per_client, rng)
    elif spec.kind == "clusters":
        parts = _clusters(labels, num_clients, spec.clusters, rng)
    elif spec.kind == "isolated_class":
        parts = _isolated_class(labels, num_clients, spec, rng)
    else:  # the schema's discriminated union makes this unreachable for validated scenarios
        raise ConfigError(f"unknown data.partition.kind {spec.kind!r}")
    parts = _fill_empty([np.asarray(p, dtype=np.int64) for p in parts], rng)
    return [np.sort(p) for p in parts]


def split_train_test(
    indices: np.ndarray, test_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Split one client's indices into (train, test), both sorted.

    The test share is ``round(n * test_fraction)``, at least one sample when ``test_fraction > 0``
    and ``n >= 2``, and never all of them: a client always keeps a training sample (a client with
    a single sample keeps it for training).
    """
    indices = np.asarray(indices, dtype=np.int64)
    n = len(indices)
    n_test = round(n * test_fraction)
    if test_fraction > 0 and n >= 2:
        n_test = max(n_test, 1)
    n_test = max(0, min(n_test, n - 1))
    shuffled = rng.permutation(indices)
    return np.sort(shuffled[n_test:]), np.sort(shuffled[:n_test])


def cluster_of_clients(num_clients: int, clusters: int) -> np.ndarray:
    """Cluster id of each client for the ``clusters`` partition: contiguous, near-equal blocks."""
    sizes = [len(block) for block in np.array_split(np.arange(num_clients), clusters)]
    return np.repeat(np.arange(clusters), sizes)


def _dirichlet(labels: np.ndarray, n: int, alpha: float, rng: np.random.Generator) -> list[np.ndarray]:
    """Per class: shuffle its samples and cut them by Dirichlet(alpha * 1_n) proportions."""
    parts: list[list[np.ndarray]] = [[] for _ in range(n)]
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        proportions = rng.dirichlet(np.full(n, alpha))
        cuts = (np.cumsum(proportions)[:-1] * len(idx)).astype(int)
        for k, chunk in enumerate(np.split(idx, cuts)):
            parts[k].append(chunk)
    return [np.concatenate(p) for p in parts]


def _shards(labels: np.ndarray, n: int, per_client: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``n * per_client`` label-sorted shards dealt so that each client's shards differ in class.

    Shards are listed class by class (classes in random order, each class cut into as many
    shards as its share of ``n * per_client``: at most ``n`` when ``per_client <= classes``).
    Shard ``s`` goes to client ``owner[s % n]``, so the shards of one class -- consecutive in the
    list and at most ``n`` of them -- land on distinct clients.
    """
    classes = rng.permutation(np.unique(labels))
    if per_client > len(classes):
        raise ConfigError(
            f"data.partition.per_client ({per_client}) exceeds the number of classes in the data set ({len(classes)})"
        )
    total = n * per_client
    if total < len(classes):
        # Too few shards for one class each: cut the label-sorted pool (clients then see more classes).
        order = rng.permutation(len(labels))
        order = order[np.argsort(labels[order], kind="stable")]
        shards = np.array_split(order, total)
    else:
        counts = np.full(len(classes), total // len(classes))
        counts[rng.permutation(len(classes))[: total % len(classes)]] += 1
        shards = []
        for c, m in zip(classes, counts, strict=True):
            shards += np.array_split(rng.permutation(np.flatnonzero(labels == c)), m)
    owner = rng.permutation(n)
    parts: list[list[np.ndarray]] = [[] for _ in range(n)]
    for s, shard in enumerate(shards):
        parts[owner[s % n]].append(shard)
    return [np.concatenate(p) for p in parts]


def _clusters(labels: np.ndarray, n: int, clusters: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Clients of one cluster share a label group; groups are disjoint when clusters <= classes."""
    if clusters > n:
        raise ConfigError(
            f"data.partition.clusters ({clusters}) is larger than data.clients ({n}): "
            "every cluster needs at least one client"
        )
    classes = np.unique(labels)
    groups = min(clusters, len(classes))  # more clusters than classes: label groups are reused
    group_of_client = cluster_of_clients(n, clusters) % groups
    parts: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * n
    for g in range(groups):
        pool = rng.permutation(np.flatnonzero(np.isin(labels, classes[g::groups])))
        members = np.flatnonzero(group_of_client == g)
        for k, chunk in zip(members, np.array_split(pool, len(members)), strict=True):
            parts[k] = chunk
    return parts


def _isolated_class(
    labels: np.ndarray, n: int, spec: IsolatedClassPartition, rng: np.random.Generator
) -> list[np.ndarray]:
    """Class ``spec.label`` dealt evenly to clients 0 .. spec.clients-1; the rest by ``spec.base``.

    The base partition fills every client itself, so the final empty-client repair never moves an
    isolated sample to another client.
    """
    if spec.clients > n:
        raise ConfigError(f"data.partition.clients ({spec.clients}) is larger than data.clients ({n})")
    isolated = np.flatnonzero(labels == spec.label)
    if len(isolated) < spec.clients:
        raise ConfigError(
            f"data.partition.label {spec.label} has {len(isolated)} training samples, fewer than "
            f"data.partition.clients ({spec.clients}): every isolated client must hold some"
        )
    rest = np.flatnonzero(labels != spec.label)
    parts = [rest[p] for p in partition(labels[rest], n, spec.base, rng)]
    for k, chunk in enumerate(np.array_split(rng.permutation(isolated), spec.clients)):
        parts[k] = np.concatenate([parts[k], chunk])
    return parts


def _fill_empty(parts: list[np.ndarray], rng: np.random.Generator) -> list[np.ndarray]:
    """Give every empty client one random sample taken from the currently largest client.

    Rare (tiny alpha, tiny classes); moving single samples keeps the drawn skew almost intact,
    while re-drawing until nobody is empty may never end for very small alpha.
    """
    parts = list(parts)
    for k in [k for k, p in enumerate(parts) if len(p) == 0]:
        donor = int(np.argmax([len(p) for p in parts]))
        pick = int(rng.integers(len(parts[donor])))
        parts[k] = parts[donor][pick : pick + 1]
        parts[donor] = np.delete(parts[donor], pick)
    return parts
