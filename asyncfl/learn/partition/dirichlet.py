"""``dirichlet``: for each class, the class's samples are split across clients by proportions drawn
from Dirichlet(alpha) -- the label-skew scheme of Hsu, Qi & Brown 2019 ("Measuring the effects of
non-identical data distribution for federated visual classification")."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from asyncfl.learn.partition._base import Partitioner
from asyncfl.sections import Section


class DirichletPartition(Section):
    """Label proportions of each client ~ Dirichlet(alpha); small alpha = strongly non-IID."""

    kind: Literal["dirichlet"]
    alpha: float = Field(gt=0, description="Dirichlet concentration")


def split(labels: np.ndarray, n: int, spec: DirichletPartition, rng: np.random.Generator) -> list[np.ndarray]:
    """Per class: shuffle its samples and cut them by Dirichlet(alpha * 1_n) proportions."""
    parts: list[list[np.ndarray]] = [[] for _ in range(n)]
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        proportions = rng.dirichlet(np.full(n, spec.alpha))
        cuts = (np.cumsum(proportions)[:-1] * len(idx)).astype(int)
        for k, chunk in enumerate(np.split(idx, cuts)):
            parts[k].append(chunk)
    return [np.concatenate(p) for p in parts]


PARTITIONER = Partitioner(DirichletPartition, split, order=20)
