"""Availability, battery and profile models of the timing world, on their own."""

from __future__ import annotations

import numpy as np
import pytest

from asyncfl.sim import availability as av
from asyncfl.sim.battery import DeviceBattery as Battery
from asyncfl.sim.profiles import DeviceProfile


def test_markov_fraction_online_matches_stationary_probability():
    """Time-average of the on state over a long horizon ~ p = on / (on + off)."""
    for p in (0.2, 0.7):
        chain = av.Markov(p, mean_cycle_s=10.0, rng=np.random.default_rng(0))
        grid = np.linspace(0, 20_000, 40_001)
        frac = np.mean([chain.online(t, 0) for t in grid])
        assert frac == pytest.approx(p, abs=0.03)


def test_markov_answers_are_consistent_and_order_independent():
    a = av.Markov(0.5, 10.0, np.random.default_rng(1))
    b = av.Markov(0.5, 10.0, np.random.default_rng(1))
    times = [50.0, 3.0, 17.5, 0.0, 44.4]
    late_first = [a.online(t, 0) for t in times]
    in_order = {t: b.online(t, 0) for t in sorted(times)}
    assert late_first == [in_order[t] for t in times]
    for t in np.linspace(0, 100, 201):
        if a.online(t, 0):
            off = a.next_offline(t, 0)
            assert off > t and a.online((t + off) / 2, 0) and not a.online(off, 0)
        else:
            on = a.next_online(t)
            assert on > t and a.online(on, 0)


def test_cyclic_window_is_exact():
    c = av.Cyclic(p=0.25, period_s=100.0, phase_s=10.0)  # online while (t + 10) % 100 < 25
    assert c.online(0.0, 0) and c.online(14.9, 0) and not c.online(15.0, 0)
    assert c.next_offline(0.0, 0) == pytest.approx(15.0)
    assert c.next_online(15.0) == pytest.approx(90.0)
    assert c.online(90.0, 0)


def test_bernoulli_per_round_frequency_and_stickiness():
    b = av.Bernoulli(0.3, np.random.default_rng(2), slot_s=None)
    freq = np.mean([b.online(0.0, r) for r in range(20_000)])
    assert freq == pytest.approx(0.3, abs=0.015)
    assert b.next_offline(5.0, 3) == float("inf")  # online for the whole round once drawn


def test_bernoulli_slots_in_continuous_time():
    b = av.Bernoulli(0.5, np.random.default_rng(3), slot_s=10.0)
    for t in np.linspace(0, 500, 101):
        if b.online(t, 0):
            off = b.next_offline(t, 0)
            assert off % 10.0 == pytest.approx(0.0) and not b.online(off, 0)
        else:
            assert b.online(b.next_online(t), 0)


def test_trace_intervals():
    tr = av.Trace([(0.0, 5.0), (10.0, 20.0)])
    assert tr.online(4.9, 0) and not tr.online(5.0, 0) and tr.online(10.0, 0)
    assert tr.next_offline(1.0, 0) == 5.0 and tr.next_online(6.0) == 10.0
    assert tr.next_online(25.0) == float("inf")


def test_battery_depletion_and_charging():
    """100 J, plugged for the first 50 s of every 100 s at 1 W (phase 0)."""
    bat = Battery(100.0, 100.0, min_level=0.2, charge_w=1.0, plug_period_s=100.0, plugged_s=50.0)
    # 300 J over [60, 90] (10 W, unplugged) empties 100 J after 10 s.
    assert bat.depletion_time(60.0, 90.0, 300.0) == pytest.approx(70.0)
    # 40 J over [60, 80]: no depletion; applied, level drops to 60 J.
    assert bat.depletion_time(60.0, 80.0, 40.0) is None
    bat.consume(60.0, 80.0, 80.0, 40.0)
    assert bat.level_at(80.0) == pytest.approx(60.0) and bat.used_j == pytest.approx(40.0)
    # idle until 130: plugged on [100, 150) charges 1 W -> +30 J.
    assert bat.level_at(130.0) == pytest.approx(90.0)
    # while plugged a 2 W draw nets 1 W.
    assert bat.depletion_time(130.0, 150.0, 40.0) is None
    bat.consume(130.0, 150.0, 150.0, 40.0)
    assert bat.level_at(150.0) == pytest.approx(70.0)
    assert bat.can_accept(150.0)
    bat.consume(150.0, 160.0, 160.0, 60.0)
    assert bat.level_at(160.0) == pytest.approx(10.0) and not bat.can_accept(160.0)


def test_profile_durations():
    p = DeviceProfile(samples_per_s=50, uplink_bytes_per_s=1e6, downlink_bytes_per_s=2e6, latency_s=0.1)
    assert p.compute_s(100) == 2.0 and p.compute_s(100, jitter=1.5) == 3.0
    assert p.upload_s(500_000) == pytest.approx(0.6) and p.download_s(500_000) == pytest.approx(0.35)


def test_streams_are_distinct_for_every_key():
    from asyncfl.seeding import stream

    keys = [("availability",), ("availability", 0), ("availability", 0, 0), ("availability", 1), ("jitter", 0)]
    draws = {k: stream(5, *k).random() for k in keys}
    assert len(set(draws.values())) == len(keys)
    assert stream(5, "availability", 3).random() == stream(5, "availability", 3).random()


def _availability_model(kind: str, p: float):
    """One availability kind built with probability p (cluster dropout: alpha = 1 - p)."""
    rng = np.random.default_rng
    build = {
        "bernoulli_round": lambda: av.Bernoulli(p, rng(0), slot_s=None),
        "bernoulli_slot": lambda: av.Bernoulli(p, rng(1), slot_s=10.0),
        "markov": lambda: av.Markov(p, 20.0, rng(2)),
        "markov_rounds": lambda: av.MarkovRounds(p, 4.0, rng(3)),
        "cyclic": lambda: av.Cyclic(p, 50.0, 7.0),
        "cyclic_rounds": lambda: av.CyclicRounds(p, 5, 2),
        "cluster_dropout": lambda: av.ClusterDropout(
            av.DropoutSchedule(1.0 - p, np.zeros(4, dtype=np.int64), lambda r: rng(100 + r)), 1
        ),
    }
    return build[kind]()


ROUND_KINDS = ("bernoulli_round", "markov_rounds", "cyclic_rounds", "cluster_dropout")
TIME_KINDS = ("bernoulli_slot", "markov", "cyclic")


@pytest.mark.parametrize("kind", ROUND_KINDS + TIME_KINDS)
def test_p_one_means_always_online(kind):
    """Issue 11.1/11.2: p = 1 is online at every time and round and never drops.  Bernoulli slots
    used to search forever for an offline slot; continuous Markov used to fall into an offline
    state of infinite length after its first online period (zero mean offline time)."""
    model = _availability_model(kind, 1.0)
    for t in np.linspace(0.0, 5_000.0, 2_001):
        rnd = int(t) // 10
        assert model.online(t, rnd)
        assert model.next_offline(t, rnd) == float("inf")
        assert model.next_online(t) == t


@pytest.mark.parametrize("kind", [k for k in ROUND_KINDS + TIME_KINDS if k != "cluster_dropout"])
def test_p_zero_means_never_online(kind):
    """p = 0 (refused at validation, see test_config, but defined for the models): never online,
    and the continuous-time models say so instead of naming a next online time that is not one."""
    model = _availability_model(kind, 0.0)
    for t in np.linspace(0.0, 5_000.0, 2_001):
        rnd = int(t) // 10
        assert not model.online(t, rnd)
        if kind in TIME_KINDS:
            assert model.next_offline(t, rnd) == t
            assert model.next_online(t) == float("inf")


def test_cluster_dropout_alpha_zero_drops_nobody():
    schedule = av.DropoutSchedule(0.0, np.arange(6) % 2, lambda r: np.random.default_rng(r))
    assert all(schedule.dropped(r) == frozenset() for r in range(50))
