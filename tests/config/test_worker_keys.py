"""``trainer.workers`` refused before anything runs where it cannot work: its keys without it, a Flower or
timing-only run, Ray not installed, a cluster address nothing answers at (in seconds, not Ray's minutes), a
cluster too small for the workers (asyncfl.learn.workers, asyncfl.config.runnable)."""

from __future__ import annotations

import importlib.util
import socket
import sys
import time

import pytest

from asyncfl.cli.main import main
from asyncfl.errors import ConfigError
from asyncfl.learn import workers
from asyncfl.learn.training import RAY_MISSING

SCENARIO = "data: {dataset: digits, clients: 4}\nstop: {rounds: 1}\n"


def _validate(tmp_path, capsys, extra: str) -> tuple[int, str]:
    (tmp_path / "s.yaml").write_text(SCENARIO + extra)
    code = main(["validate", str(tmp_path / "s.yaml")])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("key", ["ray_address: auto", "jobs_per_call: 4", "gpus_per_worker: 0.5"])
def test_a_worker_key_without_workers_is_refused_naming_it(tmp_path, capsys, key):
    code, err = _validate(tmp_path, capsys, f"trainer: {{{key}}}\n")
    name = key.split(":")[0]
    assert code == 2 and f"trainer: {name} is read only with workers; allowed: set workers: N, or remove {name}" in err


def test_workers_in_a_timing_only_run_are_refused(tmp_path, capsys):
    code, err = _validate(tmp_path, capsys, "timing_only: true\ntrainer: {workers: 2}\n")
    assert code == 2 and "trainer.workers: a timing_only run trains nothing" in err


def test_workers_in_a_flower_run_are_refused(tmp_path, capsys):
    extra = "flower: {server_app: 'a.b:c', client_app: 'a.b:d'}\ntrainer: {workers: 2}\n"
    code, err = _validate(tmp_path, capsys, extra)
    assert code == 2 and "trainer.workers: a Flower run's ClientApps do the training" in err


def test_workers_without_ray_installed_are_refused_at_validation(tmp_path, capsys, monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find_spec(name, *a))
    code, err = _validate(tmp_path, capsys, "trainer: {workers: 2}\n")
    assert code == 2 and RAY_MISSING in err and 'pip install -e ".[ray]"' in err


def test_starting_a_pool_without_ray_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ConfigError, match=r"^trainer.workers: Ray is not installed here"):
        workers.start_ray(None, 2)


def test_an_address_nothing_listens_at_is_refused_in_seconds():
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    began = time.monotonic()
    with pytest.raises(ConnectionError, match=f"nothing answers at 127.0.0.1:{port}"):
        workers.probe(f"ray://127.0.0.1:{port}")
    assert time.monotonic() - began < workers.PROBE_TIMEOUT_S + 1
    with pytest.raises(ValueError, match="'x' is not a port number"):
        workers.probe("127.0.0.1:x")
    workers.probe("auto")  # no host: Ray answers for itself


class SmallCluster:
    @staticmethod
    def cluster_resources():
        return {"CPU": 2.0, "GPU": 1.0}


@pytest.mark.parametrize(("cpus", "gpus"), [(3, 0), (2, 1.5)])
def test_a_cluster_too_small_for_the_workers_is_refused_with_what_it_offers(cpus, gpus):
    with pytest.raises(ConfigError, match=rf"need {cpus:g} CPUs .* and {gpus:g} GPUs .* offers 2 CPUs and 1 GPUs"):
        workers.check_resources(SmallCluster, cpus, gpus)
    workers.check_resources(SmallCluster, 2, 1)  # exactly what it has: fine
