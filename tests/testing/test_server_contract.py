"""Every server mode held to the public server-mode contract (asyncfl.testing.server_mode) on its own
examples (``MODE.examples`` in each module of asyncfl/sim/servers/): whatever the mode, availability,
battery or late-update rule, a run's files tell one consistent story (event order and task lifecycles,
updates that arrived before their aggregation, round counts that add up, K-async concurrency and
max_staleness, clients.csv against the event log), and each example exercises what it says."""

from __future__ import annotations

from asyncfl.sim.servers import SERVER_MODES
from asyncfl.testing.parametrize import parametrize_with_checks


@parametrize_with_checks(list(SERVER_MODES.values()))
def test_contract(registration, check):
    check(registration)
