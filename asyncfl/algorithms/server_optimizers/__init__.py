"""Server optimizers (``algorithm.server_optimizer``), one module per kind: FedAvgM (``avgm``), FedAdagrad,
FedAdam and FedYogi (Reddi et al., ICLR 2021, "Adaptive federated optimization", Algorithm 2), or ``none``.

They apply to ANY algorithm's aggregate: the algorithm's rule proposes x_new from x_t (its own
``algorithm.server_lr`` included), the optimizer takes the pseudo-gradient Delta_t = x_new - x_t and
returns x_{t+1} (:class:`ServerOptimized` wraps the strategy; :func:`asyncfl.algorithms.make_strategy`
builds it).  How the two learning rates combine: with an optimizer, ``algorithm.server_lr`` must stay 1
(:func:`check_server_optimizer`) and ``server_optimizer.lr`` is the server learning rate eta of the paper - a
server_lr != 1 would scale Delta_t, which for the adaptive kinds is not a plain rescaling of the step
(v_{-1} = tau^2 does not scale with it), so the combination is refused rather than given a meaning.
An aggregation with no update changes nothing (the optimizer does not step: its memory stays as it was),
as the algorithms' "no update => no change".

Each module sets ``OPTIMIZER`` to its :class:`ServerOptimizerKind`; the schema's tagged union on ``kind``
is :data:`ServerOptimizerSpec`, built from the modules of this package when it is imported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Annotated, Any, Union

from pydantic import Field

from asyncfl.algorithms.server_optimizers._base import ServerOptimizer, ServerOptimizerKind
from asyncfl.errors import ConfigError
from asyncfl.lazy import torch
from asyncfl.registry import Registry, discover

REGISTRY: Registry = discover(__name__, __path__, "OPTIMIZER", axis="algorithm.server_optimizer.kind")

ServerOptimizerSpec = Annotated[Union[tuple(k.section for k in REGISTRY.values())], Field(discriminator="kind")]  # type: ignore[misc]
"""``algorithm.server_optimizer``: ``{kind: none|avgm|adagrad|adam|yogi, ...}``."""


def check_server_optimizer(spec: Any, algorithm: str, server_lr: float, takes_optimizer: bool) -> None:
    """Raise :class:`ConfigError` if ``spec`` cannot go with this algorithm section."""
    if spec.kind == "none":
        return
    if not takes_optimizer:
        raise ConfigError(
            f"algorithm.server_optimizer: algorithm.name {algorithm} takes no server optimizer (its rule keeps the "
            f"global models it produced, which an optimizer's step would change behind its back); use kind: none"
        )
    if server_lr != 1.0:
        raise ConfigError(
            f"algorithm.server_optimizer: with kind {spec.kind}, server_optimizer.lr is the server learning rate: "
            f"algorithm.server_lr must stay 1 (got {server_lr}); set the rate in server_optimizer.lr"
        )


def make_server_optimizer(spec: Any, like: torch.Tensor) -> ServerOptimizer | None:
    """The optimizer of ``spec`` (None for ``none``), its memory like ``like``."""
    return REGISTRY[spec.kind].build(spec, like)


class ServerOptimized:
    """A strategy whose every aggregate goes through a server optimizer: x_{t+1} = optimizer(x_t, x_new).

    Weights and notes are the strategy's own.  Its state is ``{"strategy": ..., "server_optimizer": ...}``;
    ``extra_outputs`` are the strategy's."""

    def __init__(self, strategy: Any, optimizer: ServerOptimizer) -> None:
        self.strategy, self.optimizer = strategy, optimizer

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Any], context: Any) -> Any:
        result = self.strategy.aggregate(global_params, updates, context)
        if not updates:  # no update => no change, and no step of the optimizer
            return result
        return dataclasses.replace(result, params=self.optimizer.step(global_params, result.params))

    def state_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy.state_dict(), "server_optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.strategy.load_state_dict(state["strategy"])
        self.optimizer.load_state_dict(state["server_optimizer"])

    def extra_outputs(self) -> dict[str, list]:
        return getattr(self.strategy, "extra_outputs", dict)()


__all__ = [
    "REGISTRY",
    "ServerOptimized",
    "ServerOptimizer",
    "ServerOptimizerKind",
    "ServerOptimizerSpec",
    "make_server_optimizer",
    "check_server_optimizer",
]
