"""Aggregation strategies, one module per algorithm.

Each algorithm module sets ``STRATEGY`` to its class and the class sets ``name``; the registry is
built by importing every module of this package, so adding an algorithm never edits a shared list.
"""

from __future__ import annotations

import importlib
import pkgutil

import torch

from asyncfl.algorithms.base import Aggregate, Context, Strategy, Update
from asyncfl.config.algorithm_base import AlgorithmParams


def _discover() -> dict[str, type]:
    registry = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        strategy = getattr(module, "STRATEGY", None)
        if strategy is not None:
            registry[strategy.name] = strategy
    return registry


REGISTRY: dict[str, type] = _discover()


def make_strategy(params: AlgorithmParams, num_clients: int, like: torch.Tensor) -> Strategy:
    """Build the strategy named by ``params.name`` (the schema has already checked the name).

    ``like`` must be the initial global vector w_0 itself, not a placeholder of its shape: its size,
    dtype and device let memory-based strategies preallocate their stores, and FedAsync keeps its
    values as version 0 of its model history (the base model of updates trained from w_0).
    """
    name = params.name  # type: ignore[attr-defined]
    if name not in REGISTRY:
        raise ValueError(f"algorithm.name {name!r} has no implementation; available: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name](params, num_clients, like)


__all__ = ["Aggregate", "Context", "REGISTRY", "Strategy", "Update", "make_strategy"]
