"""FL-FDMS: FL with Friend Discovery and Model Substitution (fl-fdms.md sections 2-4).

Aggregation, eq. (2) with substitutes: every one of the N clients contributes, a dropped client k
through the update of its discovered friend phi_t(k):
    w_{t+1} = w_t + eta_g / N * ( sum_{i in S_t} Delta_i + sum_{k not in S_t} Delta_{phi_t(k)} )
Similarity of co-active clients, eq. (9):  r_t^{ij} = (cos(Delta_i, Delta_j) + 1) / 2  in [0, 1]
Running mean over co-active rounds, eq. (10):
    R_t^{ij} = N^{ij} / (N^{ij} + 1) R_{t-1}^{ij} + r_t^{ij} / (N^{ij} + 1)   if i, j in S_t, else R_{t-1}^{ij}
Friend, section 4.1:  phi_t(k) = argmax_{i in S_t} R_t^{ki}  (ties: lowest id).  Our choices where the
paper is silent: only pairs with at least one co-active round count; a dropped client with none
(early rounds) takes the mean of the active updates, i.e. the plain FedAvg substitute of eq. (2); a
zero delta has cosine 0 with everything (r = 1/2).  Similarities are computed only between updates
trained from the same global model (with ``late_updates: next_round`` a late update is aggregated and
can serve as a substitute, but is not compared with fresh ones).

Candidate elimination, section 4.3 (``elimination.enabled``): client k keeps a candidate set C^k
(initially every other client); each round i leaves C^k when R^{k,best} - R^{ki} >= Theta_t, best =
argmax_{i in C^k} R^{ki}, with Theorem 2's Theta_t = scale * sqrt((2 ln(2 N^2 T B_max) - 2 ln p) /
(beta t)) + delta_f.  The pair (i, j) is then compared only while j in C^i or i in C^j, and friends are
looked up in C^k only.  Both counts, with and without elimination, are recorded per round.

With no client dropped, the update is FedAvg.  The "Dropout" baseline of the paper is ``fedavg``;
"Stale" (dropped clients reuse their own last update) is ``mifa``.  Memory: R and the co-activity
counts are [N x N] (no per-client model memory: substitutes are this round's updates).
"""

from __future__ import annotations

import math
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
from asyncfl.sections import Section


class Elimination(Section):
    """FL-FDMS's candidate-set elimination (fl-fdms.md section 4.3, Hoeffding race).

    Client i leaves client k's candidate set once R_k,best - R_k,i >= Theta_t with
    Theta_t = scale * sqrt((2 ln(2 N^2 T B_max) - 2 ln p) / (beta t)) + delta_f (Theorem 2).  The
    paper uses scale 1 ("Case 1") and 0.5 ("Case 2") and gives no values for beta, p, delta_f,
    B_max, T: the defaults below are our choice."""

    enabled: bool = Field(default=False, description="eliminate candidates (saves similarity computations)")
    scale: float = Field(default=1.0, gt=0, description="multiplies Theorem 2's threshold (paper: 1 or 0.5)")
    confidence: float = Field(default=0.1, gt=0, lt=1, description="p: failure probability of the race")
    beta: float = Field(default=0.5, gt=0, le=1, description="fraction of rounds any pair is co-active")
    delta_f: float = Field(default=0.0, ge=0, description="largest similarity gap among friends")
    horizon_rounds: int = Field(default=1000, ge=1, description="T of Theorem 2")
    max_friends: int | None = Field(default=None, ge=1, description="B_max of Theorem 2; null = N - 1")


class FlFdmsParams(AlgorithmParams):
    """FL-FDMS (fl-fdms.md section 4, eqs. 9-10): dropped clients take the update of their most
    similar active client ("friend"); the aggregate is the mean over all N clients."""

    name: Literal["fl_fdms"]
    modes: ClassVar[frozenset[str]] = frozenset({"sync"})
    order: ClassVar[int] = 6
    tags: ClassVar[AlgorithmTags] = AlgorithmTags(keeps_memory=True)
    elimination: Elimination = Elimination()


def normalized_cosine(a: torch.Tensor, rows: torch.Tensor) -> np.ndarray:
    """Eq. (9) between vector ``a`` and each row: (cos + 1) / 2, cos = 0 against a zero vector."""
    tiny = torch.finfo(a.dtype).tiny
    cos = (rows @ a) / (rows.norm(dim=1) * a.norm()).clamp_min(tiny)
    return ((cos.clamp(-1.0, 1.0) + 1.0) / 2.0).double().cpu().numpy()


def elimination_threshold(spec: Elimination, num_clients: int, t: int) -> float:
    """Theta_t of Theorem 2 (scaled), t the 1-based round."""
    friends = spec.max_friends if spec.max_friends is not None else max(num_clients - 1, 1)
    log_term = 2 * math.log(2 * num_clients**2 * spec.horizon_rounds * friends) - 2 * math.log(spec.confidence)
    return spec.scale * math.sqrt(max(log_term, 0.0) / (spec.beta * t)) + spec.delta_f


MEMORY = ("similarity", "co_active", "candidates", "substituted", "served", "mean_fallbacks")  # numpy state


class FlFdms:
    def __init__(self, params: FlFdmsParams, num_clients: int, like: torch.Tensor) -> None:
        self.params = params
        self.num_clients = num_clients
        n = num_clients
        self.similarity = np.zeros((n, n))  # R_t^{ij}, eq. (10)
        self.co_active = np.zeros((n, n), dtype=np.int64)  # N_t^{ij}
        self.candidates = ~np.eye(n, dtype=bool)  # C^k (row k), section 4.3
        self.substituted = np.zeros(n, dtype=np.int64)  # rounds in which client k was replaced
        self.served = np.zeros(n, dtype=np.int64)  # times client i's update replaced someone
        self.mean_fallbacks = np.zeros(n, dtype=np.int64)  # replaced by the mean (no information yet)
        self.log: list[dict] = []  # similarity computations per round

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate:
        pairs_all, pairs_computed = self._update_similarity(updates) if updates else (0, 0)
        self.log.append({
            "round": context.round,
            "active": len(updates),
            "pairs_all": pairs_all,
            "pairs_computed": pairs_computed,
            "candidates": int(self.candidates.sum()),
        })  # fmt: skip
        if not updates:
            return Aggregate(global_params.clone())
        friends = self._friends([u.client for u in updates])
        weights = self._weights(updates, friends)
        step = weighted_sum(updates, weights)
        if self.params.elimination.enabled:
            self._eliminate(elimination_threshold(self.params.elimination, self.num_clients, context.round))
        return Aggregate(
            global_params + self.params.server_lr * step,
            weights={**{k: 0.0 for k in friends}, **{u.client: w for u, w in zip(updates, weights)}},
            notes=self._notes(updates, friends),
        )

    def _update_similarity(self, updates: Sequence[Update]) -> tuple[int, int]:
        """Eqs. (9)-(10) for co-active pairs from the same base model that are still candidates."""
        pairs_all = pairs_computed = 0
        for a, ua in enumerate(updates):
            peers = [ub for ub in updates[a + 1 :] if ub.base_version == ua.base_version]
            pairs_all += len(peers)
            i = ua.client
            peers = [ub for ub in peers if self.candidates[i, ub.client] or self.candidates[ub.client, i]]
            if not peers:
                continue
            pairs_computed += len(peers)
            r = normalized_cosine(ua.delta, torch.stack([ub.delta for ub in peers]))
            js = np.array([ub.client for ub in peers])
            n = self.co_active[i, js]
            value = (n * self.similarity[i, js] + r) / (n + 1)
            self.similarity[i, js] = self.similarity[js, i] = value
            self.co_active[i, js] += 1
            self.co_active[js, i] += 1
        return pairs_all, pairs_computed

    def _friends(self, active: list[int]) -> dict[int, int | None]:
        """phi_t(k) for every dropped client k (None: no information, take the mean)."""
        active_ids, present = np.array(sorted(active)), set(active)
        friends: dict[int, int | None] = {}
        for k in range(self.num_clients):
            if k in present:
                continue
            pool = active_ids[self.candidates[k, active_ids] & (self.co_active[k, active_ids] > 0)]
            friends[k] = int(pool[np.argmax(self.similarity[k, pool])]) if len(pool) else None
        return friends

    def _weights(self, updates: Sequence[Update], friends: dict[int, int | None]) -> list[float]:
        """Each active update's share of the N slots: its own, those it fills, and 1/|S| of each mean fill."""
        n, s = self.num_clients, len(updates)
        mean_fills = sum(1 for f in friends.values() if f is None)
        fills = {u.client: 0 for u in updates}
        for k, f in friends.items():
            self.substituted[k] += 1
            if f is None:
                self.mean_fallbacks[k] += 1
            else:
                fills[f] += 1
                self.served[f] += 1
        return [(1 + fills[u.client] + mean_fills / s) / n for u in updates]

    def _eliminate(self, threshold: float) -> None:
        """Section 4.3: drop i from C^k when R^{k,best} - R^{ki} >= Theta_t (pairs with information only)."""
        known = self.candidates & (self.co_active > 0)
        best = np.where(known, self.similarity, -np.inf).max(axis=1, initial=-np.inf)
        self.candidates &= ~(known & (best[:, None] - self.similarity >= threshold))

    def _notes(self, updates: Sequence[Update], friends: dict[int, int | None]) -> dict[int, dict]:
        notes: dict[int, dict] = {u.client: {"substitute": "", "similarity": math.nan} for u in updates}
        for k, f in friends.items():
            notes[k] = {
                "substitute": "mean" if f is None else f,
                "similarity": math.nan if f is None else float(self.similarity[k, f]),
            }
        return notes

    def state_dict(self) -> dict:
        state: dict = {name: array_state(getattr(self, name)) for name in MEMORY}
        return {**state, "log": [dict(row) for row in self.log]}

    def load_state_dict(self, state: dict) -> None:
        for name in MEMORY:
            setattr(self, name, array_from_state(state[name]))
        self.log = [dict(row) for row in state["log"]]

    def extra_outputs(self) -> dict[str, list[dict]]:
        n = self.num_clients
        matrix = np.where(self.co_active > 0, self.similarity, np.nan)
        return {
            "fl_fdms_similarity.csv": [
                {"client": i, **{str(j): float(matrix[i, j]) for j in range(n)}} for i in range(n)
            ],
            "fl_fdms_substitutions.csv": [
                {
                    "client": k,
                    "substituted": int(self.substituted[k]),
                    "by_mean": int(self.mean_fallbacks[k]),
                    "served_as_substitute": int(self.served[k]),
                }
                for k in range(n)
            ],
            "fl_fdms_similarity_computations.csv": self.log,
        }


STRATEGY = FlFdms
PARAMS = FlFdmsParams
