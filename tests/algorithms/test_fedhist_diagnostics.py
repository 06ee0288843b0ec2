"""FedHist's utility diagnostics (algorithm.diagnostics): how often eqs. 9-13 ran, mean |S|, mean staleness."""

from __future__ import annotations

import math

import pytest
import torch

from asyncfl.algorithms import Context, Update, make_strategy
from asyncfl.algorithms.fedhist_diagnostics import DIAGNOSTICS_FILE
from asyncfl.config.schema import Scenario
from asyncfl.sections import resolved_dump


def fedhist(**kw):
    scenario = {"server": {"mode": "k_async", "k": 2}, "algorithm": {"name": "fedhist", "history": 2, **kw}}
    return Scenario.model_validate(scenario).algorithm


def upd(client, base, staleness, delta=(-1.0, 0.5)):
    return Update(client, torch.tensor(delta, dtype=torch.float64), base, staleness, 10, 1, 1.0)


# h = 2, K = 2: (client, base version, staleness) per round
SCHEDULE = [
    [(0, 0, 0), (1, 0, 0)],  # r0: target -2, nothing to evaluate
    [(2, 0, 1), (3, 1, 0)],  # r1: target -1, nothing to evaluate
    [(0, 1, 1), (1, 1, 1)],  # r2: target 0; S = base 0 in rounds 0-2 = 2 + 1 + 0 = 3
    [(2, 3, 0), (3, 3, 0)],  # r3: target 1; S = base 1 in rounds 1-3 = 1 + 2 + 0 = 3
    [(0, 4, 0), (1, 4, 0)],  # r4: target 2; S = base 2 in rounds 2-4 = 0: no utility evaluated
]


def run(strategy, rounds=SCHEDULE, start=0):
    w = torch.zeros(2, dtype=torch.float64)
    for r, batch in enumerate(rounds, start=start):
        w = strategy.aggregate(w, [upd(*u) for u in batch], Context(version=r, time=float(r), num_clients=4)).params
    return w


def test_diagnostics_of_a_hand_built_schedule():
    """5 rounds, 3 evaluable (r >= h), 2 with |S| > 0: fraction 2/5; mean |S| (3 + 3 + 0)/3 = 2 over the
    evaluable rounds, 6/2 = 3 over the evaluated ones; staleness 0+0 + 1+0 + 1+1 + 0+0 + 0+0 = 3 over 10."""
    s = make_strategy(fedhist(diagnostics=True), 4, torch.zeros(2, dtype=torch.float64))
    run(s)
    assert s.extra_outputs() == {
        DIAGNOSTICS_FILE: [
            {
                "rounds": 5,
                "rounds_evaluable": 3,
                "rounds_evaluated": 2,
                "evaluated_fraction": pytest.approx(0.4),
                "mean_fresh": pytest.approx(2.0),
                "mean_fresh_evaluated": pytest.approx(3.0),
                "mean_staleness": pytest.approx(0.3),
            }
        ]
    }


def test_without_haa_nothing_is_evaluated():
    """The ablation without HAA evaluates no utility: fraction 0, the |S| means undefined (NaN)."""
    s = make_strategy(fedhist(diagnostics=True, haa=False), 4, torch.zeros(2, dtype=torch.float64))
    run(s)
    row = s.extra_outputs()[DIAGNOSTICS_FILE][0]
    assert (row["rounds"], row["rounds_evaluable"], row["rounds_evaluated"], row["evaluated_fraction"]) == (5, 0, 0, 0)
    assert math.isnan(row["mean_fresh"]) and row["mean_staleness"] == pytest.approx(0.3)


def test_diagnostics_change_no_step_and_are_opt_in():
    """Same parameters with and without; off: no file, no state key, no config.yaml key."""
    like = torch.zeros(2, dtype=torch.float64)
    on, off = make_strategy(fedhist(diagnostics=True), 4, like), make_strategy(fedhist(), 4, like)
    assert torch.equal(run(on), run(off))
    assert off.extra_outputs() == {} and "diagnostics" not in off.state_dict()
    assert "diagnostics" not in resolved_dump(fedhist())
    assert resolved_dump(fedhist(diagnostics=True))["diagnostics"] is True


def test_diagnostics_continue_after_a_reload():
    """Round-trip the state after round 2: the counts end as in one uninterrupted run."""
    like = torch.zeros(2, dtype=torch.float64)
    whole = make_strategy(fedhist(diagnostics=True), 4, like)
    run(whole)
    first = make_strategy(fedhist(diagnostics=True), 4, like)
    w = run(first, SCHEDULE[:3])
    second = make_strategy(fedhist(diagnostics=True), 4, like)
    second.load_state_dict(first.state_dict())
    for r, batch in enumerate(SCHEDULE[3:], start=3):
        w = second.aggregate(w, [upd(*u) for u in batch], Context(version=r, time=float(r), num_clients=4)).params
    assert repr(second.extra_outputs()) == repr(whole.extra_outputs())
