"""What a server-optimizer module registers (see :mod:`asyncfl.algorithms.server_optimizers`) and what the
built optimizer does: turn the algorithm's proposed step into the step actually taken.

Sign convention (Reddi et al., ICLR 2021, Algorithm 2): the pseudo-gradient is the *ascent* direction
``Delta_t = x_new - x_t`` (what the algorithm's rule produced, minus the current global model), and the
optimizers *add* their step: ``x_{t+1} = x_t + eta * (...)``.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from asyncfl.lazy import torch


class ServerOptimizer(Protocol):
    """A built optimizer (one per run).  ``step(x_t, x_new)`` returns x_{t+1} from the current global model
    and the algorithm's proposal, updating the optimizer's memory; it mutates neither input.
    ``state_dict()`` holds the memory (m, v) as tensors (copies), ``load_state_dict`` puts it back into a
    freshly built optimizer: resume continues bitwise."""

    def step(self, current: torch.Tensor, proposed: torch.Tensor) -> torch.Tensor: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def working(buffer: torch.Tensor, model: torch.Tensor) -> torch.Tensor:
    """``buffer`` in ``model``'s dtype and device for one step: the buffer itself when they agree (then
    updating it in place updates the optimizer's memory), else a copy that :func:`keep` stores back."""
    return buffer.to(model.device, model.dtype)


def keep(buffer: torch.Tensor, value: torch.Tensor) -> None:
    """Store a step's ``value`` of a buffer (rounded to the buffer's dtype) unless it is the buffer itself."""
    if value is not buffer:
        buffer.copy_(value)


@dataclass(frozen=True)
class ServerOptimizerKind:
    """One value of ``algorithm.server_optimizer.kind``, registered by its module as ``OPTIMIZER``.

    ``section``: its YAML keys (a section whose ``kind: Literal["<name>"]`` names it).
    ``build(spec, like)`` -> the run's :class:`ServerOptimizer` (its memory shaped, typed and placed like
    ``like``: the initial global vector's shape on ``algorithm.memory``'s device and dtype, which may
    differ from the models ``step`` gets: see :func:`working`), or None for ``none`` (the algorithm's
    proposal is taken as is).
    ``examples``: specs (dicts without ``kind``) the contract suite (asyncfl.testing.server_optimizer) runs.
    ``order``: place among the allowed values (the first is the default).
    """

    section: type
    build: Callable[[Any, torch.Tensor], ServerOptimizer | None]
    examples: tuple[dict, ...] = ({},)
    order: int = 1000

    @property
    def name(self) -> str:
        return typing.get_args(self.section.model_fields["kind"].annotation)[0]
