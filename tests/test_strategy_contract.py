"""One contract suite over every registered strategy (scikit-learn's parametrize_with_checks idea):
aggregation never mutates its inputs, weights are finite and non-negative, and the result does not
depend on the order in which the updates of one aggregation arrived."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncfl.algorithms import PARAMS, REGISTRY, Context, Update, make_strategy
from asyncfl.config import validate_scenario

NUM_CLIENTS, DIM = 6, 5


def _strategy(name: str):
    mode = "sync" if "sync" in PARAMS[name].modes else "k_async"
    # server.k belongs to k_async only: a sync scenario refuses it
    server = {"mode": mode} if mode == "sync" else {"mode": mode, "k": 1 if name == "fedasync" else 3}
    params = validate_scenario({"server": server, "algorithm": {"name": name}, "data": {"clients": NUM_CLIENTS}})
    return make_strategy(params.algorithm, NUM_CLIENTS, torch.zeros(DIM)), mode


# A schedule: per round, which clients deliver (distinct), with what delta and staleness.
ROUNDS = st.lists(
    st.lists(
        st.tuples(
            st.integers(0, NUM_CLIENTS - 1),
            st.lists(st.floats(-2, 2, allow_nan=False, width=32), min_size=DIM, max_size=DIM),
            st.integers(0, 3),
        ),
        min_size=1,
        max_size=4,
        unique_by=lambda u: u[0],
    ),
    min_size=1,
    max_size=5,
)


def _updates(round_index: int, items, mode: str, k_async_single: bool) -> list[Update]:
    out = []
    for client, delta, staleness in items:
        tau = min(staleness, round_index) if mode == "k_async" else 0
        out.append(Update(client, torch.tensor(delta), round_index - tau, tau, 10 + client, 3, 0.1, 1.0))
    return out[:1] if k_async_single else out


def _play(name: str, schedule, reverse: bool):
    strategy, mode = _strategy(name)
    w = torch.linspace(-1, 1, DIM)
    records = []
    for r, items in enumerate(schedule):
        updates = _updates(r, items, mode, name == "fedasync")
        if reverse:
            updates = updates[::-1]
        received = frozenset(u.client for u in updates)
        context = Context(
            round=r, time=float(r), num_clients=NUM_CLIENTS, selected=frozenset(range(NUM_CLIENTS)),
            failed=frozenset(range(NUM_CLIENTS)) - received, seen=received,
            participation=tuple([0.5] * NUM_CLIENTS),
        )  # fmt: skip
        before_w = w.clone()
        before = [u.delta.clone() for u in updates]
        result = strategy.aggregate(w, updates, context)
        assert torch.equal(w, before_w), f"{name} mutated the global vector"
        assert all(torch.equal(u.delta, b) for u, b in zip(updates, before)), f"{name} mutated a delta"
        assert torch.isfinite(result.params).all()
        for client, weight in result.weights.items():
            assert 0 <= client < NUM_CLIENTS
            assert weight == weight and abs(weight) != float("inf") and weight >= 0, (name, client, weight)
        records.append(result.params)
        w = result.params
    return records


@pytest.mark.parametrize("name", sorted(REGISTRY))
@settings(max_examples=30, deadline=None)
@given(schedule=ROUNDS)
def test_contract(name, schedule):
    forward = _play(name, schedule, reverse=False)
    backward = _play(name, schedule, reverse=True)
    for a, b in zip(forward, backward):
        assert torch.allclose(a, b, atol=1e-5), f"{name} depends on the arrival order of simultaneous updates"


def test_every_named_algorithm_is_registered():
    expected = {"fedavg", "fedavg_known_p", "mifa", "fedvarp", "fedar", "fedau", "fl_fdms", "fedbuff", "fedasync"}
    assert expected | {"fedhist"} <= set(REGISTRY)


def test_update_store_sums_in_chunks_like_one_reduction(monkeypatch):
    from asyncfl.algorithms import memory
    from asyncfl.config.algorithm_base import MemoryStore

    monkeypatch.setattr(memory, "CHUNK_NUMBERS", 7)  # 2 rows of 3 numbers per chunk
    rows = torch.randn(9, 3)
    for dtype, tol in (("float32", 1e-6), ("float16", 2e-3)):
        store = memory.UpdateStore(9, 3, torch.zeros(3), MemoryStore(dtype=dtype))
        for c in range(0, 9, 2):
            store.put(c, rows[c])
        filled = [0, 2, 4, 6, 8]
        assert store.clients() == filled
        assert torch.allclose(store.sum(), rows[filled].sum(0), atol=tol * 10)
        weights = [0.5, -1.0, 2.0, 0.0, 1.5]
        expected = (torch.tensor(weights)[:, None] * rows[filled]).sum(0)
        assert torch.allclose(store.sum(filled, weights), expected, atol=tol * 10)


def test_fedhist_tie_in_egs_does_not_depend_on_arrival_order():
    """Found by the contract test: identical deltas made two history rows tie in EGS's argmin, and
    float rounding (which follows the summation order) picked a different row in reverse order."""
    e = [[0.0] * DIM for _ in range(DIM)]
    for i in range(DIM):
        e[i][i] = 1.0
    zero = [0.0] * DIM
    schedule = [
        [(0, e[2], 0), (1, zero, 0), (2, e[3], 0), (3, e[3], 0)],
        [(0, e[2], 1), (1, zero, 0), (2, e[3], 1), (3, e[3], 1)],
        [(0, e[3], 0)],
    ]
    for a, b in zip(_play("fedhist", schedule, reverse=False), _play("fedhist", schedule, reverse=True)):
        assert torch.equal(a, b)
