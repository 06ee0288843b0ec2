"""FedAsync (Xie, Koyejo & Gupta, 2019, "Asynchronous federated optimization", Algorithm 1).

The server mixes every arriving local model into the global one (K = 1, ``server.k: 1``):

    a_t   = mixing * s(tau)                       (alpha_t = alpha * s(t - tau) in the paper)
    w_t+1 = (1 - a_t) w_t + a_t w_local,          w_local = w_base + Delta

so ``w_t+1 = w_t + a_t (w_base - w_t + Delta)``: a stale model is pulled back towards its stale base.
The base model is needed, hence the strategy keeps the global versions it produced (``keep_versions``
bounds that memory: an update older than the kept window is an error, never silently re-based).
s is one of the shared staleness functions of :mod:`asyncfl.algorithms.staleness`.
``server_lr`` is not part of FedAsync and must stay 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from asyncfl.algorithms.base import Aggregate, AlgorithmParams, AlgorithmTags, Context, Update
from asyncfl.algorithms.memory import store_device, store_dtype
from asyncfl.algorithms.staleness import PolynomialStaleness, Staleness, staleness_weight
from asyncfl.errors import ConfigError
from asyncfl.lazy import torch
from asyncfl.sections import Section  # also types the scenario sections assembled above (config)


class FedAsyncParams(AlgorithmParams):
    """FedAsync (Xie et al. 2019, Alg. 1): w <- (1 - a_t) w + a_t w_local, a_t = mixing * s(tau); needs server.k 1.

    The paper's experiments use mixing in {0.5, 0.6, 0.8, 0.9} and the polynomial s with a = 0.5;
    the defaults are mixing 0.6 and polynomial a = 0.5.
    """

    name: Literal["fedasync"]
    modes: ClassVar[frozenset[str]] = frozenset({"k_async"})
    order: ClassVar[int] = 8
    tags: ClassVar[AlgorithmTags] = AlgorithmTags(server_k=1, keeps_memory=True, uses_like_values=True)
    stores_in_memory: ClassVar[bool] = True
    takes_server_optimizer: ClassVar[bool] = False  # its kept versions must be the published models
    mixing: float = Field(default=0.6, gt=0, le=1, description="mixing hyperparameter alpha of FedAsync")
    staleness: Staleness = Field(
        default=PolynomialStaleness(kind="polynomial"), description="discount s(tau) of the mixing weight"
    )
    keep_versions: int | None = Field(
        default=None,
        ge=1,
        description="w_local = w_base + Delta needs the base model: keep the versions an update up to N "
        "versions stale needs (null: all; with large models set server.max_staleness and this to the same N)",
    )

    def check(self, scenario: Section) -> None:
        if scenario.server.k != 1:
            raise ConfigError(
                f"algorithm.name fedasync mixes one update at a time: set server.k to 1 (got {scenario.server.k})"
            )


def fedasync_mix(current: torch.Tensor, base: torch.Tensor, delta: torch.Tensor, a: float) -> torch.Tensor:
    """(1 - a) * current + a * (base + delta)."""
    return torch.lerp(current, base + delta, a)


class FedAsync:
    def __init__(self, params: FedAsyncParams, num_clients: int, like: torch.Tensor) -> None:
        if params.server_lr != 1.0:
            raise ValueError(
                f"fedasync has no server learning rate: algorithm.server_lr must be 1, got {params.server_lr}"
            )
        self.params = params
        self.num_clients = num_clients
        self.store_device = store_device(like, params.memory)
        self.store_dtype = store_dtype(params.memory.dtype)
        self.versions: dict[int, torch.Tensor] = {0: self._stored(like)}  # global model of each kept version

    def _stored(self, w: torch.Tensor) -> torch.Tensor:
        return w.detach().to(self.store_device, self.store_dtype, copy=True)

    def base_model(self, version: int, like: torch.Tensor) -> torch.Tensor:
        if version not in self.versions:
            raise ValueError(
                f"fedasync: the base model of version {version} is no longer kept (algorithm.keep_versions = "
                f"{self.params.keep_versions}); set server.max_staleness <= keep_versions or raise keep_versions"
            )
        return self.versions[version].to(like.device, like.dtype)

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate:
        if not updates:
            return Aggregate(global_params.clone())
        if len(updates) > 1:
            raise ValueError(f"fedasync mixes one update at a time: set server.k: 1 (got {len(updates)} updates)")
        u = updates[0]
        a = self.params.mixing * staleness_weight(self.params.staleness, u.staleness)
        new = fedasync_mix(global_params, self.base_model(u.base_version, global_params), u.delta, a)
        self._remember(context.round, new)
        return Aggregate(new, weights={u.client: a}, notes={u.client: {"staleness": u.staleness}})

    def state_dict(self) -> dict:
        return {"versions": dict(self.versions)}

    def load_state_dict(self, state: dict) -> None:
        self.versions = {int(v): self._stored(w) for v, w in state["versions"].items()}

    def _remember(self, version: int, w: torch.Tensor) -> None:
        self.versions[version] = self._stored(w)
        keep = self.params.keep_versions
        if keep is not None:
            for old in [v for v in self.versions if v < version - keep]:  # staleness <= keep stays usable
                del self.versions[old]


STRATEGY = FedAsync
PARAMS = FedAsyncParams
