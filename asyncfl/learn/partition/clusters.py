"""``clusters``: clients form contiguous groups; label classes are dealt round-robin into disjoint
groups, and each cluster's clients draw iid from their label group (what FL-FDMS needs)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from asyncfl.errors import ConfigError
from asyncfl.learn.partition._base import Partitioner
from asyncfl.sections import Section


class ClustersPartition(Section):
    """Clients in one cluster share a label distribution (FL-FDMS); labels split across clusters."""

    kind: Literal["clusters"]
    clusters: int = Field(ge=1)


def cluster_of_clients(num_clients: int, clusters: int) -> np.ndarray:
    """Cluster id of each client for the ``clusters`` partition: contiguous, near-equal blocks."""
    sizes = [len(block) for block in np.array_split(np.arange(num_clients), clusters)]
    return np.repeat(np.arange(clusters), sizes)


def split(labels: np.ndarray, n: int, spec: ClustersPartition, rng: np.random.Generator) -> list[np.ndarray]:
    """Clients of one cluster share a label group; groups are disjoint when clusters <= classes."""
    clusters = spec.clusters
    classes = np.unique(labels)
    check(spec, n, len(classes))
    groups = min(clusters, len(classes))  # more clusters than classes: label groups are reused
    group_of_client = cluster_of_clients(n, clusters) % groups
    parts: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * n
    for g in range(groups):
        pool = rng.permutation(np.flatnonzero(np.isin(labels, classes[g::groups])))
        members = np.flatnonzero(group_of_client == g)
        for k, chunk in zip(members, np.array_split(pool, len(members)), strict=True):
            parts[k] = chunk
    return parts


def check(spec: ClustersPartition, clients: int, classes: int) -> None:
    if spec.clusters > clients:
        raise ConfigError(
            f"data.partition.clusters ({spec.clusters}) is larger than data.clients ({clients}): "
            "every cluster needs at least one client"
        )


PARTITIONER = Partitioner(ClustersPartition, split, order=40, check=check)
