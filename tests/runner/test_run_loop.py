"""The run loop as a SimPy process (asyncfl/runner/simulation.py ``run_loop``), the one a native run and a Flower
ServerApp share: each round a server hands over is closed at its moment and answered (True: stop), and an error of
the round's closing leaves ``env.run`` at once, before anything else of that moment runs."""

from __future__ import annotations

import pytest
import simpy

from asyncfl.runner.simulation import run_loop
from asyncfl.sim.servers import ClosedRound, RoundHandoff


def _server(env, rounds, answers, seen):
    """Closes a round every 2 virtual seconds until the loop answers stop."""
    for number in range(1, 10):
        yield env.timeout(2.0)
        stop = yield rounds.close(ClosedRound(number, env.now - 2.0, env.now))
        answers.append((env.now, stop))
        seen.append("server goes on")
        if stop:
            return


def test_each_closed_round_is_answered_at_its_moment_and_stop_ends_the_server():
    env = simpy.Environment()
    rounds = RoundHandoff(env)
    closed_at, answers, seen = [], [], []

    def close_round(closed: ClosedRound) -> bool:
        closed_at.append((closed.round, env.now))
        return closed.round == 3

    env.process(run_loop(env, rounds, close_round))
    env.run(until=env.process(_server(env, rounds, answers, seen)))
    assert closed_at == [(1, 2.0), (2, 4.0), (3, 6.0)]
    assert answers == [(2.0, False), (4.0, False), (6.0, True)]


def test_an_error_closing_a_round_leaves_the_run_before_the_server_goes_on():
    env = simpy.Environment()
    rounds = RoundHandoff(env)
    answers, seen = [], []

    def close_round(closed: ClosedRound) -> bool:
        if closed.round == 2:
            raise ValueError("a callback failed in round 2")
        return False

    env.process(run_loop(env, rounds, close_round))
    server = env.process(_server(env, rounds, answers, seen))
    with pytest.raises(ValueError, match="round 2"):
        env.run(until=server)
    assert env.now == 4.0 and answers == [(2.0, False)] and seen == ["server goes on"]
