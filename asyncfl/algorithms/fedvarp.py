"""FedVARP: variance reduction for partial participation (Jhunjhunwala et al., UAI 2022; fedar.md
ref. [14]; docs/explanation/architecture.md section 5).

The server keeps a memory y_i of each client's latest update (y_i = 0 before the first one):

    v_t     = 1/N sum_{j=1..N} y_j  +  1/|S_t| sum_{i in S_t} (Delta_i - y_i)     (SAGA-style estimate)
    y_i    <- Delta_i                                                              for i in S_t
    w_{t+1} = w_t + eta_g * v_t

No update when S_t is empty.  In the first round (y = 0) v is the FedAvg mean over participants; with
every client participating every round v is the plain mean, i.e. FedAvg.  Effective weights: a
participant gets 1/|S| on its fresh delta; the stale memory of client j enters with 1/N - 1/|S|
(j in S) or 1/N (j not in S), written to weights.csv as ``memory_weight``.  Late updates
(``late_updates: next_round``) are treated as this round's participants: FedVARP has no notion of
staleness beyond the memory itself.  Memory: one preallocated [N x d] :class:`UpdateStore`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from asyncfl.algorithms.base import Aggregate, AlgorithmParams, AlgorithmTags, Context, Update
from asyncfl.algorithms.memory import UpdateStore
from asyncfl.lazy import torch


class FedVarpParams(AlgorithmParams):
    """FedVARP (Jhunjhunwala et al. 2022): v = mean_all(y) + mean_{i in S}(Delta_i - y_i); y_i <- Delta_i."""

    name: Literal["fedvarp"]
    modes: ClassVar[frozenset[str]] = frozenset({"sync"})
    order: ClassVar[int] = 3
    tags: ClassVar[AlgorithmTags] = AlgorithmTags(keeps_memory=True)
    stores_in_memory: ClassVar[bool] = True


def fedvarp_direction(
    memory_sum: torch.Tensor, num_clients: int, deltas: Sequence[torch.Tensor], memories: Sequence[torch.Tensor]
) -> torch.Tensor:
    """v = memory_sum / N + mean_i (delta_i - y_i)."""
    correction = torch.zeros_like(memory_sum)
    for delta, y in zip(deltas, memories):
        correction.add_(delta - y)
    return memory_sum / num_clients + correction / len(deltas)


class FedVarp:
    def __init__(self, params: FedVarpParams, num_clients: int, like: torch.Tensor) -> None:
        self.params = params
        self.num_clients = num_clients
        self.store = UpdateStore(num_clients, like.numel(), like, params.memory)

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate:
        if not updates:
            return Aggregate(global_params.clone())
        memories = [self.store.get(u.client) for u in updates]
        v = fedvarp_direction(self.store.sum(), self.num_clients, [u.delta for u in updates], memories)
        for u in updates:
            self.store.put(u.client, u.delta)
        fresh = 1.0 / len(updates)
        received = {u.client for u in updates}
        weights = {u.client: fresh for u in updates}
        notes = {
            c: {"memory_weight": 1.0 / self.num_clients - (fresh if c in received else 0.0)}
            for c in self.store.clients()
        }
        for c in notes:
            weights.setdefault(c, 0.0)
        return Aggregate(global_params + self.params.server_lr * v, weights=weights, notes=notes)

    def state_dict(self) -> dict:
        return {"store": self.store.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.store.load_state_dict(state["store"])


STRATEGY = FedVarp
PARAMS = FedVarpParams
