"""Shared helpers: build scenarios from dicts and read run directories back."""

from __future__ import annotations

import ast
import csv
import dataclasses
import json
import math
import os
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml

from asyncfl.algorithms import Update
from asyncfl.config import validate_scenario
from asyncfl.learn.executors import float32_precision
from asyncfl.learn.training import Trainer
from asyncfl.runner.record import AggregationRecord
from asyncfl.sweep import jobs as sweep_jobs

torch.set_num_threads(1)  # tiny models: threads only add contention on the 2-core CI machine

TEST_DEVICE = os.environ.get("ASYNCFL_TEST_DEVICE", "cpu")
"""Where the trainer-kernel tests (test_batched, test_fused_conv, test_bench_gpu) run: ``cpu`` by default,
``ASYNCFL_TEST_DEVICE=cuda`` on a GPU machine (the same assertions; skipped where CUDA is absent)."""


@pytest.fixture(scope="session")
def test_device():
    """The torch device of ``ASYNCFL_TEST_DEVICE``, in full float32 for the session as runs train
    (``trainer.tf32: false``, :func:`asyncfl.learn.executors.float32_precision`): the tests compare the
    batched kernels with the sequential reference, and TF32 rounds each convolution's inputs to 10
    mantissa bits, differently for each layout (on an H200, LeNet-5's fused and sequential deltas
    differed by 2e-3 with TF32 and by 1e-6 without)."""
    device = torch.device(TEST_DEVICE)
    if device.type == "cuda" and not torch.cuda.is_available():
        pytest.skip(f"ASYNCFL_TEST_DEVICE={TEST_DEVICE}: no CUDA device here")
    with float32_precision(Trainer()):
        yield device


def scenario(**sections):
    """A validated Scenario from keyword sections, e.g. scenario(data={...}, server={...})."""
    return validate_scenario(sections, source="<test>")


def run(tmp_path: Path, name: str = "run", **sections) -> Path:
    from asyncfl.runner.start import run_scenario

    return run_scenario(scenario(**sections), tmp_path / name, quiet=True)


@pytest.fixture(scope="session")
def drawn_sweep(tmp_path_factory) -> Path:
    """A timing-only study ``drawn`` run as the command runs it: variants ``a`` and ``b`` (deadline 5 s),
    seeds 0 and 1, two rounds each, every figure drawn.  Shared by the tests of figures in a sweep: one
    that changes it works on a copy (``shutil.copytree``, which keeps the files' times)."""
    from asyncfl.cli import main

    root = tmp_path_factory.mktemp("drawn_sweep")
    study = root / "study.yaml"
    study.write_text(
        "name: drawn\ntiming_only: true\ndata: {dataset: digits, clients: 6}\nmodel: {name: logreg}\n"
        "stop: {rounds: 2}\nseeds: [0, 1]\ncompare: [{name: a}, {name: b, set: {server.deadline_s: 5}}]\n"
        f"output: {{dir: {root / 'runs'}}}\n"
    )
    assert main([str(study), "--quiet"]) == 0
    return next((root / "runs" / "drawn").iterdir())


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def version_of(event: dict) -> int | None:
    """An events.jsonl line's version: a client event's ``base_version``, a server event's ``round``; a line
    holds exactly one of the two."""
    assert ("round" in event) != ("base_version" in event), event
    return event["round"] if event["client"] is None else event["base_version"]


def table(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture
def device_trace(tmp_path: Path):
    """Write a per-client device trace CSV and return its path."""

    def write(rows: list[tuple[int, float, float, float, float]]) -> Path:
        path = tmp_path / "devices.csv"
        lines = ["client,samples_per_s,uplink_mbps,downlink_mbps,latency_s"]
        lines += [",".join(str(v) for v in row) for row in rows]
        path.write_text("\n".join(lines) + "\n")
        return path

    return write


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function (the layering tests' reading)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def under(module: str, roots: tuple[str, ...]) -> bool:
    """Whether ``module`` is one of ``roots`` or inside one."""
    return any(module == root or module.startswith(root + ".") for root in roots)


def federation_on(fed, device: torch.device):
    """A copy of the Federation ``fed`` with every tensor on ``device``."""
    return dataclasses.replace(
        fed,
        features=fed.features.to(device),
        labels=fed.labels.to(device),
        client_train=[idx.to(device) for idx in fed.client_train],
        client_test=[idx.to(device) for idx in fed.client_test],
        test_indices=fed.test_indices.to(device),
    )


def write_finished_run(run_dir: Path, scenario: dict, accuracy: float) -> dict:
    """A run directory written at once, as a finished run leaves it (config, two metrics rows, summary):
    the stand-in for a real run in tests of sweeps, tuning and claims.  Returns its summary."""
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(scenario))
    (run_dir / "metrics.csv").write_text(f"time,round,test_accuracy\n0,0,0.1\n10,1,{accuracy}\n")
    summary = {"status": "finished", "final_accuracy": accuracy, "best_accuracy": accuracy}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return summary


def replace_training(monkeypatch, run_job) -> None:
    """Sweeps run ``run_job(scenario, run_dir, resume) -> summary`` instead of training: a stand-in that writes
    a run directory at once (as :func:`write_finished_run` does).  The collection after each run
    (:func:`asyncfl.sweep.jobs.run_locally`, for a real run's reference cycles) is left out too: a stand-in
    leaves none, and a full collection of the test process (0.2 s, more as the suite grows) per stand-in
    run was most of these tests' time."""
    monkeypatch.setattr(sweep_jobs, "run_job", run_job)
    no_collection = SimpleNamespace(collect=lambda: 0, freeze=lambda: None, unfreeze=lambda: None)
    monkeypatch.setattr(sweep_jobs, "gc", no_collection)


def update(client: int, delta, base=0, staleness=0, samples=10, steps=1, lr=1.0, dtype=torch.float64, loss=math.nan):
    """One client's :class:`asyncfl.algorithms.Update` for hand-computed aggregation tests: ``delta`` a list
    (or tensor) of floats, from version ``base``, ``staleness`` versions behind."""
    return Update(client, torch.as_tensor(delta, dtype=dtype), base, staleness, samples, steps, lr, train_loss=loss)


def aggregation_record(
    round: int, time: float, staleness=(0,), loss=0.5, diverged=False, **timing
) -> AggregationRecord:
    """An :class:`asyncfl.runner.record.AggregationRecord` as callbacks receive it, by hand: ``round`` counted
    from 1, one update per ``staleness`` entry (client 1 each time, ``loss`` each), and the timing facts of a
    sync round started 2 s before ``time`` (``timing`` overrides them)."""
    n = len(staleness)
    fields = dict(
        round=round, started=time - 2.0, time=time, selected=3, late=1,
        failures=Counter(offline=2, deadline=1, charging=4), dropped_stale=0, lost_s=1.5, lost_compute_s=1.0,
        timed_out=(), clients=(1,) * n, base_versions=tuple(round - 1 - tau for tau in staleness),
        staleness=tuple(staleness), arrivals=(time,) * n, task_s=(1.0,) * n, train_loss=(loss,) * n,
        train_loss_sq=(math.nan,) * n, weight_rows=({"round": round, "client": 1, "weight": 0.5},), diverged=diverged,
    )  # fmt: skip
    return AggregationRecord(**{**fields, **timing})
