"""K-async dispatch from columns (asyncfl/sim/slot_index.py) answers as the scan over client objects."""

from __future__ import annotations

import math

import numpy as np
import pytest

from asyncfl.config import validate_scenario
from asyncfl.sim import slot_index
from asyncfl.sim.dispatch import ScanDispatcher, make_dispatcher
from asyncfl.sim.population import build_clients
from asyncfl.sim.slot_index import SlotColumnsIndex


def _clients(n: int, p, slot_s: float = 2.0, seed: int = 5):
    availability = {"kind": "bernoulli", "p": p, "slot_s": slot_s}
    s = validate_scenario({"name": "slots", "timing_only": True, "data": {"clients": n}, "seed": seed,
                           "population": {"availability": availability}})  # fmt: skip
    return build_clients(s.population, n, seed)


def test_a_slotted_bernoulli_population_is_dispatched_from_columns_without_building_anyone() -> None:
    clients = _clients(40, 0.5)
    assert isinstance(make_dispatcher(clients), SlotColumnsIndex)
    assert list(clients.built()) == []
    rounds = validate_scenario({"name": "r", "timing_only": True, "data": {"clients": 4},
                                "population": {"availability": {"kind": "bernoulli", "p": 0.5}}})  # fmt: skip
    assert build_clients(rounds.population, 4, 0).slotted_bernoulli() is None  # no slots: no columns


def test_hand_computed_candidates_of_an_always_online_population(monkeypatch) -> None:
    monkeypatch.setattr(slot_index, "BLOCK", 2)  # three blocks of 2, 2 and 1 clients
    clients = _clients(5, 1.0)
    index = SlotColumnsIndex(clients, 5, 2.0, [1.0] * 5)
    assert index.candidates(0.0, 0).tolist() == [0, 1, 2, 3, 4]
    for i, end in ((1, 5.0), (2, 3.0)):
        clients[i].busy_until = end
        index.dispatched(clients[i])
    assert index.candidates(2.5, 0).tolist() == [0, 3, 4]  # 1 busy until 5, 2 until 3
    assert index.counts.tolist() == [1, 1, 1]
    assert index._kth(1) == 3 and index._kth(2) == 4
    assert index.candidates(3.0, 0).tolist() == [0, 2, 3, 4]  # a task ending at 3 is over at 3
    assert index.candidates(5.0, 0).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_picks_candidates_and_wake_times_equal_the_scans(seed: int) -> None:
    """Random dispatches on two copies of one population: every answer of the columns equals the scan's."""
    n, p = 60, {"dist": "uniform", "low": 0.02, "high": 0.3}
    scanned, columns = _clients(n, p, seed=seed), _clients(n, p, seed=seed)
    scan = ScanDispatcher([scanned[i] for i in range(n)])
    index = make_dispatcher(columns)
    rng_scan, rng_index, rng = np.random.default_rng(seed), np.random.default_rng(seed), np.random.default_rng(9)
    now, picks, waits = 0.0, 0, 0
    for _ in range(400):
        assert index.candidates(now, 0).tolist() == scan.candidates(now, 0).tolist()
        a, b = scan.pick(now, 0, rng_scan), index.pick(now, 0, rng_index)
        assert (a and a.id) == (b and b.id)
        if a is None:
            wake = scan.wake_time(now)
            assert index.wake_time(now) == wake and wake > now
            now = wake if math.isfinite(wake) else now + 1.0
            waits += 1
            continue
        picks += 1
        end = now + float(rng.exponential(3.0))
        for client, dispatcher in ((a, scan), (b, index)):
            client.busy_until = end
            dispatcher.dispatched(client)
        now += float(rng.choice([0.0, rng.uniform(0, 1.5)]))  # same-time dispatches too
    assert picks > 100 and waits > 5  # both paths taken
