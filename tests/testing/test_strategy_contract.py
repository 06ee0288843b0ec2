"""Every registered strategy held to the public strategy contract (asyncfl.testing.strategy): aggregation
never mutates its inputs, weights are finite and non-negative, the result does not depend on the arrival
order of one aggregation's updates, state_dict round trips continue bitwise and loading copies, and the
section's tags are true."""

from __future__ import annotations

import torch

from asyncfl.algorithms import PARAMS, REGISTRY
from asyncfl.testing.parametrize import parametrize_with_checks
from asyncfl.testing.strategy import DIM, aggregate_schedule


@parametrize_with_checks(list(PARAMS.values()))
def test_contract(registration, check):
    check(registration)


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
    forward = aggregate_schedule("fedhist", schedule)
    for a, b in zip(forward, aggregate_schedule("fedhist", schedule, reverse=True)):
        assert torch.equal(a, b)
