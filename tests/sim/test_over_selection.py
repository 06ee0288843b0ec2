"""Over-selection (server.over_selection; Bonawitz et al. 2019, FedScale's over-commitment) against
hand-computed times: a 5-client federation whose every task time is known in advance.

Setup (logreg on digits: 650 float32 parameters = 2,600 bytes; as in test_timing.py):
  links 8 Mbit/s = 1e6 bytes/s both ways, latency 0.5 s  => each transfer = 0.5 + 0.0026 = 0.5026 s
  2 local steps x batch 8 = 16 samples per task          => compute = 16 / speed
  speeds 100, 50, 25, 20, 10 samples/s                   => compute 0.16, 0.32, 0.64, 0.8, 1.6 s
  arrival = 0.5026 + compute + 0.5026                    => 1.1652, 1.3252, 1.6452, 1.8052, 2.6052 s
clients_per_round M = 2, over_selection 1.5: ceil((1 + 1.5) * 2) = 5 clients asked, all of them.
The round closes at the 2nd arrival, t_M = 1.3252 (client 1); clients 2, 3, 4 are cancelled there:
  client 2: compute [0.5026, 1.1426], upload from 1.1426 => lost 1.3252 s, of which computing 0.64
  client 3: compute [0.5026, 1.3026], upload from 1.3026 => lost 1.3252 s, of which computing 0.8
  client 4: compute [0.5026, 2.1026]: cut in compute    => lost 1.3252 s, of which 1.3252 - 0.5026 = 0.8226
"""

from __future__ import annotations

import pytest
from conftest import events, run, scenario, table

from asyncfl.errors import ConfigError
from asyncfl.runner import start
from asyncfl.runner.simulation import Simulation
from asyncfl.sim.servers.sync import asked
from tests.runner.test_resume import _kill_at_event, _same_results

TRANSFER = 0.5026
COMPUTE = (0.16, 0.32, 0.64, 0.8, 1.6)
CLOSE = 2 * TRANSFER + COMPUTE[1]  # 1.3252
LOST_COMPUTE = (0.64, 0.8, CLOSE - TRANSFER)  # clients 2, 3, 4


@pytest.fixture
def trace(device_trace):
    return device_trace([(i, speed, 8, 8, 0.5) for i, speed in enumerate((100, 50, 25, 20, 10))])


def _sections(trace, **server):
    return dict(
        data={"dataset": "digits", "clients": 5},
        model={"name": "logreg"},
        training={"local_steps": 2, "batch_size": 8, "lr": 0.1},
        population={"device_trace": str(trace), "network": {"latency_s": 0.5}},
        server={"mode": "sync", "clients_per_round": 2, "over_selection": 1.5, **server},
        eval={"per_client": False},
        output={"plot": False},
        stop={"rounds": 2},
    )


def test_asked_is_ceil_of_one_plus_o_times_m():
    assert asked(10, 0.3) == 13  # (1 + 0.3) * 10 = 13.000000000000002 in floating point: still 13
    assert asked(10, 0.25) == 13  # 12.5 -> 13
    assert asked(2, 1.5) == 5
    assert asked(7, 0.0) == 7 and asked(None, 0.0) is None


def test_round_closes_at_the_m_th_arrival_and_cancels_the_rest(tmp_path, trace):
    run_dir = run(tmp_path, **_sections(trace))
    rounds = table(run_dir / "rounds.csv")
    assert [float(r["time"]) for r in rounds] == pytest.approx([CLOSE, 2 * CLOSE], abs=1e-9)
    assert [(r["selected"], r["received"], r["late"], r["failed_cancelled"]) for r in rounds] == [
        ("5", "2", "0", "3")
    ] * 2
    assert [float(r["lost_s"]) for r in rounds] == pytest.approx([3 * CLOSE] * 2, abs=1e-9)
    assert [float(r["lost_compute_s"]) for r in rounds] == pytest.approx([sum(LOST_COMPUTE)] * 2, abs=1e-9)
    round0 = [e for e in events(run_dir) if e.get("base_version") == 0]
    fails = sorted((e["client"], e["t"], e["reason"]) for e in round0 if e["event"] == "fail")
    assert [(c, why) for c, _, why in fails] == [(2, "cancelled"), (3, "cancelled"), (4, "cancelled")]
    assert [t for _, t, _ in fails] == pytest.approx([CLOSE] * 3, abs=1e-9)
    uploads = sorted(e["client"] for e in round0 if e["event"] == "upload")
    assert uploads == [0, 1, 2, 3]  # client 4 was cancelled computing: its upload never starts
    arrivals = sorted(e["client"] for e in round0 if e["event"] == "arrive")
    assert arrivals == [0, 1]
    # like deadline failures, the cancels are counted in the round that closes at their time
    assert [int(r["failed_cancelled"]) for r in rounds] == [3, 3]
    clients = table(run_dir / "clients.csv")
    assert [int(c["failed_cancelled"]) for c in clients] == [0, 0, 2, 2, 2]
    assert [int(c["participations"]) for c in clients] == [2, 2, 0, 0, 0]
    lost = [float(c["lost_compute_s"]) for c in clients]
    assert lost == pytest.approx([0.0, 0.0, *(2 * x for x in LOST_COMPUTE)], abs=1e-9)
    # compute_s counts only what was done before the cancel: clients 0, 1 their whole compute
    assert [float(c["compute_s"]) for c in clients] == pytest.approx(
        [2 * COMPUTE[0], 2 * COMPUTE[1], *(2 * x for x in LOST_COMPUTE)], abs=1e-9
    )


def test_cancelled_tasks_are_never_trained(tmp_path, trace):
    """Only the M = 2 received updates per round become training jobs (5 without over-selection)."""
    for over, expected in ((1.5, 2 * 2), (0.0, 2 * 2)):
        folder = tmp_path / f"o{over}"
        folder.mkdir()
        simulation = Simulation(scenario(**_sections(trace, over_selection=over)), folder)
        simulation.run()
        assert simulation.learner.jobs.computed == expected
    # the whole population asked without a sample size: 5 jobs a round
    folder = tmp_path / "all"
    folder.mkdir()
    sections = _sections(trace, over_selection=0.0, clients_per_round=None)
    simulation = Simulation(scenario(**sections), folder)
    simulation.run()
    assert simulation.learner.jobs.computed == 2 * 5


def test_deadline_before_the_m_th_arrival_closes_as_usual(tmp_path, trace):
    """M = 4: the 4th arrival (1.8052) is after the 1.5 s deadline, which closes the round: nothing is
    cancelled, clients 2, 3, 4 fail by the deadline (late_updates: drop)."""
    run_dir = run(tmp_path, **_sections(trace, clients_per_round=4, over_selection=0.25, deadline_s=1.5))
    rounds = table(run_dir / "rounds.csv")
    assert float(rounds[0]["time"]) == pytest.approx(1.5)
    assert (rounds[0]["selected"], rounds[0]["received"], rounds[0]["failed_deadline"]) == ("5", "2", "3")
    assert rounds[0]["failed_cancelled"] == "0"


def test_carried_over_updates_do_not_count_toward_m(tmp_path, trace):
    """late_updates: next_round, M = 4, o = 0.25 (5 asked), deadline 1.5 s.
    Round 0 (t0 = 0) asks all 5; the deadline comes before the 4th arrival (1.8052): it closes at 1.5
    with clients 0, 1; clients 2, 3, 4 run on into round 1 (arriving 1.6452, 1.8052, 2.6052).
    Round 1 (t0 = 1.5) asks the idle clients 0, 1: fresh arrivals 1.5 + 1.1652 = 2.6652 and
    1.5 + 1.3252 = 2.8252.  Counting the carried-over updates, the 4th arrival of the round would be
    client 0's at 2.6652 (and client 1 would be cancelled); they do not count, so the round waits for
    its own two tasks (fewer than M: no cancel) and closes when both answered, at 2.8252, with 5 updates."""
    sections = _sections(trace, clients_per_round=4, over_selection=0.25, deadline_s=1.5, late_updates="next_round")
    run_dir = run(tmp_path, **sections)
    rounds = table(run_dir / "rounds.csv")
    assert [float(r["time"]) for r in rounds] == pytest.approx([1.5, 1.5 + CLOSE], abs=1e-9)
    assert [(r["selected"], r["received"], r["late"], r["failed_cancelled"]) for r in rounds] == [
        ("5", "2", "3", "0"),
        ("2", "5", "0", "0"),
    ]
    assert not any(e.get("reason") == "cancelled" for e in events(run_dir))
    arrivals = sorted((e["t"], e["client"]) for e in events(run_dir) if e["event"] == "arrive" and e["t"] > 1.5)
    assert [c for _, c in arrivals] == [2, 3, 4, 0, 1]
    assert [t for t, _ in arrivals] == pytest.approx([1.6452, 1.8052, 2.6052, 2.6652, 2.8252], abs=1e-9)


def test_over_selection_is_off_by_default_and_adds_no_column(tmp_path, trace):
    run_dir = run(tmp_path, **_sections(trace, over_selection=0.0, clients_per_round=None))
    assert "failed_cancelled" not in table(run_dir / "rounds.csv")[0]
    assert not any(e.get("reason") == "cancelled" for e in events(run_dir))


@pytest.mark.parametrize(
    "server, words",
    [
        ({"over_selection": 0.3}, "needs server.clients_per_round"),
        ({"mode": "k_async", "over_selection": 0.3}, "used only with server.mode sync"),
        ({"over_selection": -0.1, "clients_per_round": 3}, "server.over_selection"),
    ],
)
def test_contradictions_are_refused_with_the_reason(server, words):
    with pytest.raises(ConfigError, match=words):
        scenario(data={"clients": 10}, server=server)


def test_over_selection_with_batteries_is_refused():
    battery = {"capacity_j": 8.0, "joules_per_sample": 0.05}
    with pytest.raises(ConfigError, match="population.battery"):
        scenario(
            data={"clients": 10},
            server={"clients_per_round": 3, "over_selection": 0.3},
            population={"battery": battery},
        )


def test_resume_after_a_kill_gives_identical_results(tmp_path, monkeypatch):
    """Over-selection with random speeds, intermittent clients and a deadline, killed at several
    moments and resumed: the same files as the run that was never killed."""
    sections = dict(
        data={"dataset": "digits", "clients": 10},
        model={"name": "logreg"},
        training={"local_steps": 3},
        population={
            "compute": {"samples_per_s": {"dist": "lognormal", "median": 40, "sigma": 0.8}, "jitter_sigma": 0.2},
            "availability": {"kind": "markov", "p": 0.7, "mean_cycle_s": 20},
        },
        server={"mode": "sync", "deadline_s": 5.0, "clients_per_round": 4, "over_selection": 0.5},
        algorithm={"name": "fedavg", "record_weights": True},
        stop={"rounds": 10},
        checkpoint={"every_rounds": 3, "min_wall_s": 0},
        output={"plot": False},
    )
    s = scenario(**sections)
    reference = start.run_scenario(s, tmp_path / "reference")
    assert sum(int(r["failed_cancelled"]) for r in table(reference / "rounds.csv")) > 0
    lines = (reference / "events.jsonl").read_text().splitlines()
    total = sum('"event":"aggregate"' not in line for line in lines)
    for n in (5, total // 2, total - 3):
        run_dir = tmp_path / f"killed_at_{n}"
        assert _kill_at_event(monkeypatch, s, run_dir, n)
        start.resume_run(run_dir)
        _same_results(reference, run_dir)
