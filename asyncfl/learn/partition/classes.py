"""``classes``: shards, as in FedAvg (McMahan et al. 2017) and used by FedAR / MIFA: the label-sorted
pool is cut into ``clients * per_client`` shards and each client gets ``per_client`` shards of
distinct classes."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from asyncfl.errors import ConfigError
from asyncfl.learn.partition._base import Partitioner
from asyncfl.sections import Section


class ClassesPartition(Section):
    """Shards: each client holds ``per_client`` classes (FedAR/MIFA use two)."""

    kind: Literal["classes"]
    per_client: int = Field(ge=1)


def split(labels: np.ndarray, n: int, spec: ClassesPartition, rng: np.random.Generator) -> list[np.ndarray]:
    """``n * per_client`` label-sorted shards dealt so that each client's shards differ in class.

    Shards are listed class by class (classes in random order, each class cut into as many
    shards as its share of ``n * per_client``: at most ``n`` when ``per_client <= classes``).
    Shard ``s`` goes to client ``owner[s % n]``, so the shards of one class -- consecutive in the
    list and at most ``n`` of them -- land on distinct clients.
    """
    per_client = spec.per_client
    classes = rng.permutation(np.unique(labels))
    check(spec, n, len(classes))
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


def check(spec: ClassesPartition, clients: int, classes: int) -> None:
    if spec.per_client > classes:
        raise ConfigError(
            f"data.partition.per_client ({spec.per_client}) exceeds the number of classes in the data set "
            f"({classes}): allowed 1 to {classes}"
        )


PARTITIONER = Partitioner(ClassesPartition, split, order=30, check=check)
