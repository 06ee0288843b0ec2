"""``iid``: a random permutation cut into near-equal parts."""

from __future__ import annotations

from typing import Literal

import numpy as np

from asyncfl.learn.partition._base import Partitioner
from asyncfl.sections import Section


class IidPartition(Section):
    """Every client draws uniformly from the pooled training data."""

    kind: Literal["iid"] = "iid"


def split(labels: np.ndarray, n: int, spec: IidPartition, rng: np.random.Generator) -> list[np.ndarray]:
    return np.array_split(rng.permutation(len(labels)), n)


PARTITIONER = Partitioner(IidPartition, split, order=10)
