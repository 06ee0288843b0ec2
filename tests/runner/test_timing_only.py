"""timing_only runs, event sampling and the grouped task player (docs/explanation/architecture.md section 7).

A timing-only run must be the full run's clock world without the training: same events.jsonl line
for line when every client holds at least one full batch.  The sync server's grouped player must
log exactly what one SimPy process per task logs, and a sampled event log must be the full log
filtered to the sampled clients.
"""

from __future__ import annotations

import json

import pytest
import torch

import asyncfl.sim.servers.sync as sync_server
from asyncfl.config.loading import validate_scenario
from asyncfl.learn.datasets import dataset_spec
from asyncfl.learn.federation import build_federation, client_train_sizes
from asyncfl.learn.models import build_model
from asyncfl.output.reading import read_csv
from asyncfl.runner.parts import timing_model_bytes
from asyncfl.runner.start import run_scenario
from asyncfl.sim.clients import run_task

BASE = {
    "name": "clock",
    "data": {"dataset": "digits", "clients": 10},  # about 115 training samples each: full batches of 32
    "model": {"name": "mlp", "hidden": 50},
    "training": {"local_steps": 5},
    "population": {
        "compute": {"samples_per_s": {"dist": "lognormal", "median": 80, "sigma": 0.8}, "jitter_sigma": 0.2},
        "network": {"uplink_mbps": {"dist": "uniform", "low": 0.5, "high": 2}},
        "availability": {"kind": "markov", "p": {"dist": "uniform", "low": 0.6, "high": 1.0}, "mean_cycle_s": 120},
    },
    "server": {"deadline_s": 5.0},
    "stop": {"rounds": 6},
    "eval": {"per_client": False},
    "output": {"plot": False},
}
K_ASYNC = {"server": {"mode": "k_async", "k": 3, "concurrency": 5}}


def _run(tmp_path, name, raw, **changes):
    merged = {**raw, **changes}
    return run_scenario(validate_scenario(merged), tmp_path / name)


@pytest.mark.parametrize(
    "server", [BASE["server"], K_ASYNC["server"], {"deadline_s": 3.0, "late_updates": "next_round"}]
)
def test_timing_only_reproduces_the_full_runs_events(tmp_path, server):
    full = _run(tmp_path, "full", BASE, server=server)
    clock = _run(tmp_path, "clock", BASE, server=server, timing_only=True)
    events = (full / "events.jsonl").read_text()
    assert events == (clock / "events.jsonl").read_text()
    assert events.count('"event":"arrive"') > 3 and events.count('"event":"aggregate"') == 6
    assert (full / "rounds.csv").read_text() == (clock / "rounds.csv").read_text()
    for a, b in zip(read_csv(full / "clients.csv"), read_csv(clock / "clients.csv"), strict=True):
        assert int(a.pop("train_samples")) >= 32 and b.pop("train_samples") == ""
        assert a.pop("test_samples").isdigit() and b.pop("test_samples") == ""  # no data set: no test split
        assert a == b
    summary = json.loads((clock / "summary.json").read_text())
    assert summary["timing_only"] and summary["training_jobs_computed"] == 0 and summary["final_accuracy"] is None
    metrics = read_csv(clock / "metrics.csv")
    assert len(metrics) == 7 and all(r["test_accuracy"] == "" and r["train_loss"] == "" for r in metrics)
    assert [r["updates"] for r in metrics] == [r["updates"] for r in read_csv(full / "metrics.csv")]


def test_timing_only_needs_no_data_and_draws_the_timing_figure(tmp_path):
    """5,000 clients would leave digits with less than one sample each: timing_only never loads it."""
    raw = {**BASE, "data": {"dataset": "digits", "clients": 5000}, "output": {"plot": True, "events": "none"}}
    run = _run(tmp_path, "big", raw, timing_only=True, stop={"rounds": 2})
    assert (run / "updates_vs_time.png").stat().st_size > 10_000 and not (run / "events.jsonl").exists()
    rounds = read_csv(run / "rounds.csv")
    assert len(rounds) == 2 and all(int(r["selected"]) == 5000 for r in rounds[:1])
    assert sum(int(r["participations"]) for r in read_csv(run / "clients.csv")) >= int(rounds[0]["received"])


@pytest.mark.parametrize("name", ["logreg", "mlp", "lenet5"])
def test_timing_model_bytes_match_the_real_model(name):
    scenario = validate_scenario({**BASE, "model": {"name": name}})
    fed = build_federation(scenario.data, 0, torch.device("cpu"))
    assert dataset_spec(scenario.data) == (fed.input_shape, fed.num_classes)
    model = build_model(name, fed.input_shape, fed.num_classes, scenario.model.hidden)
    assert timing_model_bytes(scenario) == 4 * sum(p.numel() for p in model.parameters())


def _per_process(env, clients, plans, log, logged=None):
    for plan in plans:
        env.process(run_task(env, clients[plan.client], plan, log))


@pytest.mark.parametrize(
    "changes",
    [
        {},  # random speeds, markov availability, deadline: drop
        {"server": {"deadline_s": 3.0, "late_updates": "next_round"}},
        # constant speeds: many exact same-time events, whose order the grouping must keep
        {"population": {"compute": {"samples_per_s": 50}, "network": {"latency_s": 0.5}}, "server": {"deadline_s": 7}},
    ],
)
def test_grouped_player_logs_what_one_process_per_task_logs(tmp_path, monkeypatch, changes):
    grouped = _run(tmp_path, "grouped", BASE, timing_only=True, **changes)
    monkeypatch.setattr(sync_server, "play_tasks", _per_process)
    reference = _run(tmp_path, "processes", BASE, timing_only=True, **changes)
    for name in ("events.jsonl", "clients.csv", "rounds.csv"):
        assert (grouped / name).read_text() == (reference / name).read_text()


@pytest.mark.slow
def test_sampled_events_are_the_full_log_filtered(tmp_path):
    full = _run(tmp_path, "all", BASE, timing_only=True)
    sample = _run(tmp_path, "sample", BASE, timing_only=True, output={"events": "sample", "event_sample": 3})
    none = _run(tmp_path, "none", BASE, timing_only=True, output={"events": "none"})
    kept = [
        line
        for line in (full / "events.jsonl").read_text().splitlines()
        if json.loads(line)["client"] is None or json.loads(line)["client"] < 3
    ]
    assert kept == (sample / "events.jsonl").read_text().splitlines()
    assert {json.loads(line)["client"] for line in kept} == {None, 0, 1, 2}
    assert not (none / "events.jsonl").exists()
    assert (
        (full / "clients.csv").read_text() == (sample / "clients.csv").read_text() == (none / "clients.csv").read_text()
    )


def test_event_lines_are_plain_json(tmp_path):
    run = _run(tmp_path, "json", BASE, timing_only=True, stop={"rounds": 2})
    lines = (run / "events.jsonl").read_text().splitlines()
    for line in lines:
        record = json.loads(line)
        assert json.dumps(record, separators=(",", ":")) == line
    assert any("reason" in json.loads(line) for line in lines)


def test_a_run_leaves_the_garbage_collector_as_it_found_it(tmp_path):
    """The simulation freezes what exists at each aggregation and collects young objects less often
    (loop_guards.collections_per_aggregation); afterwards nothing stays frozen and the thresholds are back."""
    import gc

    before = gc.get_threshold()
    _run(tmp_path, "clock", BASE, timing_only=True)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_timing_only_deals_the_data_so_small_clients_take_small_batches(tmp_path):
    """Issue 29, item 23: 60 digits clients under Dirichlet(0.5) hold 18 samples at the median, fewer than
    a batch of 32; timing-only used to time full batches (k_async.yaml's 200 rounds: 549.65 s against the
    training run's 320.5 s).  It now deals the data as the training run does: the same events, line for line."""
    raw = {
        **BASE,
        "data": {"dataset": "digits", "clients": 60, "partition": {"kind": "dirichlet", "alpha": 0.5}},
        "training": {"local_steps": 3, "batch_size": 32},
        **K_ASYNC,
    }
    full = _run(tmp_path, "full", raw)
    clock = _run(tmp_path, "clock", raw, timing_only=True)
    assert (full / "events.jsonl").read_text() == (clock / "events.jsonl").read_text()
    assert (full / "rounds.csv").read_text() == (clock / "rounds.csv").read_text()
    sizes = [int(r["train_samples"]) for r in read_csv(full / "clients.csv")]
    assert sorted(sizes)[len(sizes) // 2] < 32  # the case that differed: most clients hold less than a batch
    compute = [float(r["compute_s"]) for r in read_csv(clock / "clients.csv")]
    assert compute == [float(r["compute_s"]) for r in read_csv(full / "clients.csv")]


def test_timing_only_beyond_the_training_pool_times_full_batches(tmp_path):
    """5,000 digits clients cannot be dealt (1,438 samples in the pool): no sizes, full batches, as before."""
    many = validate_scenario({**BASE, "data": {"dataset": "digits", "clients": 5000}, "timing_only": True})
    assert client_train_sizes(many.data, many.seed) is None
    few = validate_scenario({**BASE, "data": {"dataset": "digits", "clients": 10}, "timing_only": True})
    dealt = build_federation(few.data, few.seed, torch.device("cpu")).client_train
    assert client_train_sizes(few.data, few.seed) == [len(t) for t in dealt]
