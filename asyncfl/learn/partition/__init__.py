"""Split a pooled training set across clients (docs/explanation/architecture.md section 6).

One module per ``data.partition.kind`` (``iid``, ``dirichlet``, ``classes``, ``clusters``,
``isolated_class``, ``file``): its section and its function, registered as ``PARTITIONER`` (see
:mod:`asyncfl.registry`).  The schema's ``data.partition`` tagged union is built from this
registry.  Every partitioner returns one int64 index array per client; together they cover the pool
exactly once, and :func:`partition` sorts them and leaves no client empty.
"""

from __future__ import annotations

from typing import Annotated, Any, Union

import numpy as np
from pydantic import Field

from asyncfl.errors import ConfigError
from asyncfl.learn.partition._base import Partitioner
from asyncfl.learn.partition.clusters import cluster_of_clients
from asyncfl.registry import Registry, discover

REGISTRY: Registry = discover(__name__, __path__, "PARTITIONER", entry_type=Partitioner, axis="data.partition.kind")


def partition_union() -> Any:
    """``data.partition``: every registered partitioner's section, a pydantic tagged union on ``kind``."""
    return Annotated[Union[tuple(p.section for p in REGISTRY.values())], Field(discriminator="kind")]  # type: ignore[misc]


Partition = partition_union()
# those that may be the base of another (isolated_class's base); fixed at import: a registered
# partitioner joins data.partition, but not this union
BasePartition = Annotated[
    Union[tuple(p.section for p in REGISTRY.values() if p.nests)],  # type: ignore[misc]
    Field(discriminator="kind"),
]
for _entry in REGISTRY.values():  # sections that refer to BasePartition (isolated_class's base) are completed here
    _entry.section.model_rebuild(_types_namespace={"BasePartition": BasePartition})


def partition(labels: np.ndarray, num_clients: int, spec: Any, rng: np.random.Generator) -> list[np.ndarray]:
    """Indices into ``labels`` for each of ``num_clients`` clients, following the section ``spec``."""
    labels = np.asarray(labels)
    if num_clients < 1:
        raise ConfigError(f"data.clients must be at least 1, got {num_clients}")
    if len(labels) < num_clients:
        raise ConfigError(
            f"data.clients ({num_clients}) is larger than the training pool ({len(labels)} samples): "
            "every client needs at least one sample. Lower data.clients or use a larger data set."
        )
    if spec.kind not in REGISTRY:  # the schema's discriminated union makes this unreachable for validated scenarios
        raise ConfigError(f"unknown data.partition.kind {spec.kind!r}")
    parts = REGISTRY[spec.kind].split(labels, num_clients, spec, rng)
    parts = _fill_empty([np.asarray(p, dtype=np.int64) for p in parts], rng)
    return [np.sort(p) for p in parts]


def regroup(raw: Any, spec: Any) -> Any:
    """``raw`` (a :class:`~asyncfl.learn.datasets.RawData`) with the training pool and test set that the
    partition ``spec`` brings itself (a ``file`` partition with its own test list), else ``raw`` unchanged;
    :func:`partition` then deals that pool."""
    entry = REGISTRY.get(spec.kind)
    return entry.regroup(raw, spec) if entry is not None and entry.regroup is not None else raw


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


__all__ = [
    "BasePartition",
    "Partition",
    "Partitioner",
    "REGISTRY",
    "cluster_of_clients",
    "partition",
    "partition_union",
    "regroup",
    "split_train_test",
]
