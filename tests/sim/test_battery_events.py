"""Batteries without polling: the time an idle battery is charged enough, in closed form, and the
K-async dispatcher (and sync's check-in wait) waking at exactly that time."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from asyncfl.config.loading import validate_scenario
from asyncfl.runner.start import run_scenario
from asyncfl.sim import availability as av
from asyncfl.sim.availability.measure import OfflineMeter
from asyncfl.sim.battery import DeviceBattery
from asyncfl.sim.clients import ClientDevice
from asyncfl.sim.dispatch import ChargedIndex, ScanDispatcher, make_dispatcher
from asyncfl.sim.profiles import DeviceProfile


def _battery(level: float, min_level: float, charge_w: float, period: float, plugged: float, phase: float = 0.0):
    return DeviceBattery(10.0, level, min_level, charge_w, period, plugged, phase)


def test_ready_at_plugged_in_for_good():
    # level L = 2 J, threshold T = 0.5 * 10 J = 5 J, r = 0.5 W: t = (T - L) / r = (5 - 2) / 0.5 = 6 s
    bat = _battery(2.0, 0.5, 0.5, 100.0, 100.0)
    assert bat.ready_at() == 6.0
    assert not bat.can_accept(5.999) and bat.can_accept(6.0)


@pytest.mark.parametrize(
    "level, min_level, phase, expected",
    [
        # windows [0, 30) + 100 k at 0.1 W, 3 J each; from 0 J to 5 J: 3 J by t = 30, then 2 J / 0.1 W = 20 s
        # into the window at 100: t = 120
        (0.0, 0.5, 0.0, 120.0),
        # phase 50: windows [50, 80) + 100 k (at t = 0 it is 50 s into the cycle, unplugged): 3 J in the
        # window at 50, the other 2 J 20 s into the one at 150: t = 170
        (0.0, 0.5, 50.0, 170.0),
        # 0 -> 10 J: 3 J in each of the windows at 0, 100, 200 (9 J), 1 J / 0.1 W = 10 s into the one at 300
        (0.0, 1.0, 0.0, 310.0),
        # 1 -> 10 J: a deficit of 9 J, exactly three windows: the end of the window at 200, t = 230
        (1.0, 1.0, 0.0, 230.0),
        # already charged enough: ready at once (the last task's end, here 0)
        (6.0, 0.5, 0.0, 0.0),
    ],
)
def test_ready_at_over_plug_windows(level, min_level, phase, expected):
    bat = _battery(level, min_level, 0.1, 100.0, 30.0, phase)
    assert bat.ready_at() == pytest.approx(expected, rel=1e-12)
    # the level the battery simulates itself (piece by piece) agrees: the threshold is reached there
    assert bat.level_at(bat.ready_at()) == pytest.approx(min_level * 10.0, rel=1e-12) or level >= min_level * 10.0


def test_ready_at_never_without_a_charger():
    bat = DeviceBattery(10.0, 0.5, 0.1, charge_w=0.0)  # 0.5 J < T = 1 J and no charging
    assert bat.ready_at() == math.inf and not bat.can_accept(1e12)


def test_ready_at_restarts_from_the_level_a_task_leaves():
    # 100 J, threshold 50 J, plugged in for good at 1 W.  A task spending 70 J over [10, 20] draws
    # 7 W and nets 6 W: 100 - 60 = 40 J at t = 20, then (50 - 40) / 1 W = 10 s more: t = 30
    bat = DeviceBattery(100.0, 100.0, 0.5, charge_w=1.0, plug_period_s=50.0, plugged_s=50.0)
    assert bat.ready_at() == 0.0
    bat.consume(10.0, 20.0, 20.0, 70.0)
    assert bat.level_at(20.0) == pytest.approx(40.0)
    assert bat.ready_at() == pytest.approx(30.0, rel=1e-12)
    assert not bat.can_accept(29.99) and bat.can_accept(bat.ready_at())


def test_ready_at_matches_the_level_for_random_batteries():
    """Invariant: just before ready_at the simulated level is below the threshold, at it not below
    (to rounding), whatever the windows, phase, rate and starting level."""
    rng = np.random.default_rng(4)
    for _ in range(300):
        capacity, period = float(rng.uniform(1, 100)), float(rng.uniform(10, 1000))
        plugged = period * float(rng.choice([rng.uniform(0.05, 0.95), 1.0]))
        args = (capacity, float(rng.uniform(0, 0.19)) * capacity, float(rng.uniform(0.2, 1.0)))
        plug = dict(charge_w=float(rng.uniform(0.01, 2)), plug_period_s=period, plugged_s=plugged)
        plug["plug_phase_s"] = float(rng.uniform(0, period))
        ready = DeviceBattery(*args, **plug).ready_at()
        target = args[2] * capacity
        assert 0 < ready < math.inf
        before, at = DeviceBattery(*args, **plug), DeviceBattery(*args, **plug)
        assert before.level_at(ready * (1 - 1e-9)) < target
        assert at.level_at(ready) == pytest.approx(target, rel=1e-9)


def test_plug_boundary_a_hair_away_moves_on():
    """At t = 2690.6844532403757 the plug window ends 1.1e-13 s later, less than half an ulp of t:
    the next change must still lie after t (it used to be t itself, and level_at never returned)."""
    plug = dict(charge_w=0.0148, plug_period_s=979.0683391173827, plugged_s=431.120193523367)
    bat = DeviceBattery(43.6, 10.0, 0.9, plug_phase_s=677.6407576351393, **plug)
    t = 2690.6844532403757
    pos = (t + bat.phase) % bat.period
    assert pos < bat.plugged_s and t + (bat.plugged_s - pos) == t
    assert bat._next_plug_change(t) > t
    # from cycle position 677.64 at t = 0: plugged in on [301.43, 732.55), [1280.49, 1711.61) and
    # [2259.56, 2690.68) before t = 3000, three whole windows of 431.12 s at 0.0148 W
    assert bat.level_at(3000.0) == pytest.approx(10.0 + 0.0148 * 3 * 431.120193523367)


def _client(i: int, availability, battery) -> ClientDevice:
    return ClientDevice(i, DeviceProfile(1.0, 1.0, 1.0, 0.0), availability, np.random.default_rng(i), battery)


@pytest.mark.parametrize("dispatcher", [ChargedIndex, ScanDispatcher])
def test_dispatcher_wakes_when_the_battery_is_charged(dispatcher):
    # the battery of the first test: 2 J of 10, threshold 5 J, 0.5 W for good -> usable at t = 6 s
    # (the scan used to look again at now + 60 s)
    d = dispatcher([_client(0, av.Always(), _battery(2.0, 0.5, 0.5, 100.0, 100.0))])
    rng = np.random.default_rng(0)
    assert d.pick(0.0, 0, rng) is None and d.wake_time(0.0) == 6.0
    assert d.pick(5.5, 0, rng) is None and d.wake_time(5.5) == 6.0
    assert d.pick(6.0, 0, rng).id == 0


@pytest.mark.parametrize("dispatcher", [ChargedIndex, ScanDispatcher])
def test_dispatcher_wakes_when_every_condition_holds(dispatcher):
    # plugged in on [0, 30) + 100 k, 0 -> 5 J at 0.1 W: charged at 120 (test_ready_at_over_plug_windows);
    # eligibility also asks the plug (the same windows) and an unmetered network from 125 on: t = 125
    network = av.Trace([(0.0, 5.0), (125.0, 1e6)])
    eligible = av.AllOf([av.Always(), av.Cyclic(0.3, 100.0, 0.0), network], ["offline", "charging", "network"])
    d = dispatcher([_client(0, eligible, _battery(0.0, 0.5, 0.1, 100.0, 30.0))])
    rng = np.random.default_rng(0)
    assert d.pick(10.0, 0, rng) is None and d.wake_time(10.0) == 125.0
    assert d.pick(125.0, 0, rng).id == 0


def _random_population(kind: str, n: int, seed: int) -> list[ClientDevice]:
    draw = np.random.default_rng(seed)
    clients = []
    for i in range(n):
        own = np.random.default_rng([seed, i])
        p = float(draw.uniform(0.2, 1.0))
        period = float(draw.uniform(5, 20))
        phase = float(draw.uniform(0, period))
        plug = av.Cyclic(0.4, period, phase)  # the battery's windows, 40 % of each period
        if kind == "markov":
            availability = av.Markov(p, 3.0, own)
        elif kind == "bernoulli_slots":
            availability = av.Bernoulli(p, own, 0.1)
        else:  # eligibility: available, plugged in and on an unmetered network
            availability = av.AllOf([av.Markov(p, 3.0, own), plug, av.Markov(0.7, 4.0, draw)], ["offline"] * 3)
        charge_w = float(draw.uniform(0.2, 2))
        battery = DeviceBattery(10.0, float(draw.uniform(0, 10)), 0.3, charge_w, period, 0.4 * period, phase)
        clients.append(_client(i, availability, battery))
    return clients


@pytest.mark.parametrize("kind", ["markov", "bernoulli_slots", "eligibility"])
@pytest.mark.parametrize("seed", [0, 1])
def test_charged_index_picks_and_wakes_like_the_scan(kind, seed):
    """A random walk of dispatches (each draining the battery), task ends and idle waits over 8
    clients with batteries: every pick (same random stream) and every wake-up time is identical.
    Scan and index share the clients, so both see one battery state (the scan's looks advance it)."""
    clients = _random_population(kind, 8, seed)
    scan, index = ScanDispatcher(clients), ChargedIndex(clients)
    scan_rng, index_rng, walk = np.random.default_rng(seed), np.random.default_rng(seed), np.random.default_rng(9)
    now, picks, waits, charged_waits = 0.0, 0, 0, 0
    for _ in range(1500):
        a, b = scan.pick(now, 0, scan_rng), index.pick(now, 0, index_rng)
        assert (a and a.id) == (b and b.id)
        if a is None:
            wake = scan.wake_time(now)
            assert index.wake_time(now) == wake
            waits += 1
            charged_waits += any(c.battery.ready_at() == wake for c in clients)
            if math.isfinite(wake) and walk.random() < 0.7:
                now = wake
                continue
        else:
            end = now + float(walk.choice([0.0, 0.1, 0.7, walk.exponential(3.0)]))
            a.battery.consume(now, end, end, float(walk.uniform(0, 8)))
            a.busy_until = end
            index.dispatched(b)
            picks += 1
        now += float(walk.choice([0.0, 0.05, 0.1, walk.exponential(0.3)]))
    assert picks > 50 and waits > 20 and charged_waits > 0  # every path was exercised


K_ASYNC_BATTERY = {
    "name": "one_battery",
    "timing_only": True,
    "data": {"dataset": "digits", "clients": 1},
    "model": {"name": "logreg"},
    "training": {"local_steps": 1, "batch_size": 10},
    "population": {
        "compute": {"samples_per_s": 100},
        # 100 J at 5 % = 5 J, threshold 10 % = 10 J, plugged in for good at 0.5 W: (10 - 5) / 0.5 = 10 s
        "battery": {
            "capacity_j": 100.0,
            "initial_level": 0.05,
            "joules_per_sample": 0.0,
            "joules_per_byte": 0.0,
            "charging": {"period_s": 1000.0, "plugged_fraction": 1.0, "charge_w": 0.5},
        },
    },
    "server": {"mode": "k_async", "k": 1, "concurrency": 1},
    "stop": {"rounds": 2},
    "output": {"plot": False},
}


@pytest.mark.parametrize(
    "server",
    [
        {"mode": "k_async", "k": 1, "concurrency": 1},
        {"mode": "sync", "clients_per_round": 1, "selection": {"kind": "online"}},  # waits for a check-in
    ],
)
def test_first_task_starts_when_the_battery_is_charged(tmp_path, server):
    run = run_scenario(validate_scenario({**K_ASYNC_BATTERY, "server": server}), tmp_path / "run")
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    downloads = [e["t"] for e in events if e["event"] == "download"]
    assert downloads[0] == 10.0  # not 60 (one poll)
    assert not any(e["event"] == "fail" for e in events)


def test_make_dispatcher_indexes_batteries():
    assert isinstance(make_dispatcher([_client(0, av.Always(), _battery(2.0, 0.5, 0.5, 100.0, 100.0))]), ChargedIndex)


def test_eligibility_bound_and_walk_up_to_a_time():
    # plugged in on [0, 30) + 100 k; the unmetered network on [0, 5) and from 135 on.  From t = 40 the
    # plug is next on at 100 and the network at 135, so no joint time is earlier than 135 (the bound);
    # at 135 the plug is off again (35 s into its cycle), and the next window, [200, 230), is the answer
    eligible = av.AllOf([av.Cyclic(0.3, 100.0, 0.0), av.Trace([(0.0, 5.0), (135.0, 1e6)])], ["charging", "network"])
    assert eligible.earliest_online(40.0) == 135.0 and eligible.next_online(40.0) == 200.0
    assert eligible.next_online_within(40.0, 1e9) == 200.0
    assert eligible.next_online_within(40.0, 120.0) > 120.0  # stops walking past until
    assert eligible.next_online_within(40.0, 150.0) == 200.0  # the first step past 150 is the answer itself
    # offline in [0, 150]: eligible on [0, 5) only, so 150 - 5 = 145 s (the walk stops at 200 > 150)
    assert OfflineMeter(150.0, [])(eligible) == 145.0
