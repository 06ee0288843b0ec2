"""One contract suite over the server modes (next to the strategy and availability suites): whatever the
mode, availability, battery or late-update rule, a run's files must tell one consistent story.

* events.jsonl is in time order, and every client's tasks follow download -> compute -> upload ->
  arrive, or end in one ``fail`` (with a reason) at any point; a client never runs two tasks at once;
* every aggregated update (updates.csv) has staleness = version - 1 - base_version >= 0 and matches an
  ``arrive`` of that client, from that base version, no later than its aggregation;
* rounds.csv counts add up: sync with ``drop``: selected = received + every failure; K-async: exactly
  K updates per version and never more than ``concurrency`` tasks in flight; sync rounds end by the
  deadline; ``max_staleness`` is never exceeded;
* clients.csv's attempts, participations and failures per reason agree with the event log, and
  summary.json's rounds with rounds.csv.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest
from conftest import events, run, table

BASE = {
    "timing_only": True,
    "data": {"clients": 24},
    "model": {"name": "mlp", "hidden": 32},
    "training": {"local_steps": 4, "batch_size": 8},
    "population": {
        "compute": {"samples_per_s": {"dist": "lognormal", "median": 10, "sigma": 0.8}, "jitter_sigma": 0.2},
        "network": {"uplink_mbps": {"dist": "uniform", "low": 0.5, "high": 5}},
    },
    "eval": {"per_client": False},
    "output": {"plot": False},
}
MARKOV = {"kind": "markov", "p": {"dist": "uniform", "low": 0.3, "high": 1.0}, "mean_cycle_s": 20}
BATTERY = {"capacity_j": 8.0, "joules_per_sample": 0.05, "initial_level": {"dist": "uniform", "low": 0.2, "high": 1},
           "charging": {"period_s": 200.0, "plugged_fraction": 0.3, "charge_w": 0.5}}  # fmt: skip
CASES = {
    "sync_drop_bernoulli": {
        "population": {"availability": {"kind": "bernoulli", "p": {"dist": "uniform", "low": 0.3, "high": 1.0}}},
        "server": {"mode": "sync", "deadline_s": 5.0},
        "stop": {"rounds": 30},
    },
    "sync_next_round_markov_sampled": {
        "population": {"availability": MARKOV},
        "server": {"mode": "sync", "deadline_s": 4.0, "late_updates": "next_round", "clients_per_round": 10},
        "algorithm": {"name": "mifa"},
        "stop": {"rounds": 30},
    },
    "sync_battery_no_deadline": {
        "population": {"availability": MARKOV, "battery": BATTERY},
        "server": {"mode": "sync"},
        "stop": {"rounds": 20},
    },
    "k_async_markov": {
        "population": {"availability": MARKOV},
        "server": {"mode": "k_async", "k": 4, "concurrency": 8},
        "algorithm": {"name": "fedbuff"},
        "stop": {"rounds": 40},
    },
    "k_async_stale_battery_slots": {
        "population": {"availability": {"kind": "bernoulli", "p": 0.7, "slot_s": 3.0}, "battery": BATTERY},
        "server": {"mode": "k_async", "k": 3, "concurrency": 12, "max_staleness": 2},
        "algorithm": {"name": "fedbuff"},
        "stop": {"rounds": 40},
    },
}


# what each case is built to exercise (so that the checks below are not vacuous)
EXERCISES = {
    "sync_drop_bernoulli": {"fail:offline", "fail:deadline"},
    "sync_next_round_markov_sampled": {"fail:offline", "late"},
    "sync_battery_no_deadline": {"fail:offline", "fail:battery"},
    "k_async_markov": {"fail:offline", "late"},
    "k_async_stale_battery_slots": {"fail:offline", "fail:battery", "drop_stale", "late"},
}


def test_every_registered_server_mode_has_cases():
    """A server mode added as a module of asyncfl/sim/servers must be given cases here before the suite passes."""
    from asyncfl.sim.servers import SERVER_MODES

    assert {case["server"]["mode"] for case in CASES.values()} == set(SERVER_MODES)


def _merged(case: dict) -> dict:
    merged = {key: dict(value) if isinstance(value, dict) else value for key, value in BASE.items()}
    for key, value in case.items():
        merged[key] = {**merged.get(key, {}), **value} if isinstance(value, dict) else value
    return merged


@pytest.fixture(scope="module", params=list(CASES))
def case(request, tmp_path_factory):
    spec = _merged(CASES[request.param])
    run_dir = run(tmp_path_factory.mktemp(request.param), **spec)
    seen = {f"fail:{e['reason']}" if e["event"] == "fail" else e["event"] for e in events(run_dir)}
    if any(int(u["staleness"]) > 0 for u in table(run_dir / "updates.csv")):
        seen.add("late")
    assert EXERCISES[request.param] <= seen, EXERCISES[request.param] - seen
    return spec, run_dir


NEXT = {"download": "compute", "compute": "upload", "upload": "arrive"}


def _tasks(log: list[dict]) -> tuple[list[dict], int]:
    """Replay the per-client lifecycle; return every finished task and the most tasks ever in flight."""
    open_tasks: dict[int, dict] = {}
    finished, in_flight_max = [], 0
    for e in log:
        client = e.get("client")
        if client is None:  # server events (aggregate)
            continue
        task = open_tasks.get(client)
        if e["event"] == "drop_stale":
            continue  # told after the arrival; the task has already ended
        if task is None:
            assert e["event"] in ("download", "fail"), f"client {client} starts a task with {e['event']}"
            task = open_tasks[client] = {"client": client, "base": e["round"], "start": e["t"], "last": None}
        else:
            assert e["round"] == task["base"], e
            assert e["event"] == "fail" or e["event"] == NEXT[task["last"]], (task["last"], e)
        if e["event"] == "fail":
            assert e.get("reason") in ("offline", "battery", "deadline"), e
        task["last"] = e["event"]
        if e["event"] in ("arrive", "fail"):
            task.update(end=e["t"], outcome=e.get("reason", "delivered"))
            finished.append(open_tasks.pop(client))
        in_flight_max = max(in_flight_max, len(open_tasks))
    return finished, in_flight_max


def test_events_tell_each_clients_tasks_in_order(case):
    _, run_dir = case
    log = events(run_dir)
    times = [e["t"] for e in log]
    assert times == sorted(times)
    finished, _ = _tasks(log)
    assert finished and any(t["outcome"] == "delivered" for t in finished)


def test_every_aggregated_update_arrived_first(case):
    _, run_dir = case
    finished, _ = _tasks(events(run_dir))
    arrivals = defaultdict(list)
    for task in finished:
        if task["outcome"] == "delivered":
            arrivals[(task["client"], task["base"])].append(task["end"])
    aggregated_at = {int(r["round"]): float(r["time"]) for r in table(run_dir / "rounds.csv")}
    updates = table(run_dir / "updates.csv")
    assert updates
    for u in updates:
        version, base, staleness = int(u["version"]), int(u["base_version"]), int(u["staleness"])
        assert staleness == version - 1 - base >= 0
        # rounds.csv keeps 6 decimals of the time
        assert any(t <= aggregated_at[version] + 1e-6 for t in arrivals[(int(u["client"]), base)]), u


def test_round_counts_add_up(case):
    spec, run_dir = case
    server = spec["server"]
    rounds = table(run_dir / "rounds.csv")
    assert [int(r["round"]) for r in rounds] == list(range(1, len(rounds) + 1))
    times = [float(r["time"]) for r in rounds]
    assert times == sorted(times)
    per_version = Counter(int(u["version"]) for u in table(run_dir / "updates.csv"))
    for r in rounds:
        received, version = int(r["received"]), int(r["round"])
        assert per_version[version] == received
        failures = sum(int(r[f"failed_{why}"]) for why in ("offline", "battery", "deadline"))
        if server["mode"] == "k_async":
            assert received == server["k"] and int(r["selected"]) == 0
            continue
        if server.get("deadline_s") is not None:
            assert float(r["time"]) - float(r["started"]) <= server["deadline_s"] + 1e-9
        if server.get("late_updates", "drop") == "drop":
            assert int(r["selected"]) == received + failures
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["rounds"] == len(rounds) == spec["stop"]["rounds"]


def test_k_async_keeps_concurrency_and_max_staleness(case):
    spec, run_dir = case
    server = spec["server"]
    if server["mode"] != "k_async":
        pytest.skip("K-async only")
    _, in_flight_max = _tasks(events(run_dir))
    assert in_flight_max <= server["concurrency"]
    staleness = [int(u["staleness"]) for u in table(run_dir / "updates.csv")]
    if server.get("max_staleness") is not None:
        assert max(staleness) <= server["max_staleness"]
        assert any(e["event"] == "drop_stale" for e in events(run_dir))  # the case is built to drop some


def test_clients_table_agrees_with_the_event_log(case):
    _, run_dir = case
    finished, _ = _tasks(events(run_dir))
    outcomes = Counter((t["client"], t["outcome"]) for t in finished)
    attempts = Counter(t["client"] for t in finished)
    for row in table(run_dir / "clients.csv"):
        c = int(row["client"])
        assert int(row["attempts"]) >= attempts[c]  # tasks still running at the end count as attempts
        for why in ("offline", "battery", "deadline"):
            assert int(row[f"failed_{why}"]) == outcomes[(c, why)], (c, why)
        assert int(row["participations"]) <= outcomes[(c, "delivered")]
