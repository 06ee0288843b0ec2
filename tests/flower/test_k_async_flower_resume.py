"""A K-async Flower run checkpoints and resumes as a native run does (asyncfl.flower.resume): stopped at an
aggregation by a callback raising, then resumed, it ends with the same files as a run never stopped.  The
ClientApps keep state of their own in ``context.state`` (a counter that changes their replies), and draw from the
global generators; a resume that lost either, or called a ClientApp again for a task that started before the
checkpoint, would end elsewhere."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import pytest

pytest.importorskip("flwr")

import numpy as np  # noqa: E402
import toy_app  # noqa: E402  (tests/flower is on sys.path)
import yaml  # noqa: E402
from conftest import scenario  # noqa: E402
from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from test_k_async_flower import first_arrays, flower_section, sections  # noqa: E402

from asyncfl.cli.main import main  # noqa: E402
from asyncfl.config.schema import Scenario  # noqa: E402
from asyncfl.errors import ConfigError  # noqa: E402
from asyncfl.flower.k_async import run_k_async  # noqa: E402
from asyncfl.flower.resume import resume_flower  # noqa: E402
from asyncfl.runner.callbacks.base import Callback  # noqa: E402
from asyncfl.runner.start import resume_run  # noqa: E402
from tests.flower.asyncfl_training_app import make_client_app  # noqa: E402

SAME_FILES = ("rounds.csv", "updates.csv", "clients.csv", "events.jsonl")
EVERY_AGGREGATION = {"every_rounds": 1, "min_wall_s": 0}


class BreaksAt(Callback):
    """Raises in ``on_aggregation`` at aggregation ``at`` (after the built-in callbacks saved its checkpoint)."""

    def __init__(self, at: int) -> None:
        self.at = at

    def on_aggregation(self, state, record) -> None:
        if record.round == self.at:
            raise RuntimeError(f"the user's callback broke at aggregation {self.at}")


def counting_noisy_app(calls: list) -> ClientApp:
    """Adds to every array the node's own call count (kept in ``context.state``) plus a draw of Python's global
    ``random``; ``calls`` collects the partition of every train call."""
    app = ClientApp()

    @app.train()
    def train(message: Message, context) -> Message:
        calls.append(int(context.node_config["partition-id"]))
        count = int(context.state.config_records.get("count", ConfigRecord({"n": 0}))["n"]) + 1
        context.state["count"] = ConfigRecord({"n": count})
        step = count + random.random()
        arrays = ArrayRecord([array.numpy() + step for array in message.content["arrays"].values()])
        return Message(RecordDict({"arrays": arrays, "metrics": MetricRecord({"num-examples": 50})}), reply_to=message)

    return app


def metrics_without_wall_seconds(run_dir: Path) -> list[dict]:
    rows = list(csv.DictReader(io.StringIO((run_dir / "metrics.csv").read_text())))
    return [{key: value for key, value in row.items() if key != "wall_seconds"} for row in rows]


def assert_same_run(resumed: Path, plain: Path) -> None:
    summary = json.loads((resumed / "summary.json").read_text())
    assert summary["status"] == "finished" and "reason" not in summary
    for name in SAME_FILES:
        assert (resumed / name).read_text() == (plain / name).read_text(), name
    assert metrics_without_wall_seconds(resumed) == metrics_without_wall_seconds(plain)
    with np.load(resumed / "final_model.npz") as got, np.load(plain / "final_model.npz") as expected:
        assert sorted(got.files) == sorted(expected.files)
        for key in expected.files:
            assert np.array_equal(got[key], expected[key]), key


def noisy_scenario(device_trace):
    """FedAsync (K = 1) on three always-online clients of 100, 50 and 25 samples/s: 8 aggregations."""
    trace = device_trace([(0, 100.0, 1e6, 1e6, 0.0), (1, 50.0, 1e6, 1e6, 0.0), (2, 25.0, 1e6, 1e6, 0.0)])
    return scenario(
        data={"dataset": "digits", "clients": 3},
        population={"device_trace": str(trace)},
        server={"mode": "k_async", "k": 1, "concurrency": 3},
        algorithm={"name": "fedasync"},
        stop={"rounds": 8},
        output={"plot": False},
        checkpoint=EVERY_AGGREGATION,
        flower={"client_app": "x:app", "initial_arrays": "x:arrays"},
    )


def zeros():
    return [np.zeros(3, dtype=np.float32)]


def test_a_stopped_run_resumes_to_the_files_of_a_run_never_stopped(tmp_path, device_trace):
    """The counter in context.state and the draws of ``random`` are restored at the checkpoint; the ClientApp is
    called once per task over both halves: as often as in the run never stopped."""
    s = noisy_scenario(device_trace)
    plain_calls, calls = [], []
    plain = run_k_async(counting_noisy_app(plain_calls), s, tmp_path / "plain", first_arrays=zeros)
    with pytest.raises(RuntimeError, match="broke at aggregation 3"):
        run_k_async(counting_noisy_app(calls), s, tmp_path / "run", first_arrays=zeros, callbacks=[BreaksAt(3)])
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "failed"
    before = len(calls)
    resume_flower(tmp_path / "run", counting_noisy_app(calls), first_arrays=zeros)
    assert 0 < before < len(calls)
    assert calls == plain_calls  # no task's ClientApp ran twice, and each ran in the same order
    assert_same_run(tmp_path / "run", plain)


@pytest.mark.slow
def test_a_client_app_that_trains_resumes_to_the_same_model(tmp_path):
    """The K-async cross-check's ClientApp (asyncfl's local SGD, its minibatches keyed by the attempt counter it keeps
    in context.state) on a population whose tasks also fail offline and on battery; stopped at aggregation 7."""
    native = scenario(**sections())
    s = scenario(**sections(flower=flower_section(initial_arrays="x:arrays"), checkpoint=EVERY_AGGREGATION))
    plain = run_k_async(make_client_app(native), s, tmp_path / "plain", first_arrays=first_arrays(native))
    with pytest.raises(RuntimeError):
        run_k_async(
            make_client_app(native), s, tmp_path / "run", first_arrays=first_arrays(native), callbacks=[BreaksAt(7)]
        )
    resume_flower(tmp_path / "run", make_client_app(native), first_arrays=first_arrays(native))
    assert_same_run(tmp_path / "run", plain)


def test_the_native_resume_names_the_flower_command(tmp_path, device_trace):
    s = noisy_scenario(device_trace)
    with pytest.raises(RuntimeError):
        run_k_async(counting_noisy_app([]), s, tmp_path / "run", first_arrays=zeros, callbacks=[BreaksAt(2)])
    with pytest.raises(ConfigError, match=r"allowed: python -m asyncfl flower --resume .*run \(a K-async one"):
        resume_run(tmp_path / "run")


def toy_scenario(tmp_path: Path) -> Path:
    """A K-async FedBuff scenario naming tests/flower/toy_app.py's ClientApp and initial arrays (config.yaml keeps the
    names: the flower command loads them again to resume)."""
    keys = {
        "data": {"dataset": "digits", "clients": 6},
        "population": {"compute": {"samples_per_s": {"dist": "lognormal", "median": 20, "sigma": 0.5}}},
        "server": {"mode": "k_async", "k": 2, "concurrency": 3},
        "algorithm": {"name": "fedbuff"},
        "stop": {"rounds": 6},
        "eval": {"every_rounds": 2},
        "output": {"plot": False},
        "checkpoint": EVERY_AGGREGATION,
        "flower": {"client_app": "toy_app:client_app", "initial_arrays": "test_k_async_flower:toy_arrays"},
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(keys))
    return path


@pytest.mark.slow
def test_the_flower_command_resumes_a_k_async_run(tmp_path, capsys):
    path = toy_scenario(tmp_path)
    assert main(["flower", str(path), "--quiet", "--out", str(tmp_path / "plain")]) == 0
    with pytest.raises(RuntimeError):
        run_k_async(toy_app.client_app, Scenario.from_yaml(path), tmp_path / "run", callbacks=[BreaksAt(4)])
    capsys.readouterr()
    assert main(["flower", "--resume", str(tmp_path / "run"), "--quiet"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == str(tmp_path / "run")
    assert_same_run(tmp_path / "run", tmp_path / "plain")


def test_the_flower_command_refuses_to_resume_a_server_app_run_saying_why(tmp_path, capsys):
    path = tmp_path / "scenario.yaml"
    path.write_text(
        "data: {clients: 4}\noutput: {plot: false}\n"
        "flower: {server_app: toy_app:server_app, client_app: toy_app:client_app, run_config: {num-server-rounds: 2}}\n"
    )
    assert main(["flower", str(path), "--quiet", "--out", str(tmp_path / "run")]) == 0
    (tmp_path / "run" / "summary.json").unlink()  # as if it had been killed
    capsys.readouterr()
    assert main(["flower", "--resume", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "a Flower run with a ServerApp (server.mode: sync) writes no checkpoint and cannot be resumed" in err
    assert "its state is the ServerApp's own code on its own stack" in err
    assert "allowed: a K-async Flower run (server.mode: k_async)" in err and "Traceback" not in err


def test_a_resume_is_as_configured(tmp_path, capsys):
    assert main(["flower", "--resume", str(tmp_path), str(tmp_path / "s.yaml"), "--seed", "2"]) == 2
    err = capsys.readouterr().err
    given = f"given: {tmp_path / 's.yaml'} (not an app folder), --seed"
    assert f"--resume {tmp_path}: a run resumes as it was configured; {given};" in err
    assert "allowed: [APP_DIR] --resume RUN_DIR [--client-app MODULE:ATTR] [--quiet]" in err
