"""FedAR: local update Approximation and Rectification (Jiang et al.; fedar.md section 4, Algorithm 1).

Approximation, eq. (4): the server keeps the latest update of every client,
    G_i[t] = (w_t - w^i_{t,K}) / eta_t = -Delta_i / eta_i   if i in A(t) (received this round),
    G_i[t] = G_i[t-1]                                      otherwise;   G[0] = 0.
Inactive rounds, eq. (5): tau(i, t) = 0 if i in A(t), else tau(i, t-1) + 1.
Rectification, eq. (6): psi_{i,t} = 0 if tau(i, t) >= g(t), else min((tau(i, t) + 1)^rho, psi_max),
    so psi = 1 for a client received this round (tau = 0) and psi <= psi_max = 2.
Global update, eq. (7) and Algorithm 1 lines 3, 11-12, 15:
    E_t = clients ever received,  N_t = |E_t| - |{i in E_t : psi_{i,t} = 0}|,
    w_{t+1} = w_t - eta_t / N_t * sum_{i in E_t} psi_{i,t} G_i[t]
            = w_t + eta_g * eta_t / N_t * sum_i psi_{i,t} Delta_i / eta_i.
eta_t is the local learning rate of this round (of the last update received when none arrived); with
asyncfl's constant local rate eta_t / eta_i = 1.  eta_g (``server_lr``, default 1) is asyncfl's usual
server rate; the paper has none (eta_g = 1).
Step ratio (ours, ``record_step_ratio``): MIFA moves by the plain mean of the stored updates, FedAR by
sum(psi) / N_t times a psi-weighted mean, so sum_{i in E_t} psi_{i,t} / N_t (>= 1 when nobody is
excluded) is how much further FedAR steps; a MIFA control with server_lr = its mean separates step size
from weighting.

g(t), ``cutoff``: ``linear`` t0 + t/b (Theorem 1, convex), ``sqrt`` c max(sqrt t, sqrt t0) (Theorem 2,
non-convex) or ``none``.  The paper gives no constants: t0 = 20, b = 4 (linear) is our choice.  t is
Algorithm 1's 1-based round, t = context.round.  Algorithm 1 decrements N_t for every client with
psi = 0; a client never received has G_i = 0 and is not in E_t, so only clients of E_t are counted
(otherwise N_t could turn negative).  N_t = 0 (nobody contributes) leaves the model unchanged.

With every client received every round, tau = 0, psi = 1 and N_t = N: FedAvg.  Late updates
(``late_updates: next_round``) reset tau to 0 like fresh ones: eq. (4) replaces G_i whenever the
server obtains client i's update.  Memory: one preallocated [N x d] :class:`UpdateStore` holding
Delta_i / eta_i (= -G_i).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal

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
from asyncfl.sections import OPT_IN, Section


class LinearCutoff(Section):
    """g(t) = t0 + t / b (FedAR Theorem 1, convex analysis: t0 > 0, b > 2).  t0 = 20, b = 4 are our
    choice: the paper gives no values."""

    kind: Literal["linear"]
    t0: float = Field(default=20.0, gt=0, description="rounds of inactivity tolerated at the start")
    b: float = Field(default=4.0, gt=2, description="g grows by one every b rounds")


class SqrtCutoff(Section):
    """g(t) = c * max(sqrt(t), sqrt(t0)) (FedAR Theorem 2, non-convex analysis).  The paper's c depends
    on unknown constants (L, beta, lambda, K, N); c = 4 and t0 = 25 are our choice (g = 20 at first)."""

    kind: Literal["sqrt"]
    c: float = Field(default=4.0, gt=0)
    t0: float = Field(default=25.0, gt=0)


class NoCutoff(Section):
    """g(t) = infinity: no client is ever excluded."""

    kind: Literal["none"]


Cutoff = Annotated[LinearCutoff | SqrtCutoff | NoCutoff, Field(discriminator="kind")]


class FedArParams(AlgorithmParams):
    """FedAR (fedar.md section 4, eqs. 4-7): psi-weighted latest updates of every contributing client."""

    name: Literal["fedar"]
    modes: ClassVar[frozenset[str]] = frozenset({"sync"})
    order: ClassVar[int] = 4
    tags: ClassVar[AlgorithmTags] = AlgorithmTags(keeps_memory=True)
    stores_in_memory: ClassVar[bool] = True
    rho: float = Field(default=0.1, ge=0, le=1, description="psi = min((tau + 1)^rho, psi_max); paper section 6")
    psi_max: float = Field(default=2.0, ge=1, description="cap of psi; the paper fixes 2 for its convergence proof")
    cutoff: Cutoff = Field(
        default=LinearCutoff(kind="linear"),
        description="g(t): clients inactive for g(t) rounds or more get psi = 0 and leave N_t",
    )
    record_step_ratio: bool = Field(
        default=False,
        json_schema_extra=OPT_IN,
        description="true: fedar_exclusions.csv also lists sum(psi) and step_ratio = sum(psi) / N_t per round, "
        "FedAR's step relative to MIFA's mean over the same clients (to scale a MIFA control's server_lr)",
    )


def cutoff_rounds(spec: Cutoff, t: int) -> float:
    """g(t) of eq. (6) at the 1-based round t."""
    if spec.kind == "linear":
        return spec.t0 + t / spec.b
    if spec.kind == "sqrt":
        return spec.c * max(math.sqrt(t), math.sqrt(spec.t0))
    return math.inf


def psi(tau: np.ndarray, g: float, rho: float, psi_max: float) -> np.ndarray:
    """Eq. (6): 0 when tau >= g(t), else min((tau + 1)^rho, psi_max)."""
    weights = np.minimum((tau + 1.0) ** rho, psi_max)
    return np.where(tau >= g, 0.0, weights)


class FedAR:
    def __init__(self, params: FedArParams, num_clients: int, like: torch.Tensor) -> None:
        self.params = params
        self.num_clients = num_clients
        self.store = UpdateStore(num_clients, like.numel(), like, params.memory)  # Delta_i / eta_i
        self.tau = np.zeros(num_clients, dtype=np.int64)  # inactive rounds, eq. (5)
        self.ever = np.zeros(num_clients, dtype=bool)  # the set E of Algorithm 1
        self.lr = math.nan  # eta_t: local learning rate of the latest update
        self.log: list[dict] = []  # per-round g(t), N_t and excluded clients (fedar_exclusions.csv)

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate:
        self.tau += 1
        for u in updates:
            self.store.put(u.client, u.delta / u.lr)
            self.tau[u.client] = 0
            self.ever[u.client] = True
            self.lr = u.lr
        g = cutoff_rounds(self.params.cutoff, context.round)
        weights = psi(self.tau.astype(np.float64), g, self.params.rho, self.params.psi_max) * self.ever
        members = np.flatnonzero(self.ever)
        excluded = [int(c) for c in members if weights[c] == 0.0]
        n_t = len(members) - len(excluded)
        row = {"round": context.round, "g": g, "n_t": n_t, "excluded": " ".join(map(str, excluded))}
        if self.params.record_step_ratio:  # opt-in columns: existing runs keep their file byte for byte
            psi_sum = float(weights[members].sum())
            row |= {"psi_sum": psi_sum, "step_ratio": psi_sum / n_t if n_t else math.nan}
        self.log.append(row)
        if n_t == 0:
            return Aggregate(global_params.clone())
        contributing = [int(c) for c in members if weights[c] > 0.0]
        scale = self.params.server_lr * self.lr / n_t
        step = self.store.sum(contributing, [float(weights[c]) for c in contributing])
        return Aggregate(
            global_params + scale * step,
            weights={int(c): float(weights[c]) / n_t for c in members},
            notes={
                int(c): {
                    "inactive_rounds": int(self.tau[c]),
                    "psi": float(weights[c]),
                    "excluded": bool(weights[c] == 0.0),
                }
                for c in members
            },
        )

    def state_dict(self) -> dict:
        return {
            "store": self.store.state_dict(),
            "tau": array_state(self.tau),
            "ever": array_state(self.ever),
            "lr": self.lr,
            "log": [dict(row) for row in self.log],
        }

    def load_state_dict(self, state: dict) -> None:
        self.store.load_state_dict(state["store"])
        self.tau, self.ever = array_from_state(state["tau"]), array_from_state(state["ever"])
        self.lr, self.log = state["lr"], [dict(row) for row in state["log"]]

    def extra_outputs(self) -> dict[str, list[dict]]:
        return {"fedar_exclusions.csv": self.log}


STRATEGY = FedAR
PARAMS = FedArParams
