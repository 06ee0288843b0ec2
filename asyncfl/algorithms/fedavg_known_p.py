"""FedAvg with known participation probabilities: the importance-weighted baseline.

    w_{t+1} = w_t + eta_g / N * sum_{i in S_t} Delta_i / p_i

This is FedAR's "FedAvg-IS" baseline (fedar.md section 6.1: "local updates are weighted by clients'
availability probabilities") and FedAU's "known participation statistics" (fedau-slides.md: omega_n
= 1/p_n makes the objective consistent with f(x) = 1/N sum_n F_n(x), Theorem 1).  p_i is not known
to a real server: here it comes from the scenario's availability model through
``Context.participation``.  A run whose model has no p_i (traces) is refused.  With every client
available (p_i = 1) every round, this is FedAvg.  Late updates (``late_updates: next_round``) count
like fresh ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar, Literal

from asyncfl.algorithms.base import Aggregate, AlgorithmParams, Context, Memoryless, Update, weighted_sum
from asyncfl.lazy import torch


class FedAvgKnownPParams(AlgorithmParams):
    """FedAvg with known participation probabilities (FedAR's FedAvg-IS, FedAU's "known participation
    statistics"): w <- w + eta_g / N * sum_i Delta_i / p_i, p_i from the availability model."""

    name: Literal["fedavg_known_p"]
    modes: ClassVar[frozenset[str]] = frozenset({"sync"})
    order: ClassVar[int] = 1


def known_p_weights(clients: Sequence[int], participation: Sequence[float], num_clients: int) -> list[float]:
    """1 / (N p_i) for each client, refusing probabilities a real model could not have produced."""
    weights = []
    for client in clients:
        p = participation[client]
        if not (p > 0 and math.isfinite(p)):
            raise ValueError(
                f"fedavg_known_p needs a participation probability p_i > 0 for every client; client {client} "
                f"has {p!r} (availability traces have none)"
            )
        weights.append(1.0 / (num_clients * p))
    return weights


class FedAvgKnownP(Memoryless):
    def __init__(self, params: FedAvgKnownPParams, num_clients: int, like: torch.Tensor) -> None:
        self.params = params
        self.num_clients = num_clients

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate:
        if context.participation is None:
            raise ValueError("fedavg_known_p needs the participation probabilities (Context.participation is None)")
        if not updates:
            return Aggregate(global_params.clone())
        weights = known_p_weights([u.client for u in updates], context.participation, self.num_clients)
        step = weighted_sum(updates, weights)
        return Aggregate(
            global_params + self.params.server_lr * step,
            weights={u.client: w for u, w in zip(updates, weights)},
            notes={u.client: {"p": context.participation[u.client]} for u in updates},
        )


STRATEGY = FedAvgKnownP
PARAMS = FedAvgKnownPParams
