"""K-async FedBuff/FedAsync on Flower clients (asyncfl.flower.k_async): the ClientApp trains, asyncfl's server,
staleness and strategies do the rest.  No network: the ClientApps train on asyncfl's offline digits data."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("flwr")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import toy_app  # noqa: E402  (tests/flower is on sys.path: pytest's rootdir-relative import)
import yaml  # noqa: E402
from conftest import events, scenario, table, version_of  # noqa: E402
from flwr.app import Array, ArrayRecord, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402

import asyncfl.flower  # noqa: E402
from asyncfl.cli.main import main  # noqa: E402
from asyncfl.errors import ConfigError  # noqa: E402
from asyncfl.flower.k_async import client_app_learning, run_k_async  # noqa: E402
from asyncfl.runner.callbacks.base import Callback  # noqa: E402
from asyncfl.runner.simulation import Simulation  # noqa: E402
from asyncfl.runner.start import resume_run, run_scenario  # noqa: E402
from asyncfl.sim.servers.base import EXAMPLE_BATTERY  # noqa: E402
from tests.flower.asyncfl_training_app import initial_model, make_client_app  # noqa: E402

EPOCHS = 2
# the bytes a Flower message adds to the model's (array headers, key names, the config) cost ~1e-8 s
FAST_LINK = {"uplink_mbps": 1e6, "downlink_mbps": 1e6, "latency_s": 0.01}


def sections(**changes) -> dict:
    """A small K-async FedBuff scenario: 10 clients of digits with log-normal speeds and per-task jitter, a
    Markov on/off availability and batteries, so tasks fail offline and on battery as well as deliver.
    Full batches (batch_size above every client's share): one local step is one epoch, so the native task's
    samples (steps x min(batch, n)) equal the Flower contract's (num-examples x local-epochs)."""
    base = dict(
        seed=3,
        data={"dataset": "digits", "clients": 10, "partition": {"kind": "dirichlet", "alpha": 1.0}},
        model={"name": "mlp", "hidden": 16},
        training={"local_steps": EPOCHS, "batch_size": 4096, "lr": 0.2},
        trainer={"executor": "sequential"},
        population={
            "compute": {"samples_per_s": {"dist": "lognormal", "median": 100, "sigma": 0.6}, "jitter_sigma": 0.2},
            "network": FAST_LINK,
            "availability": {"kind": "markov", "p": {"dist": "uniform", "low": 0.4, "high": 0.9}, "mean_cycle_s": 10},
            # ~3 J a task (a full battery holds 2-3); bytes cost no energy, nor (almost) time: FAST_LINK
            "battery": {**EXAMPLE_BATTERY, "joules_per_sample": 0.01, "joules_per_byte": 0.0},
        },
        server={"mode": "k_async", "k": 3, "concurrency": 6},
        algorithm={"name": "fedbuff"},
        stop={"rounds": 12},
        eval={"every_rounds": 4},
        output={"plot": False},
    )
    return {**base, **changes}


def flower_section(**changes) -> dict:
    """The ``flower`` section; the tests hand the app and the initial arrays over as objects, which take the
    place of the names here."""
    return {"client_app": "x:app", "run_config": {"local-epochs": EPOCHS}, **changes}


class GlobalParams(Callback):
    """The global parameter vector after each aggregation, read from the learning side."""

    def __init__(self) -> None:
        self.learner, self.after = None, []

    def on_aggregation(self, state, record) -> None:
        self.after.append(self.learner.params.detach().clone())


def run_native(s, run_dir: Path) -> GlobalParams:
    run_dir.mkdir(parents=True)
    seen = GlobalParams()
    simulation = Simulation(s, run_dir, quiet=True, callbacks=[seen])
    seen.learner = simulation.live_learner
    simulation.run()
    return seen


def run_flower(s, run_dir: Path, app: ClientApp, arrays) -> GlobalParams:
    seen = GlobalParams()
    learning = client_app_learning(app, 1, arrays)

    def build(scenario, device):
        seen.learner = learning(scenario, device)
        return seen.learner

    run_scenario(s, run_dir, quiet=True, callbacks=[seen], learning=build)
    return seen


def first_arrays(native):
    model, _ = initial_model(native)
    return lambda: ArrayRecord(model.state_dict())


def timeline(run_dir: Path) -> list[tuple]:
    return [(e["client"], e["event"], version_of(e), e.get("reason")) for e in events(run_dir)]


def test_fedbuff_on_a_flower_client_app_follows_the_native_run(tmp_path):
    """The cross-check: a ClientApp that trains with asyncfl's own local SGD gives, after every aggregation, the
    global parameters of the native FedBuff run with the same seed, clients and partitions, through the same
    events (offline and battery failures included, which shows a Flower task fails exactly as a native one).

    Why a tolerance: the update is the reply's arrays minus the sent ones, (w + Δ) − w, which may round Δ in
    float32 (ulps of w); it came out exact here.  The event times differ by the bytes a Flower message adds to
    the model's (FAST_LINK: ~1e-8 s), which is also why bytes draw no energy here."""
    native = scenario(**sections())
    flower = scenario(**sections(flower=flower_section(initial_arrays="x:arrays")))
    expected = run_native(native, tmp_path / "native")
    got = run_flower(flower, tmp_path / "flower", make_client_app(native), first_arrays(native))

    assert timeline(tmp_path / "flower") == timeline(tmp_path / "native")
    reasons = Counter(e["reason"] for e in events(tmp_path / "native") if e["event"] == "fail")
    assert reasons["offline"] > 0 and reasons["battery"] > 0  # the population does fail tasks both ways
    times = [e["t"] for e in events(tmp_path / "flower")], [e["t"] for e in events(tmp_path / "native")]
    assert max(abs(a - b) for a, b in zip(*times)) < 1e-6
    assert table(tmp_path / "flower" / "updates.csv") == table(tmp_path / "native" / "updates.csv")
    assert len(got.after) == len(expected.after) == 12
    for version, (flower_params, native_params) in enumerate(zip(got.after, expected.after), start=1):
        assert torch.allclose(flower_params, native_params, atol=2e-6, rtol=0), f"version {version}"
    moved = (expected.after[-1] - expected.after[0]).abs().max()
    assert moved > 1e-2  # the comparison is not between models that barely changed


def plus_one_app(examples: int = 100, configs: list | None = None) -> ClientApp:
    """A ClientApp that adds 1 to every array and reports ``examples`` examples: each task's compute takes
    examples / samples_per_s seconds.  ``configs`` collects (partition, train config) of every call."""
    app = ClientApp()

    @app.train()
    def train(message: Message, context) -> Message:
        if configs is not None:
            configs.append((int(context.node_config["partition-id"]), dict(message.content["config"])))
        arrays = ArrayRecord([array.numpy() + 1 for array in message.content["arrays"].values()])
        metrics = MetricRecord({"num-examples": examples})
        return Message(RecordDict({"arrays": arrays, "metrics": metrics}), reply_to=message)

    return app


def test_staleness_follows_the_hand_computed_versions(tmp_path, device_trace):
    """FedAsync (K = 1) on two always-online clients whose tasks take 1 s and 2.4 s (100 examples at 100 and
    41.67 samples/s, bytes free).  By hand, (arrival, client, base version -> version, staleness):
    t=1 c0 0->1 0; t=2 c0 1->2 0; t=2.4 c1 0->3 2; t=3 c0 2->4 1; t=4 c0 4->5 0; t=4.8 c1 3->6 2."""
    trace = device_trace([(0, 100.0, 1e6, 1e6, 0.0), (1, 100 / 2.4, 1e6, 1e6, 0.0)])
    s = scenario(
        data={"dataset": "digits", "clients": 2},
        population={"device_trace": str(trace)},
        server={"mode": "k_async", "k": 1, "concurrency": 2},
        algorithm={"name": "fedasync"},
        stop={"rounds": 6},
        output={"plot": False},
        flower={"client_app": "x:app", "initial_arrays": "x:arrays"},
    )
    run_dir = run_k_async(plus_one_app(), s, tmp_path / "run", first_arrays=lambda: [torch.zeros(3).numpy()])
    rounds = table(run_dir / "rounds.csv")
    assert [float(r["staleness_max"]) for r in rounds] == [0, 0, 2, 1, 0, 2]
    assert [round(float(r["time"]), 6) for r in rounds] == [1.0, 2.0, 2.4, 3.0, 4.0, 4.8]
    updates = table(run_dir / "updates.csv")
    assert [(int(u["client"]), int(u["base_version"]), int(u["staleness"])) for u in updates] == [
        (0, 0, 0), (0, 1, 0), (1, 0, 2), (0, 2, 1), (0, 4, 0), (1, 3, 2)
    ]  # fmt: skip


def test_fedhist_sends_the_round_and_run_config_lr(tmp_path, device_trace):
    """FedHist on Flower clients: each train message says the round its update is for (base version + 1, as in
    events.jsonl's download lines) and ``lr`` from ``flower.run_config`` (the rate FedHist divides the update by)."""
    trace = device_trace([(0, 100.0, 1e6, 1e6, 0.0), (1, 30.0, 1e6, 1e6, 0.0), (2, 70.0, 1e6, 1e6, 0.0)])
    s = scenario(
        data={"dataset": "digits", "clients": 3},
        population={"device_trace": str(trace)},
        server={"mode": "k_async", "k": 2, "concurrency": 3},
        algorithm={"name": "fedhist"},
        stop={"rounds": 6},
        output={"plot": False},
        flower={"client_app": "x:app", "initial_arrays": "x:arrays", "run_config": {"lr": 0.05}},
    )
    configs: list = []
    arrays = lambda: [np.zeros(3, dtype=np.float32)]  # noqa: E731
    run_dir = run_k_async(plus_one_app(configs=configs), s, tmp_path / "run", first_arrays=arrays)
    downloads = [(e["client"], e["base_version"] + 1) for e in events(run_dir) if e["event"] == "download"]
    assert [(client, config["server-round"]) for client, config in configs] == downloads
    assert {config["lr"] for _, config in configs} == {0.05}
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"


def test_a_k_async_flower_run_checkpoints_as_a_native_run(tmp_path, device_trace):
    """checkpoint.every_rounds (10 by default) is kept (config.yaml says so); checkpoint.pt is dropped at the run's
    end, as a native run's (the files of a finished run are those of before).  A run killed before its end (here: its
    summary removed) is not restarted as a native run: ``run --resume`` names the flower command
    (test_k_async_flower_resume.py resumes one)."""
    trace = device_trace([(0, 100.0, 1e6, 1e6, 0.0), (1, 50.0, 1e6, 1e6, 0.0)])
    s = scenario(
        data={"dataset": "digits", "clients": 2},
        population={"device_trace": str(trace)},
        server={"mode": "k_async", "k": 1, "concurrency": 2},
        algorithm={"name": "fedasync"},
        stop={"rounds": 12},
        output={"plot": False},
        flower={"client_app": "x:app", "initial_arrays": "x:arrays"},
    )
    run_dir = run_k_async(plus_one_app(), s, tmp_path / "run", first_arrays=lambda: [np.zeros(3, dtype=np.float32)])
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["checkpoint"]["every_rounds"] == 10
    assert not (run_dir / "checkpoint.pt").exists()
    (run_dir / "summary.json").unlink()
    with pytest.raises(ConfigError, match="a Flower run resumes through the flower command"):
        resume_run(run_dir)


def failing_run(tmp_path: Path, name: str, calls: dict) -> Path:
    """The cross-check's scenario, client 1's ClientApp raising: its failed task takes a download and an upload
    of its error reply, 0.5 s of latency each here (else the server would hand it thousands of tasks)."""
    native = scenario(**sections())
    population = {**sections()["population"], "network": {**FAST_LINK, "latency_s": 0.5}}
    s = scenario(**sections(population=population, flower=flower_section(initial_arrays="x:arrays")))
    app = make_client_app(native, fail_clients={1}, calls=calls)
    return run_k_async(app, s, tmp_path / name, first_arrays=first_arrays(native))


def test_offline_clients_and_a_raising_client_app_fail_as_tasks(tmp_path):
    """Client 1's ClientApp raises: each of its tasks fails as client_app with the exception's message in
    events.jsonl, counted in rounds.csv, and the run reaches its 12 versions without it.  A client offline when
    its task starts is never called (its Context is untouched): calls = tasks that began downloading."""
    calls: dict[int, int] = {}
    run_dir = failing_run(tmp_path, "run", calls)
    log = events(run_dir)
    failed = [e for e in log if e["event"] == "fail" and e["reason"].startswith("client_app")]
    assert failed and {e["client"] for e in failed} == {1}
    assert all("boom on 1" in e["reason"] for e in failed)
    assert sum(int(r["failed_client_app"]) for r in table(run_dir / "rounds.csv")) == len(failed)
    assert "1" not in {u["client"] for u in table(run_dir / "updates.csv")}
    assert any(e["event"] == "fail" and e["reason"] == "offline" for e in log)
    downloads = Counter(e["client"] for e in log if e["event"] == "download")
    assert calls == dict(downloads)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["rounds"] == 12
    clients = {int(row["client"]): row for row in table(run_dir / "clients.csv")}
    assert int(clients[1]["failed_client_app"]) == len(failed)
    metrics = [m for m in table(run_dir / "metrics.csv") if m["test_accuracy"]]  # eval.every_rounds: 4
    assert [int(m["round"]) for m in metrics] == [0, 4, 8, 12]
    assert all(0 < float(m["test_accuracy"]) <= 1 and math.isfinite(float(m["test_loss"])) for m in metrics)


def test_same_seed_same_events_and_metrics(tmp_path):
    first, second = failing_run(tmp_path, "a", {}), failing_run(tmp_path, "b", {})
    assert (first / "events.jsonl").read_bytes() == (second / "events.jsonl").read_bytes()

    def without_wall_clock(run_dir: Path) -> list[dict]:
        return [{k: v for k, v in row.items() if k != "wall_seconds"} for row in table(run_dir / "metrics.csv")]

    assert without_wall_clock(first) == without_wall_clock(second)


@pytest.mark.parametrize(
    ("flower", "message"),
    [
        (flower_section(initial_arrays="x:arrays", server_app="x:app"), "flower.server_app"),
        (flower_section(), "flower.initial_arrays"),
        (flower_section(initial_arrays="x:arrays", evaluation="timed"), "flower.evaluation: timed .*allowed: untimed"),
    ],
)
def test_k_async_refuses_a_server_app_and_needs_initial_arrays(tmp_path, flower, message):
    with pytest.raises(ConfigError, match=message):
        s = scenario(**sections(flower=flower))
        run_k_async(plus_one_app(), s, tmp_path / "run")


def toy_arrays() -> ArrayRecord:
    """The initial arrays of tests/flower/toy_app.py's model: ``w``, 250 zeros."""
    return ArrayRecord({"w": Array(np.zeros(toy_app.WEIGHTS, dtype=np.float32))})


def test_the_front_doors_run_the_same_k_async_run(tmp_path, capsys):
    """``python -m asyncfl flower SCENARIO --client-app ...``, ``python -m asyncfl run SCENARIO`` (the scenario
    naming the app) and ``asyncfl.flower.run(None, app, scenario)`` write the same events; the run directory has
    every file of a native K-async run and reads back with ``asyncfl.read_run``."""
    keys = {
        "data": {"dataset": "digits", "clients": 6},
        "population": {"compute": {"samples_per_s": {"dist": "lognormal", "median": 20, "sigma": 0.5}}},
        "server": {"mode": "k_async", "k": 2, "concurrency": 3},
        "algorithm": {"name": "fedbuff"},
        "stop": {"rounds": 5},
        "output": {"plot": True},
        "flower": {"initial_arrays": "test_k_async_flower:toy_arrays"},
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(keys))
    assert main(["flower", str(path), "--client-app", "toy_app:client_app", "--out", str(tmp_path / "flower")]) == 0
    named = {**keys, "flower": {**keys["flower"], "client_app": "toy_app:client_app"}}
    (tmp_path / "named.yaml").write_text(yaml.safe_dump(named))
    assert main(["run", str(tmp_path / "named.yaml"), "--out", str(tmp_path / "run")]) == 0
    api = asyncfl.flower.run(None, toy_app.client_app, tmp_path / "scenario.yaml", tmp_path / "api")
    capsys.readouterr()

    first = (tmp_path / "flower" / "events.jsonl").read_bytes()
    assert (tmp_path / "run" / "events.jsonl").read_bytes() == first == (api.path / "events.jsonl").read_bytes()
    for name in ("rounds.csv", "updates.csv", "clients.csv", "metrics.csv", "summary.json", "config.yaml"):
        assert (api.path / name).is_file(), name
    assert list(api.path.glob("*.png")), "figures"
    assert max(int(u["staleness"]) for u in table(api.path / "updates.csv")) > 0
    # toy_app's evaluate: partition i reports accuracy i / 10 on 10 examples, so the weighted mean is 0.25
    accuracies = {float(m["test_accuracy"]) for m in table(api.path / "metrics.csv") if m["test_accuracy"]}
    assert accuracies == {0.25}
    assert api.summary["rounds"] == 5 and api.summary["trainer"] == "FlowerNodes"


def test_the_flower_command_refuses_a_server_app_for_a_k_async_scenario(tmp_path, capsys):
    keys = {"server": {"mode": "k_async", "k": 1}, "flower": {"initial_arrays": "test_k_async_flower:toy_arrays"}}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(keys))
    argv = ["flower", str(path), "--server-app", "toy_app:server_app", "--client-app", "toy_app:client_app"]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "--server-app" in error and "K-async" in error and "Traceback" not in error
