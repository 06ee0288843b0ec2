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
    from asyncfl.algorithms.base import MemoryStore

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


PLAIN = (int, float, str, bool, type(None), torch.Tensor)


def _plain(value) -> bool:
    """Only tensors and plain values (numbers, strings), in lists, tuples and str/int-keyed dicts."""
    if isinstance(value, dict):
        return all(isinstance(k, (str, int)) and _plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return isinstance(value, PLAIN)


def _schedule(name: str, rounds: int, seed: int):
    """Deterministic updates with staleness and repeated clients, so every memory is exercised."""
    gen = torch.Generator().manual_seed(seed)
    _, mode = _strategy(name)
    out = []
    for r in range(rounds):
        clients = torch.randperm(NUM_CLIENTS, generator=gen)[: 1 + r % 4].tolist()
        items = [(c, torch.randn(DIM, generator=gen).tolist(), (r + c) % 3) for c in clients]
        out.append(_updates(r, items, mode, name == "fedasync"))
    return out


def _context(r: int, updates) -> Context:
    received = frozenset(u.client for u in updates)
    return Context(
        round=r, time=float(r), num_clients=NUM_CLIENTS, selected=frozenset(range(NUM_CLIENTS)),
        failed=frozenset(range(NUM_CLIENTS)) - received, seen=received, participation=tuple([0.5] * NUM_CLIENTS),
    )  # fmt: skip


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_state_dict_round_trip_continues_bitwise(name):
    """state_dict -> torch.save/load -> a fresh strategy's load_state_dict: from then on it aggregates
    exactly like the original (what --resume relies on), and the state holds no strategy objects."""
    import io

    schedule = _schedule(name, rounds=12, seed=7)
    original, _ = _strategy(name)
    w = torch.linspace(-1, 1, DIM)
    memory_mattered = False
    for cut in range(len(schedule)):
        state = original.state_dict()
        assert _plain(state), f"{name}.state_dict() holds more than tensors and plain values: {state!r}"
        buffer = io.BytesIO()
        torch.save(state, buffer)
        buffer.seek(0)
        fresh, _ = _strategy(name)
        fresh.load_state_dict(torch.load(buffer, weights_only=True))
        expected = original.aggregate(w, schedule[cut], _context(cut, schedule[cut]))
        got = fresh.aggregate(w, schedule[cut], _context(cut, schedule[cut]))
        assert torch.equal(expected.params, got.params), f"{name} diverged after a reload at aggregation {cut}"
        amnesiac, _ = _strategy(name)  # the same step without the memory: differs for a strategy with one
        try:
            forgot = amnesiac.aggregate(w, schedule[cut], _context(cut, schedule[cut])).params
        except ValueError:  # FedAsync without its model history: the base model is missing
            forgot = None
        memory_mattered |= forgot is None or not torch.equal(forgot, expected.params)
        assert expected.weights == got.weights
        assert repr(expected.notes) == repr(got.notes)  # NaN notes compare by their text
        if hasattr(original, "extra_outputs"):
            assert repr(original.extra_outputs()) == repr(fresh.extra_outputs())
        w = expected.params
    assert memory_mattered == bool(original.state_dict()), f"{name}: the schedule does not exercise its memory"


def test_state_dict_is_not_aliased_by_a_fresh_load():
    """Loading copies: the fresh strategy's memory does not share storage with the saved state."""
    original, _ = _strategy("mifa")
    schedule = _schedule("mifa", rounds=3, seed=1)
    w = torch.zeros(DIM)
    for r, updates in enumerate(schedule):
        w = original.aggregate(w, updates, _context(r, updates)).params
    state = original.state_dict()
    fresh, _ = _strategy("mifa")
    fresh.load_state_dict(state)
    before = fresh.state_dict()["store"]["rows"].clone()
    original.aggregate(w, schedule[0], _context(3, schedule[0]))
    original.store.rows.add_(1.0)
    assert torch.equal(fresh.state_dict()["store"]["rows"], before)
