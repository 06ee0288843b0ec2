"""make_strategy's ``like`` argument: which strategies use its values (not just its size, dtype and
device), checked by running each strategy from two different ``like`` vectors, and said in the docstring."""

from __future__ import annotations

import re

import torch

from asyncfl.algorithms import PARAMS, REGISTRY, Context, Update, make_strategy
from asyncfl.config import validate_scenario

NUM_CLIENTS, DIM = 4, 5


def _first_aggregate(name: str, like: torch.Tensor) -> torch.Tensor:
    mode = "sync" if "sync" in PARAMS[name].modes else "k_async"
    # server.k belongs to k_async only: a sync scenario refuses it
    server = {"mode": mode} if mode == "sync" else {"mode": mode, "k": 1 if name == "fedasync" else 2}
    params = validate_scenario({"server": server, "algorithm": {"name": name}, "data": {"clients": NUM_CLIENTS}})
    strategy = make_strategy(params.algorithm, NUM_CLIENTS, like)
    w = torch.linspace(-1, 1, DIM)  # the global model the run starts from
    update = Update(0, torch.full((DIM,), 0.5), 0, 0, 10, 3, 0.1, 1.0)
    context = Context(
        round=0, time=0.0, num_clients=NUM_CLIENTS, selected=frozenset(range(NUM_CLIENTS)),
        failed=frozenset(range(1, NUM_CLIENTS)), seen=frozenset({0}), participation=tuple([0.5] * NUM_CLIENTS),
    )  # fmt: skip
    return strategy.aggregate(w, [update], context).params


def test_the_docstring_names_every_strategy_that_uses_the_values_of_like():
    uses_values = {
        name
        for name in REGISTRY
        if not torch.equal(_first_aggregate(name, torch.zeros(DIM)), _first_aggregate(name, torch.ones(DIM)))
    }
    assert uses_values == {"fedasync"}  # its version history starts with like as version 0
    doc = re.sub(r"\s+", " ", make_strategy.__doc__)
    assert "FedAsync" in doc and "values" in doc
