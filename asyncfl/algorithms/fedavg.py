"""FedAvg (McMahan et al., 2017) with a server learning rate.

    w_{t+1} = w_t + eta_g * sum_{i in S_t} a_i Delta_i,   a_i = 1/|S_t|  (uniform)
                                                          a_i = n_i / sum_j n_j  (samples)
                                                          a_i = 1/N  (all_clients)

S_t is the set of updates that reached the server in round t, N the population.  ``all_clients``
is FedAU's "average all" baseline (fedau-slides.md, Algorithm 1 with omega = 1): the sum of the
received updates divided by N, so rounds with few participants move the model less.  Late updates
(``server.late_updates: next_round``) are averaged like fresh ones.  No update => no change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from asyncfl.algorithms.base import Aggregate, AlgorithmParams, Context, Memoryless, Update, weighted_sum
from asyncfl.lazy import torch


class FedAvgParams(AlgorithmParams):
    """FedAvg: w <- w + eta_g * sum_i a_i Delta_i over the received deltas.

    ``all_clients`` is FedAU's "average all" baseline: a_i = 1/N, so the step shrinks when few
    clients participate (fedau-slides.md, Algorithm 1 with omega = 1)."""

    name: Literal["fedavg"]
    modes: ClassVar[frozenset[str]] = frozenset({"sync"})
    order: ClassVar[int] = 0
    weighting: Literal["uniform", "samples", "all_clients"] = Field(
        default="uniform",
        description="uniform: mean of received; samples: weighted by sample counts; all_clients: sum / N",
    )


def fedavg_weights(updates: Sequence[Update], weighting: str, num_clients: int) -> list[float]:
    """The a_i of the docstring above."""
    if weighting == "all_clients":
        return [1.0 / num_clients] * len(updates)
    if weighting == "samples":
        total = sum(u.num_samples for u in updates)
        return [u.num_samples / total for u in updates]
    return [1.0 / len(updates)] * len(updates)


class FedAvg(Memoryless):
    def __init__(self, params: FedAvgParams, num_clients: int, like: torch.Tensor) -> None:
        self.params = params
        self.num_clients = num_clients

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate:
        if not updates:
            return Aggregate(global_params.clone())
        weights = fedavg_weights(updates, self.params.weighting, self.num_clients)
        step = weighted_sum(updates, weights)
        return Aggregate(
            global_params + self.params.server_lr * step,
            weights={u.client: w for u, w in zip(updates, weights)},
        )


STRATEGY = FedAvg
PARAMS = FedAvgParams
