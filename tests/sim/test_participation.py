"""Participation patterns of the papers as availability kinds: label-correlated p (FedAU), per-round
Markov and cyclic patterns (FedAU), cluster dropout (FL-FDMS).  Seeded statistical checks."""

from __future__ import annotations

import numpy as np
import pytest

from asyncfl.config import ConfigError, validate_scenario
from asyncfl.sim import availability as av
from asyncfl.sim.population import build_availability, participation_probabilities


def spec(**availability):
    return validate_scenario({"population": {"availability": availability}}).population.availability


def frequencies(models, rounds: int) -> np.ndarray:
    return np.array([[m.online(0.0, r) for r in range(rounds)] for m in models]).mean(axis=1)


def test_label_correlated_probabilities_follow_the_formula():
    # a client with a uniform histogram gets max(0.02, 0.1 * L * sum_l m_l / L) = 0.1 whatever m is
    hist = np.vstack([np.full(10, 0.1), np.eye(10)])
    a = spec(kind="bernoulli", p={"dist": "label_correlated"})
    p = participation_probabilities(a, 11, seed=3, label_histograms=hist)
    assert p[0] == pytest.approx(0.1)
    assert min(p) >= 0.02 and max(p) <= 1.0
    # nearly uniform m (Dirichlet(1000)): no floor, one-hot clients get 0.1 * L * m_l, summing to 0.1 * L
    b = spec(kind="bernoulli", p={"dist": "label_correlated", "dirichlet_alpha": 1000})
    p = participation_probabilities(b, 11, seed=3, label_histograms=hist)
    assert sum(p[1:]) == pytest.approx(1.0) and min(p[1:]) > 0.02


def test_label_correlated_needs_histograms():
    with pytest.raises(ConfigError, match="label histograms"):
        participation_probabilities(spec(kind="bernoulli", p={"dist": "label_correlated"}), 4, seed=0)


def test_label_correlated_bernoulli_frequency_near_p():
    hist = np.random.default_rng(0).dirichlet(np.full(10, 0.3), size=40)
    a = spec(kind="bernoulli", p={"dist": "label_correlated"})
    p = np.array(participation_probabilities(a, 40, seed=1, label_histograms=hist))
    freq = frequencies(build_availability(a, 40, seed=1, label_histograms=hist), 3000)
    assert np.abs(freq - p).max() < 4 * np.sqrt(0.25 / 3000)


def test_markov_rounds_stationary_frequency_and_run_lengths():
    p, cycle = 0.3, 20.0
    models = [av.MarkovRounds(p, cycle, np.random.default_rng(i)) for i in range(300)]
    states = np.array([[m.online(0.0, r) for r in range(400)] for m in models])
    assert states[:, 0].mean() == pytest.approx(p, abs=0.08)  # initial state ~ Bernoulli(p)
    assert states.mean() == pytest.approx(p, abs=0.02)
    # mean online run = p * C = 6 rounds, offline run = (1 - p) * C = 14
    flips = np.diff(states.astype(int), axis=1)
    assert (states[:, :-1] & (flips == -1)).sum() / states[:, :-1].sum() == pytest.approx(1 / 6, rel=0.1)
    assert ((~states[:, :-1]) & (flips == 1)).sum() / (~states[:, :-1]).sum() == pytest.approx(1 / 14, rel=0.1)


def test_markov_rounds_short_cycle_is_lengthened_and_keeps_p():
    m = av.MarkovRounds(0.1, 2.0, np.random.default_rng(0))  # C raised to 1/0.1 = 10
    assert m.leave_on == pytest.approx(1.0) and m.leave_off == pytest.approx(1 / 9)
    assert np.mean([m.online(0.0, r) for r in range(20000)]) == pytest.approx(0.1, abs=0.015)


def test_cyclic_rounds_active_p_of_each_period_with_random_phase():
    a = spec(kind="cyclic", p={"dist": "uniform", "low": 0.1, "high": 0.9}, period_rounds=20)
    models = build_availability(a, 30, seed=2)
    p = participation_probabilities(a, 30, seed=2)
    for m, pi in zip(models, p):
        on = [m.online(0.0, r) for r in range(100)]
        assert sum(on[:20]) == sum(on[20:40]) == max(1, round(pi * 20))
        assert on[:20] == on[20:40]
    assert len({m.phase for m in models}) > 5


def test_cluster_dropout_drops_alpha_n_and_keeps_every_cluster():
    clusters = np.repeat(np.arange(5), 4)
    a = spec(kind="cluster_dropout", alpha=0.7)
    models = build_availability(a, 20, seed=0, clusters=clusters)
    online = np.array([[m.online(0.0, r) for m in models] for r in range(2000)])
    assert np.all((~online).sum(axis=1) == 14)
    for c in range(5):
        assert np.all(online[:, clusters == c].any(axis=1))
    assert np.abs(online.mean(axis=0) - 0.3).max() < 0.05  # symmetric clusters: every client ~ 1 - alpha
    assert participation_probabilities(a, 20, seed=0) == [pytest.approx(0.3)] * 20


def test_cluster_dropout_caps_at_one_survivor_per_cluster_and_is_order_independent():
    clusters = np.array([0, 0, 1, 1, 2, 2])
    models = build_availability(spec(kind="cluster_dropout", alpha=0.9), 6, seed=4, clusters=clusters)
    forward = [[m.online(0.0, r) for m in models] for r in range(50)]
    backward = [[m.online(0.0, r) for m in models] for r in reversed(range(50))][::-1]
    assert forward == backward
    assert all(sum(row) == 3 and all(row[2 * c] != row[2 * c + 1] for c in range(3)) for row in forward)


def test_cluster_dropout_without_clusters_keeps_one_client():
    models = build_availability(spec(kind="cluster_dropout", alpha=0.5), 4, seed=0)
    assert all(sum(m.online(0.0, r) for m in models) == 2 for r in range(20))
    models = build_availability(spec(kind="cluster_dropout", alpha=0.99), 3, seed=0)
    assert all(sum(m.online(0.0, r) for m in models) == 1 for r in range(20))


def test_schema_needs_exactly_one_time_unit():
    with pytest.raises(ConfigError, match="exactly one"):
        spec(kind="markov", p=0.5, mean_cycle_s=10, mean_cycle_rounds=10)
    with pytest.raises(ConfigError, match="exactly one"):
        spec(kind="cyclic", p=0.5)
    with pytest.raises(ConfigError, match="alpha"):
        spec(kind="cluster_dropout", alpha=1.0)
