"""FedAU: FedAvg with adaptive weights for unknown participation statistics (Wang & Ji;
fedau-slides.md, Algorithms 1 and 2).

Aggregation, Algorithm 1 line 13 (Delta_i = 0 for clients that did not participate):
    w_{t+1} = w_t + eta_g / N * sum_{i in S_t} omega_t^i Delta_i
Weights, Algorithm 2 (per client, omega_t uses the participation record I_tau for tau < t only):
    M = 0, S' = 0, omega_0 = 1
    for t = 1, 2, ...:  S' <- S' + 1
        if I_{t-1} = 1 or S' = K:   S <- S'                      (an interval ends, possibly cut off at K)
                                    omega_t = S if M = 0 else (M omega_{t-1} + S) / (M + 1)
                                    M <- M + 1;  S' <- 0
        else:                       omega_t = omega_{t-1}
so omega is the running mean of the recorded intervals: an estimate of 1/p_i for Bernoulli(p_i)
participation, and omega <= K.  K = ``cutoff`` (paper's experiments: K = 50; null = K -> infinity).
K = 1 makes every interval 1 (omega = 1: the "average all" baseline).  With every client present
every round each interval is 1, omega = 1 and the update is FedAvg.

I_t = 1 when an update from the client reaches the server in round t; a late update (``late_updates:
next_round``) counts for the round it arrives in.  The state update runs after the aggregation, so
round t's weights never see round t's participation (the slides' "history up to t - 1").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from asyncfl.algorithms.base import (
    Aggregate,
    AlgorithmParams,
    AlgorithmTags,
    Context,
    Update,
    array_from_state,
    array_state,
    weighted_sum,
)
from asyncfl.lazy import torch


class FedAuParams(AlgorithmParams):
    """FedAU (fedau-slides.md, Algorithms 1-2): omega_i = online mean of participation intervals,
    each interval cut off at K; w <- w + eta_g / N * sum_{i in S} omega_i Delta_i."""

    name: Literal["fedau"]
    modes: ClassVar[frozenset[str]] = frozenset({"sync"})
    order: ClassVar[int] = 5
    tags: ClassVar[AlgorithmTags] = AlgorithmTags(keeps_memory=True)
    cutoff: int | None = Field(
        default=50, ge=1, description="interval cutoff K (paper's experiments: 50); null = K -> infinity"
    )


def advance_weights(
    omega: np.ndarray, count: np.ndarray, open_interval: np.ndarray, participated: np.ndarray, cutoff: int | None
) -> None:
    """One step of Algorithm 2 for every client, in place: from omega_t (and I_t) to omega_{t+1}."""
    open_interval += 1
    closes = participated | (open_interval == cutoff) if cutoff is not None else participated.copy()
    first = closes & (count == 0)
    later = closes & (count > 0)
    omega[first] = open_interval[first]
    omega[later] = (count[later] * omega[later] + open_interval[later]) / (count[later] + 1)
    count[closes] += 1
    open_interval[closes] = 0


class FedAU:
    def __init__(self, params: FedAuParams, num_clients: int, like: torch.Tensor) -> None:
        self.params = params
        self.num_clients = num_clients
        self.omega = np.ones(num_clients)  # omega_t^n for the current round t
        self.count = np.zeros(num_clients, dtype=np.int64)  # M_n: intervals recorded
        self.open_interval = np.zeros(num_clients, dtype=np.int64)  # S_n^diamond: rounds since the last close

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate:
        omega = self.omega.copy()
        participated = np.zeros(self.num_clients, dtype=bool)
        participated[[u.client for u in updates]] = True
        advance_weights(self.omega, self.count, self.open_interval, participated, self.params.cutoff)
        if not updates:
            return Aggregate(global_params.clone())
        weights = [float(omega[u.client]) / self.num_clients for u in updates]
        step = weighted_sum(updates, weights)
        return Aggregate(
            global_params + self.params.server_lr * step,
            weights={u.client: w for u, w in zip(updates, weights)},
            notes={u.client: {"omega": float(omega[u.client]), "staleness": u.staleness} for u in updates},
        )

    def state_dict(self) -> dict:
        return {name: array_state(getattr(self, name)) for name in ("omega", "count", "open_interval")}

    def load_state_dict(self, state: dict) -> None:
        self.omega, self.count = array_from_state(state["omega"]), array_from_state(state["count"])
        self.open_interval = array_from_state(state["open_interval"])


STRATEGY = FedAU
PARAMS = FedAuParams
