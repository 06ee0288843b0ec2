"""FedBuff (Nguyen et al., 2022): buffered asynchronous aggregation.

    w_{v+1} = w_v + eta_g * (1/K) * sum_{i in buffer} s(tau_i) Delta_i

K is the buffer size (server.k), tau_i = v - base_version_i, s a staleness discount
(:mod:`asyncfl.algorithms.staleness`).  With K equal to the cohort and tau = 0 this is FedAvg.

``normalize: true`` divides by sum_i s(tau_i) instead of K (a staleness-weighted average, whose weights sum to
1): the K-async baselines of FedHist's paper (fedhist.txt, Table I) in that form are
    K-async FedAvg   s = 1 (then normalize changes nothing)
    DynSGD-style     s = (1 + tau)^-1        (polynomial, a = 1)
    TWAFL-style      s = (e/2)^-tau          (exponential)
where without it an exponential discount at tau ~ 100 would make every step vanish.

FedBuff's server momentum (Nguyen et al. 2022 run the server update with momentum) is the ``avgm`` server
optimizer applied to this aggregate: ``algorithm.server_optimizer: {kind: avgm, lr: eta, beta1: beta}``
(:mod:`asyncfl.algorithms.server_optimizers.avgm`); any other server optimizer applies the same way.
With one, eta_g (server_lr) stays 1 and the optimizer's lr takes its place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from asyncfl.algorithms.base import Aggregate, AlgorithmParams, Context, Memoryless, Update, weighted_sum
from asyncfl.algorithms.staleness import PolynomialStaleness, Staleness, staleness_weight
from asyncfl.lazy import torch
from asyncfl.sections import OPT_IN


class FedBuffParams(AlgorithmParams):
    """FedBuff: w <- w + eta_g * (1/K) sum_i s(tau_i) Delta_i."""

    name: Literal["fedbuff"]
    modes: ClassVar[frozenset[str]] = frozenset({"k_async"})
    order: ClassVar[int] = 7
    staleness: Staleness = Field(
        default=PolynomialStaleness(kind="polynomial"), description="discount s(tau); FedBuff's default (1+tau)^-0.5"
    )
    normalize: bool = Field(
        default=False,
        json_schema_extra=OPT_IN,
        description="divide by sum_i s(tau_i) instead of K: a staleness-weighted average (DynSGD/TWAFL-style)",
    )


class FedBuff(Memoryless):
    def __init__(self, params: FedBuffParams, num_clients: int, like: torch.Tensor) -> None:
        self.params = params
        self.num_clients = num_clients

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate:
        if not updates:
            return Aggregate(global_params.clone())
        discounts = [staleness_weight(self.params.staleness, u.staleness) for u in updates]
        total = sum(discounts) if self.params.normalize else len(updates)
        if total <= 0:  # every discount underflowed: an unweighted average
            discounts, total = [1.0] * len(updates), len(updates)
        weights = [d / total for d in discounts]
        step = weighted_sum(updates, weights)
        return Aggregate(
            global_params + self.params.server_lr * step,
            weights={u.client: w for u, w in zip(updates, weights)},
            notes={u.client: {"staleness": u.staleness} for u in updates},
        )


STRATEGY = FedBuff
PARAMS = FedBuffParams
