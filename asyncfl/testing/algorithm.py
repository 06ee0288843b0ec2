"""A strategy under test (:class:`Algorithm`: its section and strategy class), how the checks build it
and the updates they feed it.

A registered algorithm is built the way a run builds it (validated within a scenario, its section's
check against the scenario included); one from outside the package through its own section.  What the
checks must know of an algorithm is in its section's ``tags`` (:class:`~asyncfl.algorithms.base.AlgorithmTags`),
not in its name.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from asyncfl.algorithms import PARAMS, REGISTRY, Context, Update
from asyncfl.algorithms.base import AlgorithmParams, AlgorithmTags, algorithm_name
from asyncfl.config import validate_scenario

NUM_CLIENTS, DIM = 6, 5
SCHEDULES, SCHEDULE_SEED = 100, 0
EDGE_VALUES = np.float32([0.0, -0.0, 2.0, -2.0, 1.0, -1.0, 0.5, 1.1754944e-38])


@dataclass(frozen=True)
class Algorithm:
    """A strategy under test: its parameter section and its strategy class."""

    params: type[AlgorithmParams]
    strategy: type

    @property
    def name(self) -> str:
        return algorithm_name(self.params)

    @property
    def registered(self) -> bool:
        return PARAMS.get(self.name) is self.params

    @property
    def tags(self) -> AlgorithmTags:
        """The section's tags (the defaults where it states something else: check_tags says so)."""
        tags = self.params.tags
        return tags if isinstance(tags, AlgorithmTags) else AlgorithmTags()

    @property
    def mode(self) -> str:
        return "sync" if "sync" in self.params.modes else "k_async"


def algorithm(registration: str | type[AlgorithmParams] | Algorithm, strategy: type | None = None) -> Algorithm:
    """The :class:`Algorithm` of a registered name, of a section (its strategy: the registered one, else
    the ``STRATEGY`` of the section's module, or ``strategy``), or an Algorithm itself."""
    if isinstance(registration, Algorithm):
        return registration
    if isinstance(registration, str):
        if registration not in PARAMS:
            raise ValueError(f"no algorithm named {registration!r}; registered: {', '.join(PARAMS)}")
        registration = PARAMS[registration]
    if strategy is None:
        name = algorithm_name(registration)
        strategy = REGISTRY[name] if PARAMS.get(name) is registration else sys.modules[registration.__module__].STRATEGY
    return Algorithm(registration, strategy)


def build(alg: Algorithm, like: torch.Tensor | None = None):
    """A fresh strategy over NUM_CLIENTS clients (``like``: w_0, zeros by default)."""
    if alg.registered:  # as a run validates it: the section's check against the scenario included
        server = {"mode": alg.mode} if alg.mode == "sync" else {"mode": alg.mode, "k": alg.tags.server_k or 3}
        raw = {"server": server, "algorithm": {"name": alg.name}, "data": {"clients": NUM_CLIENTS}}
        params = validate_scenario(raw).algorithm
    else:
        params = alg.params.model_validate({"name": alg.name})
    return alg.strategy(params, NUM_CLIENTS, torch.zeros(DIM) if like is None else like)


def updates(alg: Algorithm, round_index: int, items) -> list[Update]:
    """One aggregation's updates from (client, delta, staleness) items, as its mode can deliver them."""
    out = []
    for client, delta, staleness in items:
        tau = min(staleness, round_index) if alg.mode == "k_async" else 0
        out.append(Update(client, torch.tensor(delta), round_index - tau, tau, 10 + client, 3, 0.1, 1.0))
    k = alg.tags.server_k
    return out[:k] if k else out


def context(round_index: int, delivered: list[Update]) -> Context:
    received = frozenset(u.client for u in delivered)
    return Context(
        version=round_index, time=float(round_index), num_clients=NUM_CLIENTS, selected=frozenset(range(NUM_CLIENTS)),
        failed=frozenset(range(NUM_CLIENTS)) - received, seen=received, participation=tuple([0.5] * NUM_CLIENTS),
    )  # fmt: skip


def schedules(count: int = SCHEDULES, seed: int = SCHEDULE_SEED) -> Iterator[list]:
    """Random schedules: per aggregation 1-4 distinct clients with a delta in [-2, 2] and a staleness in
    0..3; some deltas are edge values (0, -0, +-2, the smallest normal float32) or ties with another
    client's delta of the same aggregation (a tie once made FedHist depend on the arrival order)."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        schedule = []
        for _ in range(int(rng.integers(1, 6))):
            items: list[tuple[int, list[float], int]] = []
            for client in rng.choice(NUM_CLIENTS, size=int(rng.integers(1, 5)), replace=False):
                pick = rng.random()
                if pick < 0.2 and items:
                    delta = list(items[int(rng.integers(len(items)))][1])
                elif pick < 0.4:
                    delta = rng.choice(EDGE_VALUES, DIM).tolist()
                else:
                    delta = rng.uniform(-2, 2, DIM).astype(np.float32).tolist()
                items.append((int(client), delta, int(rng.integers(0, 4))))
            schedule.append(items)
        yield schedule


def memory_schedule(registration, rounds: int, seed: int) -> list[list[Update]]:
    """Deterministic updates with staleness and repeated clients, so every memory is exercised."""
    alg = algorithm(registration)
    gen = torch.Generator().manual_seed(seed)
    out = []
    for r in range(rounds):
        clients = torch.randperm(NUM_CLIENTS, generator=gen)[: 1 + r % 4].tolist()
        items = [(c, torch.randn(DIM, generator=gen).tolist(), (r + c) % 3) for c in clients]
        out.append(updates(alg, r, items))
    return out
