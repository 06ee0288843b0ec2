"""The strategy contract (docs/explanation/architecture.md section 5).

A strategy turns the current global parameter vector and a list of client updates into the next
global vector.  It works on flat 1-D tensors and keeps whatever memory its paper needs as explicit
attributes.  Sign convention: ``delta = w_local - w_base``; gradient-like quantities of the papers
are ``-delta / lr``.

It also holds what every algorithm's parameter section shares (:class:`AlgorithmParams`): an algorithm's
section lives in its own module next to its strategy and states there, once, the server modes it runs
under (``modes``) and any rule it imposes on the rest of the scenario (``check``); the schema's
``algorithm`` union, the mode checks and the per-mode lists of algorithm names are built from these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

import numpy as np
from pydantic import Field, model_validator

from asyncfl.algorithms.server_optimizers import ServerOptimizerSpec, check_server_optimizer
from asyncfl.algorithms.server_optimizers.none import NoServerOptimizer
from asyncfl.errors import ConfigError
from asyncfl.lazy import torch
from asyncfl.sections import OPT_IN, Section  # also types the scenario sections assembled above (config)


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
    train_loss_sq: float = math.nan  # mean squared per-sample loss (Oort's statistical utility; NaN: not measured)


@dataclass(frozen=True)
class Context:
    """What the server knows when it aggregates.

    ``version`` is the global model version the aggregation starts from, counted from 0 (sync: the
    round's base version; K-async: version v, which the aggregation turns into v + 1); the aggregation's
    round, as rounds.csv counts it, is ``version + 1``.  ``selected`` are the clients asked to work this
    round (sync), ``failed`` those whose attempt failed, ``seen`` every client that has ever delivered an
    update (this round included).
    ``participation`` is each client's participation probability p_i from the availability model
    (NaN where it has none, e.g. traces): only baselines that assume known statistics may read it.
    """

    version: int
    time: float
    num_clients: int
    selected: frozenset[int] = frozenset()
    failed: frozenset[int] = frozenset()
    seen: frozenset[int] = frozenset()
    participation: tuple[float, ...] | None = None

    @property
    def round(self) -> int:
        """The aggregation's round, as every run file counts it (``version + 1``): a paper's 1-based t."""
        return self.version + 1


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
    initial global vector (shape, dtype and device for preallocated memory).  The module sets
    ``STRATEGY = cls`` and ``PARAMS = <its AlgorithmParams subclass>`` (name, modes) so the registry finds
    both.  ``state_dict()`` returns everything the strategy remembers between aggregations as tensors and
    plain values (numbers, strings, lists, tuples and dicts of them), ``load_state_dict(state)`` puts it
    into a freshly constructed strategy: a checkpoint holds that, never the strategy object.  Optionally
    ``extra_outputs() -> {file name: rows}`` returns tables written into the run directory at the end
    (e.g. FL-FDMS's similarity matrix).
    """

    def aggregate(self, global_params: torch.Tensor, updates: Sequence[Update], context: Context) -> Aggregate: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class Memoryless:
    """For strategies that remember nothing between aggregations: an empty state."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state:
            raise ValueError(f"{type(self).__name__} keeps no state, got {sorted(state)}")


def array_state(array: np.ndarray) -> torch.Tensor:
    """A numpy memory as a tensor for ``state_dict`` (same dtype and values; shares the memory)."""
    return torch.from_numpy(array)


def array_from_state(tensor: torch.Tensor) -> np.ndarray:
    """The inverse of :func:`array_state`, as an array of its own."""
    return tensor.numpy().copy()


def weighted_sum(updates: Sequence[Update], weights: Sequence[float]) -> torch.Tensor:
    """sum_i weights[i] * delta_i, without mutating any delta."""
    total = torch.zeros_like(updates[0].delta)
    for update, weight in zip(updates, weights):
        total.add_(update.delta, alpha=float(weight))
    return total


class MemoryStore(Section):
    """Where model-sized memory is kept: the last update of every client (MIFA, FedAR, FedVARP: one
    preallocated [clients x parameters] matrix), FedAsync's past models and a server optimizer's moment
    buffers.  Refused (unless it is the default) for an algorithm that keeps none of them there and has
    no server optimizer."""

    device: Literal["model", "cpu"] = Field(default="model", description="model: same device as the model")
    dtype: Literal["float32", "float16", "bfloat16"] = Field(
        default="float32", description="half precision halves the memory of large models"
    )


@dataclass(frozen=True)
class AlgorithmTags:
    """What an algorithm states about itself for the contract checks (:mod:`asyncfl.testing.strategy`), which
    choose their checks and expectations by it, never by the algorithm's name (scikit-learn's estimator tags).

    ``server_k``: the ``server.k`` it requires under k_async (it aggregates exactly that many updates; its
    ``check`` refuses another); None: any.
    ``keeps_memory``: it remembers between aggregations, so its ``state_dict()`` is not empty (and --resume
    must restore it).
    ``uses_like_values``: its first aggregation reads the values of ``make_strategy``'s ``like`` (w_0), not only
    its size, dtype and device.
    """

    server_k: int | None = None
    keeps_memory: bool = False
    uses_like_values: bool = False


class AlgorithmParams(Section):
    """Common keys of the ``algorithm`` section; each algorithm adds its own and a ``name: Literal[...]``."""

    modes: ClassVar[frozenset[str]] = frozenset()  # the server.mode values it runs under
    order: ClassVar[int] = 1000  # position in the reference and in error messages (then by name)
    tags: ClassVar[AlgorithmTags] = AlgorithmTags()  # what the contract checks (asyncfl.testing) must know
    takes_server_optimizer: ClassVar[bool] = True  # False: algorithm.server_optimizer is refused (FedAsync)
    # True: it keeps model-sized vectors where algorithm.memory says (an UpdateStore, FedAsync's models);
    # False: memory places only a server optimizer's buffers, and is refused without one
    stores_in_memory: ClassVar[bool] = False

    record_weights: bool = Field(default=False, description="write weights.csv (per-client aggregation weights)")
    server_lr: float = Field(default=1.0, gt=0, description="global learning rate eta_g")
    memory: MemoryStore = MemoryStore()
    server_optimizer: ServerOptimizerSpec = Field(
        default=NoServerOptimizer(),
        description="applied to the aggregate as a pseudo-gradient (Reddi et al. 2021); with one, server_lr stays 1",
        json_schema_extra=OPT_IN,
    )

    @model_validator(mode="after")
    def _server_optimizer_fits(self) -> AlgorithmParams:
        check_server_optimizer(
            self.server_optimizer, getattr(self, "name", "?"), self.server_lr, self.takes_server_optimizer
        )
        return self

    @model_validator(mode="after")
    def _memory_is_used(self) -> AlgorithmParams:
        if self.memory == MemoryStore() or self.stores_in_memory or self.server_optimizer.kind != "none":
            return self
        raise ConfigError(
            f"algorithm.memory: algorithm.name {getattr(self, 'name', '?')} keeps nothing where algorithm.memory "
            f"says, so memory.device and memory.dtype would be ignored: remove algorithm.memory, or set "
            f"algorithm.server_optimizer (memory places its moment buffers; it also places the per-client stores "
            f"of mifa, fedvarp and fedar and fedasync's past models)"
        )

    def check(self, scenario: Section) -> None:
        """Raise :class:`~asyncfl.errors.ConfigError` (naming the YAML keys) if the rest of ``scenario`` does
        not suit this algorithm."""


def algorithm_name(params: type[AlgorithmParams]) -> str:
    """The value of the ``name`` tag of an algorithm's section."""
    return params.model_fields["name"].annotation.__args__[0]  # type: ignore[union-attr]
