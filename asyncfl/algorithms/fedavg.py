"""FedAvg (McMahan et al., 2017) with a server learning rate.

    w_{t+1} = w_t + eta_g * sum_{i in S_t} a_i Delta_i,   a_i = 1/|S_t|  (uniform)
                                                          a_i = n_i / sum_j n_j  (samples)

S_t is the set of updates that reached the server in round t.  No update => no change.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import torch

from asyncfl.algorithms.base import Aggregate, Context, Update, weighted_sum
from asyncfl.config.sync_algorithms import FedAvgParams


def fedavg_weights(updates: Sequence[Update], weighting: str) -> list[float]:
    """The a_i of the docstring above."""
    if weighting == "samples":
        total = sum(u.num_samples for u in updates)
        return [u.num_samples / total for u in updates]
    return [1.0 / len(updates)] * len(updates)


class FedAvg:
    name = "fedavg"
    modes: ClassVar[frozenset[str]] = frozenset({"sync"})

    def __init__(self, params: FedAvgParams, num_clients: int, like: torch.Tensor) -> None:
        self.params = params
        self.num_clients = num_clients

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate:
        if not updates:
            return Aggregate(global_params.clone())
        weights = fedavg_weights(updates, self.params.weighting)
        step = weighted_sum(updates, weights)
        return Aggregate(
            global_params + self.params.server_lr * step,
            weights={u.client: w for u, w in zip(updates, weights)},
        )


STRATEGY = FedAvg
