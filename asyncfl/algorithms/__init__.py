"""Aggregation strategies, one module per algorithm.

Each algorithm module sets ``STRATEGY`` to its strategy class and ``PARAMS`` to its YAML section (an
:class:`~asyncfl.algorithms.base.AlgorithmParams` subclass with its ``name`` tag and the server
``modes`` it runs under).  The registry is built by importing every module of this package, so adding an
algorithm is adding one file, or calling :func:`register` from user code.  The modules import torch
lazily (:mod:`asyncfl.lazy`): the schema reads their sections without importing torch.
"""

from __future__ import annotations

import sys

from asyncfl.algorithms.base import Aggregate, AlgorithmParams, Context, Strategy, Update, algorithm_name
from asyncfl.algorithms.memory import stored_like
from asyncfl.algorithms.server_optimizers import ServerOptimized, make_server_optimizer
from asyncfl.lazy import torch
from asyncfl.registry import Registry, discover, public_modules


def _check(params: object, strategy: object, where: str) -> None:
    if strategy is not None and (
        not isinstance(params, type) or not issubclass(params, AlgorithmParams) or not params.modes
    ):
        raise TypeError(f"{where}: PARAMS must be an AlgorithmParams subclass stating its modes")


def _discover() -> tuple[Registry, dict[str, type]]:
    for module in public_modules(__name__, __path__):
        _check(getattr(module, "PARAMS", None), getattr(module, "STRATEGY", None), module.__name__)
    params = discover(__name__, __path__, "PARAMS", name=algorithm_name, axis="algorithm.name")
    return params, {name: sys.modules[p.__module__].STRATEGY for name, p in params.items()}


PARAMS, REGISTRY = _discover()  # name -> parameter section, name -> strategy class; in reference order


def register(params: type[AlgorithmParams], strategy: type[Strategy]) -> type[Strategy]:
    """Add an algorithm from user code: its YAML section (``name`` tag, ``modes``) and its strategy class.
    A name registered twice is refused."""
    _check(params, strategy, getattr(strategy, "__name__", repr(strategy)))
    PARAMS.register(params)
    REGISTRY[algorithm_name(params)] = strategy
    return strategy


def unregister(name: str) -> None:
    """Remove the algorithm ``name`` (a test's teardown)."""
    PARAMS.unregister(name)
    del REGISTRY[name]


def algorithms_for(mode: str) -> tuple[str, ...]:
    """The names of the algorithms that run under ``server.mode`` ``mode``."""
    return tuple(name for name, params in PARAMS.items() if mode in params.modes)


def make_strategy(params: AlgorithmParams, num_clients: int, like: torch.Tensor) -> Strategy:
    """Build the strategy named by ``params.name`` (the schema has already checked the name).

    ``like`` must be the initial global vector w_0 itself, not a placeholder of its shape: its size,
    dtype and device let memory-based strategies preallocate their stores, and FedAsync keeps its
    values as version 0 of its model history (the base model of updates trained from w_0).
    With ``algorithm.server_optimizer`` set, the strategy comes wrapped in :class:`ServerOptimized`,
    the optimizer's moment buffers kept on ``algorithm.memory``'s device and dtype.
    """
    name = params.name  # type: ignore[attr-defined]
    if name not in REGISTRY:
        raise ValueError(f"algorithm.name {name!r} has no implementation; available: {', '.join(sorted(REGISTRY))}")
    strategy = REGISTRY[name](params, num_clients, like)
    optimizer = make_server_optimizer(params.server_optimizer, stored_like(like, params.memory))
    return strategy if optimizer is None else ServerOptimized(strategy, optimizer)


__all__ = [
    "PARAMS",
    "REGISTRY",
    "Aggregate",
    "Context",
    "Strategy",
    "Update",
    "algorithms_for",
    "make_strategy",
    "register",
    "unregister",
]
