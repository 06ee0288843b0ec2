"""A ClientApp that fails on every train message ends the run promptly with the reason (issue 45, item 1): a typo
in ``train`` made a K-async run fail tasks forever (1,769 virtual s, 10 MB of events.jsonl, no aggregation)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("flwr")

import numpy as np  # noqa: E402
import toy_app  # noqa: E402  (tests/flower is on sys.path: pytest's rootdir-relative import)
from flwr.app import Array, ArrayRecord, Context, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402

import asyncfl.flower  # noqa: E402
from asyncfl.errors import ConfigError  # noqa: E402

ALL_SIX = "0,1,2,3,4,5"


def toy_arrays() -> ArrayRecord:
    return ArrayRecord({"w": Array(np.zeros(toy_app.WEIGHTS, dtype=np.float32))})


def k_async_keys(clients: int = 6, **run_config) -> dict:
    return {
        "data": {"dataset": "digits", "clients": clients},
        "server": {"mode": "k_async", "k": 2, "concurrency": 3},
        "algorithm": {"name": "fedbuff"},
        "stop": {"rounds": 50},
        "output": {"plot": False},
        "flower": {"initial_arrays": "test_broken_client_app:toy_arrays", "run_config": run_config},
    }


def fails(run_dir: Path) -> list[dict]:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "fail"]


def test_a_k_async_client_app_raising_on_every_client_ends_the_run_with_its_error(tmp_path):
    """6 clients, 3 at a time: the run ends at the 5th different client whose ClientApp raised."""
    keys = k_async_keys(**{"raise-on": ALL_SIX})
    expected = (
        r"flower.client_app: the ClientApp failed on the train messages of clients \[(\d, ){4}\d\] and no train "
        r"reply was usable yet; the first failure: .*RuntimeError.*partition \d has no \"data\".*; allowed: a "
        r"ClientApp whose train replies with the model's arrays"
    )
    with pytest.raises(ConfigError, match=expected):
        asyncfl.flower.run(None, toy_app.client_app, keys, tmp_path / "run")
    failed = fails(tmp_path / "run")
    assert len({e["client"] for e in failed}) <= 5 and len(failed) < 20
    assert all(e["reason"].startswith("client_app") for e in failed)


def wrong_shape_app() -> ClientApp:
    app = ClientApp()

    @app.train()
    def train(message: Message, context: Context) -> Message:
        arrays = ArrayRecord({"w": Array(np.zeros(3, dtype=np.float32))})  # the model has 250
        metrics = MetricRecord({"num-examples": 10})
        return Message(RecordDict({"arrays": arrays, "metrics": metrics}), reply_to=message)

    return app


def test_a_k_async_client_app_replying_with_the_wrong_arrays_ends_the_run(tmp_path):
    with pytest.raises(ConfigError, match=r"the first failure: its reply cannot be aggregated: "):
        asyncfl.flower.run(None, wrong_shape_app(), k_async_keys(), tmp_path / "run")
    assert len(fails(tmp_path / "run")) < 20


def test_a_population_smaller_than_five_ends_once_every_client_failed(tmp_path):
    with pytest.raises(ConfigError, match=r"on the train messages of clients \[0, 1\] "):
        asyncfl.flower.run(None, toy_app.client_app, k_async_keys(2, **{"raise-on": "0,1"}), tmp_path / "run")


def test_one_broken_client_among_working_ones_does_not_end_the_run(tmp_path):
    run = asyncfl.flower.run(None, toy_app.client_app, k_async_keys(**{"raise-on": "1"}), tmp_path / "run")
    assert run.summary["status"] == "finished" and run.summary["rounds"] == 50
    assert {e["client"] for e in fails(run.path)} == {1}


def test_a_sync_run_whose_client_app_raises_everywhere_ends_in_its_first_round(tmp_path):
    """toy_app's FedAvg ServerApp for 30 rounds on 4 clients, every ClientApp raising: the 4 replies of round 1
    are errors, so the run ends there instead of playing 30 empty rounds."""
    keys = {
        "data": {"clients": 4},
        "output": {"plot": False},
        "flower": {"run_config": {"num-server-rounds": 30, "raise-on": "0,1,2,3", "fraction-evaluate": 0.0}},
    }
    with pytest.raises(ConfigError, match=r"clients \[0, 1, 2, 3\] and no train reply was usable yet"):
        asyncfl.flower.run(toy_app.server_app, toy_app.client_app, keys, tmp_path / "run")
    assert len(fails(tmp_path / "run")) <= 4
