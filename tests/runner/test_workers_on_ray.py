"""``trainer.workers`` on a real (local) Ray instance: the same files whatever the number of workers, the same
files as training in this process with the sequential executor, and a lost worker ending the run ``failed``
with a checkpoint it resumes from to the same end (asyncfl.learn.workers; docs/how-to/workers.md).

One Ray instance serves the module (starting Ray takes seconds); a pool joins it and leaves it running."""

from __future__ import annotations

import functools
import json

import pytest
import torch

import asyncfl
from asyncfl.learn import workers
from asyncfl.runner.start import resume_run

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

SCENARIO = {
    "name": "workers",
    "seed": 5,
    "data": {"dataset": "digits", "clients": 16},
    "model": {"name": "mlp", "hidden": 24},
    "training": {"local_steps": 3, "batch_size": 16, "lr": 0.1},
    "server": {"mode": "k_async", "k": 3, "concurrency": 6, "max_staleness": 4},
    "algorithm": {"name": "fedbuff"},
    "stop": {"rounds": 6},
    "eval": {"every_rounds": 2, "per_client": False},
    "output": {"plot": False},
}
SAME_FILES = ("rounds.csv", "updates.csv", "events.jsonl", "final_model.npz", "clients.csv")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def _run(tmp_path, name, callbacks=(), **trainer):
    sections = {**SCENARIO, "trainer": trainer}
    if trainer.pop("checkpoint", False):
        sections["checkpoint"] = {"every_rounds": 1, "min_wall_s": 0}
    return asyncfl.run(sections, out=tmp_path / name, callbacks=list(callbacks)).path


def _metrics_without_wall_clock(run_dir):
    rows = (run_dir / "metrics.csv").read_text().splitlines()
    return [row.rsplit(",", 1)[0] for row in rows]  # wall_seconds, the last column, is the machine's


def _assert_same_files(a, b):
    for name in SAME_FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert _metrics_without_wall_clock(a) == _metrics_without_wall_clock(b)


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory):
    """The run on one worker, checkpointing at every aggregation (which changes none of its files)."""
    return _run(tmp_path_factory.mktemp("one"), "w1", workers=1, jobs_per_call=2, checkpoint=True)


def test_one_and_three_workers_write_the_same_files(tmp_path, one_worker):
    assert json.loads((one_worker / "summary.json").read_text())["status"] == "finished"
    _assert_same_files(one_worker, _run(tmp_path, "w3", workers=3, jobs_per_call=2))


def test_with_the_sequential_executor_workers_write_what_training_here_writes(tmp_path):
    here = _run(tmp_path, "here", executor="sequential")
    spread = _run(tmp_path, "spread", executor="sequential", workers=2)
    _assert_same_files(here, spread)


class KillsAWorker(asyncfl.Callback):
    """Kills the first worker of the run's pool at aggregation ``at`` (as a node going down would)."""

    def __init__(self, pools: list, at: int) -> None:
        self.pools, self.at = pools, at

    def on_aggregation(self, state, record) -> None:
        if record.round == self.at:
            ray.kill(self.pools[-1].workers[0])


def test_a_lost_worker_fails_the_run_and_it_resumes_from_its_checkpoint_to_the_same_end(
    tmp_path, monkeypatch, one_worker
):
    pools = []
    start = workers.WorkerPool.__init__

    def recorded(self, *args, **kwargs):
        start(self, *args, **kwargs)
        pools.append(self)

    monkeypatch.setattr(workers.WorkerPool, "__init__", recorded)
    with pytest.raises(workers.WorkerLost, match=r"training worker 1 of 2 was lost"):
        _run(tmp_path, "lost", [KillsAWorker(pools, 3)], workers=2, jobs_per_call=2, checkpoint=True)
    summary = json.loads((tmp_path / "lost" / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["reason"].startswith("WorkerLost: trainer.workers: training")
    assert 3 <= summary["rounds"] < 6  # it ends at the first aggregation that needs the lost worker's results
    resume_run(tmp_path / "lost")
    assert json.loads((tmp_path / "lost" / "summary.json").read_text())["status"] == "finished"
    _assert_same_files(one_worker, tmp_path / "lost")


def test_a_worker_that_cannot_build_stops_the_run_before_it_starts(tmp_path):
    """The pool waits for its workers' trainers: one that cannot be built (here: a data file missing on its node)
    is named with its cause before anything runs, and the other workers are stopped."""
    missing = tmp_path / "not_on_this_node.npz"
    settings = workers.WorkerSettings(count=2, address=None, jobs_per_call=1, gpus_per_worker=0.0, threads=1)
    with pytest.raises(workers.WorkerLost, match=r"training worker 1 of 2 could not start \(FileNotFoundError: "):
        workers.WorkerPool(functools.partial(open, missing), settings, torch.device("cpu"))
