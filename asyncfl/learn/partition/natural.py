"""``natural``: the data set's own clients (LEAF's Shakespeare roles, FedProx's Synthetic clients), kept as
they are; the default ``data.partition`` of a data set registered with ``natural=True``.

Natural clients never reach :func:`asyncfl.learn.partition.partition` (the federation takes them from the
data set); a pooled data set asked for them is refused when the scenario is validated, and here."""

from __future__ import annotations

from typing import Literal

import numpy as np

from asyncfl.errors import ConfigError
from asyncfl.learn.partition._base import Partitioner
from asyncfl.sections import Section


class NaturalPartition(Section):
    """Each client is one of the data set's own (a play's speaking role in shakespeare)."""

    kind: Literal["natural"]


def split(labels: np.ndarray, n: int, spec: NaturalPartition, rng: np.random.Generator) -> list[np.ndarray]:
    raise ConfigError(
        "data.partition.kind natural needs a data set with clients of its own (shakespeare, synthetic); "
        "this one is one pool: use iid, dirichlet, classes, clusters or isolated_class"
    )


PARTITIONER = Partitioner(NaturalPartition, split, order=5, nests=False)
