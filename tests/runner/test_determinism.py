"""Same scenario + same seed => same events and same metrics (wall_seconds aside)."""

from __future__ import annotations

import pytest
from conftest import run, table

SCENARIOS = {
    "sync": dict(
        data={"dataset": "digits", "clients": 12, "partition": {"kind": "dirichlet", "alpha": 0.5}},
        population={
            "compute": {"samples_per_s": {"dist": "lognormal", "median": 50, "sigma": 0.8}, "jitter_sigma": 0.3},
            "availability": {"kind": "bernoulli", "p": {"dist": "uniform", "low": 0.3, "high": 1.0}},
        },
        server={"mode": "sync", "deadline_s": 9.0, "clients_per_round": 8, "late_updates": "next_round"},
        stop={"rounds": 6},
        output={"plot": False},  # figures: not what is compared
    ),
    "k_async": dict(
        data={"dataset": "digits", "clients": 12},
        population={
            "compute": {"samples_per_s": {"dist": "pareto", "scale": 20, "shape": 1.5}, "jitter_sigma": 0.2},
            "availability": {"kind": "markov", "p": 0.6, "mean_cycle_s": 30},
            "battery": {"capacity_j": 50, "joules_per_sample": 0.02, "charging": {"period_s": 100}},
        },
        server={"mode": "k_async", "k": 3, "concurrency": 5, "max_staleness": 3},
        stop={"rounds": 8},
        output={"plot": False},
    ),
}


def _strip_wall(rows):
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in rows]


@pytest.mark.parametrize("mode", sorted(SCENARIOS))
def test_same_seed_same_events_and_metrics(tmp_path, mode):
    first = run(tmp_path, "a", seed=3, **SCENARIOS[mode])
    second = run(tmp_path, "b", seed=3, **SCENARIOS[mode])
    assert (first / "events.jsonl").read_bytes() == (second / "events.jsonl").read_bytes()
    for name in ("rounds.csv", "clients.csv"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    assert _strip_wall(table(first / "metrics.csv")) == _strip_wall(table(second / "metrics.csv"))
    assert len(table(first / "metrics.csv")) > 2


@pytest.mark.slow
def test_other_seed_other_events(tmp_path):
    first = run(tmp_path, "a", seed=1, **SCENARIOS["k_async"])
    second = run(tmp_path, "b", seed=2, **SCENARIOS["k_async"])
    assert (first / "events.jsonl").read_bytes() != (second / "events.jsonl").read_bytes()
