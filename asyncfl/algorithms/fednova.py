"""FedNova (Wang et al., NeurIPS 2020, "Tackling the objective inconsistency problem in heterogeneous
federated optimization"), for local vanilla SGD.

Clients that run different numbers of local steps tau_i (``training.local_work``: time_budget or
epochs) pull FedAvg towards the objective of those that run more: FedAvg's fixed point weights
client i by p_i tau_i, not p_i (the paper's Theorem 1).  FedNova averages normalised updates instead
(the paper's generalised update rule of Section 3 with FedNova's weights of Section 4; the paper is not
in /work/shared/papers, so its equation numbers are not quoted here), with
Delta_i = w_local - w_base = -eta G_i a_i:

    d_i = Delta_i / ||a_i||_1                 (normalised update; vanilla SGD: a_i = [1, ..., 1], ||a_i||_1 = tau_i)
    tau_eff = sum_i p_i ||a_i||_1             (effective number of local steps)
    w <- w + eta_g * tau_eff * sum_i p_i d_i,   p_i = n_i / sum_{j in S_t} n_j

over the updates S_t the round received.  With equal tau_i it is FedAvg with sample weights.

Local momentum (rho > 0) and FedProx's proximal term change a_i (the paper's Section 4: momentum
gives ||a_i||_1 = [tau_i - rho (1 - rho^tau_i) / (1 - rho)] / (1 - rho), the proximal term
a_i = [(1 - eta mu)^(tau_i - 1), ..., 1]); an update carries only tau_i, so those are refused here
(``check``) rather than normalised by the wrong norm.  Weight decay keeps a_i = [1, ..., 1] (it is
SGD on the regularised loss).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from asyncfl.algorithms.base import Aggregate, AlgorithmParams, Context, Memoryless, Section, Update, weighted_sum
from asyncfl.errors import ConfigError
from asyncfl.lazy import torch


class FedNovaParams(AlgorithmParams):
    """FedNova: w <- w + eta_g * tau_eff * sum_i p_i Delta_i / tau_i, p_i = n_i / sum n, tau_eff = sum_i p_i tau_i."""

    name: Literal["fednova"]
    modes: ClassVar[frozenset[str]] = frozenset({"sync"})
    order: ClassVar[int] = 10

    def check(self, scenario: Section) -> None:
        training = scenario.training
        if training.momentum or training.prox_mu:
            key = "training.momentum" if training.momentum else "training.prox_mu"
            raise ConfigError(
                f"algorithm.name fednova normalises by the local step count of vanilla SGD (a_i = [1, ..., 1]); "
                f"{key} > 0 changes a_i, which an update does not carry: set {key} to 0"
            )


def fednova_weights(updates: Sequence[Update]) -> tuple[list[float], float]:
    """The weight of each raw delta, tau_eff * p_i / tau_i, and tau_eff."""
    total = sum(u.num_samples for u in updates)
    p = [u.num_samples / total for u in updates]
    tau_eff = sum(p_i * u.num_steps for p_i, u in zip(p, updates))
    return [tau_eff * p_i / u.num_steps for p_i, u in zip(p, updates)], tau_eff


class FedNova(Memoryless):
    def __init__(self, params: FedNovaParams, num_clients: int, like: torch.Tensor) -> None:
        self.params = params

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate:
        if not updates:
            return Aggregate(global_params.clone())
        weights, tau_eff = fednova_weights(updates)
        return Aggregate(
            global_params + self.params.server_lr * weighted_sum(updates, weights),
            weights={u.client: w for u, w in zip(updates, weights)},
            notes={u.client: {"local_steps": u.num_steps, "tau_eff": tau_eff} for u in updates},
        )


STRATEGY = FedNova
PARAMS = FedNovaParams
