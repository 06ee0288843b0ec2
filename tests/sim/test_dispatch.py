"""The K-async dispatcher's index of idle online clients answers exactly like a scan of all clients."""

from __future__ import annotations

import math

import numpy as np
import pytest

from asyncfl.sim import availability as av
from asyncfl.sim.clients import ClientDevice
from asyncfl.sim.dispatch import IdleOnlineIndex, ScanDispatcher
from asyncfl.sim.profiles import DeviceProfile


def _model(kind: str, p: float, own: np.random.Generator, draw: np.random.Generator):
    if kind == "bernoulli_slots":  # slot 0.1 s: slot * slot_s and t // slot_s disagree in the last bit at boundaries
        return av.Bernoulli(p, own, 0.1)
    if kind == "markov":
        return av.Markov(p, 3.0, own)
    if kind == "cyclic":
        return av.Cyclic(p, 0.7, float(draw.uniform(0, 0.7)))
    if kind == "trace":
        edges = np.sort(draw.uniform(0, 50, 8)).tolist()
        return av.Trace(list(zip(edges[::2], edges[1::2])))
    return av.Always()


def _population(kind: str, n: int, seed: int) -> list[ClientDevice]:
    draw = np.random.default_rng(seed)
    clients = []
    for i in range(n):
        p = float(draw.uniform(0.05, 1.0)) if draw.random() > 0.1 else 1.0
        own = np.random.default_rng([seed, i])
        clients.append(ClientDevice(i, DeviceProfile(1.0, 1.0, 1.0, 0.0), _model(kind, p, own, draw), own))
    return clients


@pytest.mark.parametrize("kind", ["bernoulli_slots", "markov", "cyclic", "trace", "always"])
@pytest.mark.parametrize("seed", [0, 1])
def test_index_picks_and_wakes_like_the_scan(kind, seed):
    """A random walk of dispatches, task ends and idle waits (often several at the same instant)
    over 8 clients: every pick (same random stream) and every wake-up time must be identical."""
    scan = ScanDispatcher(_population(kind, 8, seed))
    index = IdleOnlineIndex(_population(kind, 8, seed))
    scan_rng, index_rng, walk = np.random.default_rng(seed), np.random.default_rng(seed), np.random.default_rng(9)
    now, picks, waits = 0.0, 0, 0
    for _ in range(1500):
        a, b = scan.pick(now, 0, scan_rng), index.pick(now, 0, index_rng)
        assert (a and a.id) == (b and b.id)
        if a is None:
            wake = scan.wake_time(now)
            assert index.wake_time(now) == wake
            waits += 1
            if math.isfinite(wake) and walk.random() < 0.5:
                now = wake
                continue
        else:
            a.busy_until = b.busy_until = now + float(walk.choice([0.0, 0.1, 0.7, 1.4, walk.exponential(3.0)]))
            index.dispatched(b)
            picks += 1
        now += float(walk.choice([0.0, 0.05, 0.1, walk.exponential(0.3)]))
    assert picks > 50 and waits > 20  # both paths were exercised
