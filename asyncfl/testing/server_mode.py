"""The server-mode contract as plain checks, run on a mode's own examples (``MODE.examples``, each a set
of scenario sections over the timing-only :data:`BASE`): whatever the mode, availability, battery or
late-update rule, a run's files must tell one consistent story.

* events.jsonl is in time order, and every client's tasks follow download -> compute -> upload ->
  arrive, or end in one ``fail`` (with a reason) at any point; a client never runs two tasks at once;
* every aggregated update (updates.csv) has staleness = version - 1 - base_version >= 0 and matches an
  ``arrive`` of that client, from that base version, no later than its aggregation;
* rounds.csv counts add up: round-based modes with ``drop``: selected = received + every failure; other
  modes: exactly K updates per version and never more than ``concurrency`` tasks in flight; rounds end
  by the deadline; ``max_staleness`` is never exceeded;
* clients.csv's attempts, participations and failures per reason agree with the event log, and
  summary.json's rounds with rounds.csv;
* each example exercises what it says it does (so that the checks are not vacuous).

Each example runs once per process (the runs are kept in a temporary folder until it exits).  The mode
must be one of the schema's (``server.mode``): its examples are scenarios.
"""

from __future__ import annotations

import csv
import functools
import json
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

from asyncfl.config import validate_scenario
from asyncfl.output.reading import read_summary
from asyncfl.runner.start import run_scenario
from asyncfl.sim.servers import SERVER_MODES, ServerMode
from asyncfl.testing.suite import CheckOutcome, example_cases, expected_failures, names, run_checks

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
REASONS = ("offline", "battery", "deadline", "cancelled")  # failed_cancelled: only with over-selection


def mode_of(mode: str | ServerMode) -> ServerMode:
    name = mode.name if isinstance(mode, ServerMode) else mode
    if name not in SERVER_MODES:
        raise ValueError(f"no server mode named {name!r} in the schema; registered: {', '.join(SERVER_MODES)}")
    return SERVER_MODES[name]


def merged(sections: dict) -> dict:
    """The example's sections over :data:`BASE` (one level deep)."""
    out = {key: dict(value) if isinstance(value, dict) else value for key, value in BASE.items()}
    for key, value in sections.items():
        out[key] = {**out.get(key, {}), **value} if isinstance(value, dict) else value
    return out


@functools.cache
def _runs_folder() -> tempfile.TemporaryDirectory:
    """Where the examples run: made on first use, removed when the process exits."""
    return tempfile.TemporaryDirectory(prefix="asyncfl-server-checks-")


@functools.cache
def example_run(mode_name: str, example: str) -> tuple[dict, Path]:
    """(the scenario's sections, its run directory): the example run once."""
    sections = {name: spec for name, spec, _ in SERVER_MODES[mode_name].examples}[example]
    spec = merged(sections)
    out = Path(_runs_folder().name) / f"{mode_name}-{example}"
    run_dir = run_scenario(validate_scenario(spec, source="<check>"), out, quiet=True)
    return spec, run_dir


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def table(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _runs(mode, example: str | None) -> Iterator[tuple[ServerMode, str, dict, Path]]:
    mode = mode_of(mode)
    names = [name for name, _, _ in mode.examples if example is None or name == example]
    assert names, (
        f"server mode {mode.name!r} has no example {example!r}"
        if example
        else (f"server mode {mode.name!r} registers no examples (ServerMode.examples)")
    )
    for name in names:
        spec, run_dir = example_run(mode.name, name)
        yield mode, name, spec, run_dir


NEXT = {"download": "compute", "compute": "upload", "upload": "arrive"}


def tasks(log: list[dict]) -> tuple[list[dict], int]:
    """Replay the per-client lifecycle; return every finished task and the most tasks ever in flight."""
    open_tasks: dict[int, dict] = {}
    finished, in_flight_max = [], 0
    for e in log:
        client = e.get("client")
        if client is None or e["event"] == "drop_stale":  # server events; told after the task has ended
            continue
        task = open_tasks.get(client)
        if task is None:
            assert e["event"] in ("download", "fail"), f"client {client} starts a task with {e['event']}"
            task = open_tasks[client] = {"client": client, "base": e["base_version"], "start": e["t"], "last": None}
        else:
            assert e["base_version"] == task["base"], f"client {client} runs two tasks at once: {e}"
            assert e["event"] == "fail" or e["event"] == NEXT[task["last"]], f"{task['last']} then {e}"
        if e["event"] == "fail":
            assert e.get("reason") in REASONS, f"a failure without a known reason: {e}"
        task["last"] = e["event"]
        if e["event"] in ("arrive", "fail"):
            task.update(end=e["t"], outcome=e.get("reason", "delivered"))
            finished.append(open_tasks.pop(client))
        in_flight_max = max(in_flight_max, len(open_tasks))
    return finished, in_flight_max


def check_examples_are_declared(mode, example: str | None = None) -> None:
    mode = mode_of(mode)
    assert mode.examples, f"server mode {mode.name!r} registers no examples (ServerMode.examples)"
    for name, sections, _ in mode.examples:
        assert sections.get("server", {}).get("mode") == mode.name, f"{mode.name}: example {name!r} is another mode's"


def check_example_exercises_what_it_says(mode, example: str | None = None) -> None:
    for _, name, _, run_dir in _runs(mode, example):
        seen = {f"fail:{e['reason']}" if e["event"] == "fail" else e["event"] for e in events(run_dir)}
        if any(int(u["staleness"]) > 0 for u in table(run_dir / "updates.csv")):
            seen.add("late")
        wanted = {n: w for n, _, w in mode_of(mode).examples}[name]
        assert wanted <= seen, f"{name}: the run never shows {sorted(wanted - seen)}"


def check_events_tell_each_clients_tasks_in_order(mode, example: str | None = None) -> None:
    for _, name, _, run_dir in _runs(mode, example):
        log = events(run_dir)
        times = [e["t"] for e in log]
        assert times == sorted(times), f"{name}: events.jsonl is not in time order"
        finished, _ = tasks(log)
        assert finished and any(t["outcome"] == "delivered" for t in finished), f"{name}: no task delivered"


def check_every_aggregated_update_arrived_first(mode, example: str | None = None) -> None:
    for _, name, _, run_dir in _runs(mode, example):
        finished, _ = tasks(events(run_dir))
        arrivals = defaultdict(list)
        for task in finished:
            if task["outcome"] == "delivered":
                arrivals[(task["client"], task["base"])].append(task["end"])
        aggregated_at = {int(r["round"]): float(r["time"]) for r in table(run_dir / "rounds.csv")}
        updates = table(run_dir / "updates.csv")
        assert updates, f"{name}: updates.csv is empty"
        for u in updates:
            version, base, staleness = int(u["round"]), int(u["base_version"]), int(u["staleness"])
            assert staleness == version - 1 - base >= 0, f"{name}: staleness is not round - 1 - base_version: {u}"
            # rounds.csv keeps 6 decimals of the time
            assert any(t <= aggregated_at[version] + 1e-6 for t in arrivals[(int(u["client"]), base)]), (
                f"{name}: an update aggregated before it arrived: {u}"
            )


def check_round_counts_add_up(mode, example: str | None = None) -> None:
    for mode_, name, spec, run_dir in _runs(mode, example):
        server = spec["server"]
        rounds = table(run_dir / "rounds.csv")
        assert [int(r["round"]) for r in rounds] == list(range(1, len(rounds) + 1)), f"{name}: rounds skip"
        times = [float(r["time"]) for r in rounds]
        assert times == sorted(times), f"{name}: rounds.csv is not in time order"
        per_version = Counter(int(u["round"]) for u in table(run_dir / "updates.csv"))
        for r in rounds:
            received, version = int(r["received"]), int(r["round"])
            assert per_version[version] == received, f"{name}: round {version} received {received}, updates.csv says"
            failures = sum(int(r.get(f"failed_{why}", 0)) for why in REASONS)
            if not mode_.rounds:  # K updates per aggregation, nobody selected
                assert received == server["k"] and int(r["selected"]) == 0, f"{name}: not K updates: {r}"
                continue
            if server.get("deadline_s") is not None:
                assert float(r["time"]) - float(r["started"]) <= server["deadline_s"] + 1e-9, f"{name}: late: {r}"
            if server.get("late_updates", "drop") == "drop":
                assert int(r["selected"]) == received + failures, f"{name}: selected != received + failed: {r}"
        summary = read_summary(run_dir)
        assert summary["rounds"] == len(rounds) == spec["stop"]["rounds"], f"{name}: summary.json's rounds differ"


def check_concurrency_and_max_staleness_are_kept(mode, example: str | None = None) -> None:
    """For examples that bound the tasks in flight (``server.concurrency``)."""
    for _, name, spec, run_dir in _runs(mode, example):
        server = spec["server"]
        if "concurrency" not in server:
            continue
        _, in_flight_max = tasks(events(run_dir))
        assert in_flight_max <= server["concurrency"], f"{name}: {in_flight_max} tasks in flight at once"
        staleness = [int(u["staleness"]) for u in table(run_dir / "updates.csv")]
        if server.get("max_staleness") is not None:
            assert max(staleness) <= server["max_staleness"], f"{name}: staleness {max(staleness)} aggregated"
            assert any(e["event"] == "drop_stale" for e in events(run_dir)), f"{name}: built to drop, dropped none"


def check_clients_table_agrees_with_the_event_log(mode, example: str | None = None) -> None:
    for _, name, _, run_dir in _runs(mode, example):
        finished, _ = tasks(events(run_dir))
        outcomes = Counter((t["client"], t["outcome"]) for t in finished)
        attempts = Counter(t["client"] for t in finished)
        for row in table(run_dir / "clients.csv"):
            c = int(row["client"])
            assert int(row["attempts"]) >= attempts[c], f"{name}: client {c}"  # tasks running at the end count
            for why in REASONS:
                assert int(row.get(f"failed_{why}", 0)) == outcomes[(c, why)], f"{name}: client {c}'s failed_{why}"
            assert int(row["participations"]) <= outcomes[(c, "delivered")], f"{name}: client {c}'s participations"


MODE_CHECKS: tuple[Callable, ...] = (check_examples_are_declared,)  # once per mode
EXAMPLE_CHECKS: tuple[Callable, ...] = (
    check_example_exercises_what_it_says,
    check_events_tell_each_clients_tasks_in_order,
    check_every_aggregated_update_arrived_first,
    check_round_counts_add_up,
    check_clients_table_agrees_with_the_event_log,
)
ALL_CHECKS = MODE_CHECKS + EXAMPLE_CHECKS + (check_concurrency_and_max_staleness_are_kept,)


def checks_of(mode) -> Iterator[tuple[str | None, Callable]]:
    """(example name or None for the whole mode, check): every check that applies to the mode."""
    mode = mode_of(mode)
    for check in MODE_CHECKS:
        yield None, check
    for name, sections, _ in mode.examples:
        for check in EXAMPLE_CHECKS:
            yield name, check
        if "concurrency" in sections.get("server", {}):
            yield name, check_concurrency_and_max_staleness_are_kept


def check_server_mode(mode, *, expected_failed_checks: dict[str, str] | None = None) -> list[CheckOutcome]:
    """Run every server-mode check on one mode (its name or registration) over all its examples;
    raises AssertionError on the first broken contract, except for the checks in ``expected_failed_checks``
    ({check name: why}: reported as ``xfail``, see :mod:`asyncfl.testing.suite`)."""
    registration = mode_of(mode)
    expected = expected_failures(expected_failed_checks, names(ALL_CHECKS), f"a server mode ({registration.name})")
    return run_checks(example_cases(registration, checks_of(registration)), expected)
