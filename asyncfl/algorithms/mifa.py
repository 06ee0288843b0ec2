"""MIFA: Memory-augmented Impatient Federated Averaging (Gu et al., NeurIPS 2021; fedar.md ref. [10]).

The server keeps the latest update G_i of every client and moves along their average every round,
whether or not the client answered this time:

    G_i <- Delta_i                          for i in S_t (received this round)
    w_{t+1} = w_t + eta_g * 1/|E_t| * sum_{i in E_t} G_i      E_t = clients seen so far

MIFA's paper writes G_i = -Delta_i / eta and averages over all N clients, assuming every client
answers in the first round.  ``wait_for_all: true`` reproduces that: no update until every client
was seen once, then the average is over all N.  With a constant local learning rate (all asyncfl
runs) storing Delta_i instead of -Delta_i / eta gives the same step.  The default (false) averages
over the clients seen so far, FedAR's reading of MIFA without the first-round assumption.

This is also FL-FDMS's "Stale" baseline (fl-fdms.md section 5: dropped clients reuse their last
uploaded update).  Late updates (``late_updates: next_round``) replace the client's memory like
fresh ones: they are its latest.  Memory: one preallocated [N x d] :class:`UpdateStore`.
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
)
from asyncfl.algorithms.memory import UpdateStore
from asyncfl.lazy import torch


class MifaParams(AlgorithmParams):
    """MIFA (Gu et al. 2021): w <- w + eta_g * mean over clients of each one's latest Delta."""

    name: Literal["mifa"]
    modes: ClassVar[frozenset[str]] = frozenset({"sync"})
    order: ClassVar[int] = 2
    tags: ClassVar[AlgorithmTags] = AlgorithmTags(keeps_memory=True)
    stores_in_memory: ClassVar[bool] = True
    wait_for_all: bool = Field(
        default=False,
        description="true: no update until every client delivered once, then average over all N (original "
        "MIFA); false: average over the clients seen so far",
    )


class Mifa:
    def __init__(self, params: MifaParams, num_clients: int, like: torch.Tensor) -> None:
        self.params = params
        self.num_clients = num_clients
        self.store = UpdateStore(num_clients, like.numel(), like, params.memory)
        self.last_round = np.full(num_clients, -1, dtype=np.int64)  # round of each client's latest update

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate:
        for u in updates:
            self.store.put(u.client, u.delta)
            self.last_round[u.client] = context.version
        seen = self.store.clients()
        if not seen or (self.params.wait_for_all and len(seen) < self.num_clients):
            return Aggregate(global_params.clone())
        weight = 1.0 / len(seen)
        step = self.store.sum(seen) * weight
        return Aggregate(
            global_params + self.params.server_lr * step,
            weights={c: weight for c in seen},
            notes={c: {"inactive_rounds": int(context.version - self.last_round[c])} for c in seen},
        )

    def state_dict(self) -> dict:
        return {"store": self.store.state_dict(), "last_round": array_state(self.last_round)}

    def load_state_dict(self, state: dict) -> None:
        self.store.load_state_dict(state["store"])
        self.last_round = array_from_state(state["last_round"])


STRATEGY = Mifa
PARAMS = MifaParams
