"""The strategy contract (DESIGN.md section 5).

A strategy turns the current global parameter vector and a list of client updates into the next
global vector.  It works on flat 1-D tensors and keeps whatever memory its paper needs as explicit
attributes.  Sign convention: ``delta = w_local - w_base``; gradient-like quantities of the papers
are ``-delta / lr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, Sequence

import torch


@dataclass(frozen=True)
class Update:
    """One client's contribution as it reaches the server."""

    client: int
    delta: torch.Tensor  # w_local - w_base, flat
    base_version: int  # global version (sync: round) the client started from
    staleness: int  # current version - base_version at aggregation time
    num_samples: int  # size of the client's training split
    num_steps: int  # local SGD steps actually taken
    lr: float  # local learning rate used
    train_loss: float = float("nan")  # mean loss over the local steps


@dataclass(frozen=True)
class Context:
    """What the server knows when it aggregates.

    ``round`` is the index of the aggregation being made (0-based; sync round t or async version
    v -> v+1).  ``selected`` are the clients asked to work this round (sync), ``failed`` those whose
    attempt failed, ``seen`` every client that has ever delivered an update (this round included).
    ``participation`` is each client's participation probability p_i from the availability model
    (NaN where it has none, e.g. traces): only baselines that assume known statistics may read it.
    """

    round: int
    time: float
    num_clients: int
    selected: frozenset[int] = frozenset()
    failed: frozenset[int] = frozenset()
    seen: frozenset[int] = frozenset()
    participation: tuple[float, ...] | None = None


@dataclass
class Aggregate:
    """The result of one aggregation: the new global vector plus what a user needs to understand it.

    ``weights`` maps client -> effective aggregation weight; ``notes`` holds per-client extras
    (staleness, substitute, exclusion ...) that end up as columns of weights.csv.
    """

    params: torch.Tensor
    weights: dict[int, float] = field(default_factory=dict)
    notes: dict[int, dict[str, Any]] = field(default_factory=dict)


class Strategy(Protocol):
    """Every algorithm implements this.

    Constructed as ``cls(params, num_clients, like)``: its params section, the population size and the
    initial global vector (shape, dtype and device for preallocated memory).  Set ``STRATEGY = cls``
    in the module so the registry finds it.  Optionally ``extra_outputs() -> {file name: rows}``
    returns tables written into the run directory at the end (e.g. FL-FDMS's similarity matrix).
    """

    name: ClassVar[str]
    modes: ClassVar[frozenset[str]]

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate: ...


def weighted_sum(updates: Sequence[Update], weights: Sequence[float]) -> torch.Tensor:
    """sum_i weights[i] * delta_i, without mutating any delta."""
    total = torch.zeros_like(updates[0].delta)
    for update, weight in zip(updates, weights):
        total.add_(update.delta, alpha=float(weight))
    return total
