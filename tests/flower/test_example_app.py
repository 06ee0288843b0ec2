"""examples/flower_digits is a real Flower app (issue 31, item 4): its files run unchanged under Flower's own
``run_simulation`` and under asyncfl's virtual clock; its ClientApp is deterministic, so the virtual clock's
"same seed, same events" holds for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

flwr = pytest.importorskip("flwr")

from flwr.app import ConfigRecord, Context, Message, MessageType, Metadata, RecordDict  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP_DIR = ROOT / "examples" / "flower_digits"


@pytest.fixture
def example(monkeypatch):
    """The example's package, importable as Flower's tools import it (the app's folder on sys.path)."""
    monkeypatch.syspath_prepend(str(APP_DIR))
    import flower_digits.client_app
    import flower_digits.task

    return flower_digits


def node_context(partition_id: int, num_partitions: int, run_config: dict | None = None) -> Context:
    return Context(
        run_id=1,
        node_id=partition_id + 1,
        node_config={"partition-id": partition_id, "num-partitions": num_partitions},
        state=RecordDict(),
        run_config=run_config or {},
    )


def instruction(content: RecordDict, message_type: str) -> Message:
    """A message as a Grid delivers it (outside a ServerApp there is no task identity to fill it in)."""
    metadata = Metadata(
        run_id=1,
        message_id="m1",
        src_node_id=0,
        dst_node_id=1,
        reply_to_message_id="",
        group_id="1",
        created_at=0.0,
        ttl=3600.0,
        message_type=message_type,
    )
    return Message(content=content, metadata=metadata)


def train_message(arrays, server_round: int) -> Message:
    content = RecordDict({"arrays": arrays, "config": ConfigRecord({"server-round": server_round})})
    return instruction(content, MessageType.TRAIN)


def test_the_defaults_are_the_run_config_of_pyproject(example):
    """run_simulation passes no run config: the apps then use task.DEFAULT_RUN_CONFIG, which must say what
    pyproject.toml's [tool.flwr.app.config] says (what `flwr run` passes)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    declared = tomllib.loads((APP_DIR / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    assert declared == example.task.DEFAULT_RUN_CONFIG


def test_partitions_split_the_digits_exactly_once(example):
    parts = example.task._partitions(20)
    together = sorted(i for part in parts for i in part.tolist())
    assert together == list(range(1797))  # every image in exactly one partition
    assert min(len(p) for p in parts) >= example.task.MIN_PARTITION_SIZE
    train, test = example.task.load_data(3, 20)
    assert len(train.dataset) + len(test.dataset) == len(parts[3])
    assert len(test.dataset) == round(0.2 * len(parts[3]))


def test_a_train_reply_states_its_work_and_repeats_exactly(example):
    """One local epoch over the partition's training share: num-examples is that share's size; the same
    message and context give the same arrays (the clock's reproducibility rests on it)."""
    arrays = example.task.initial_arrays()
    replies = [example.client_app.app(train_message(arrays, 2), node_context(5, 20)) for _ in range(2)]
    train_size = len(example.task.load_data(5, 20)[0].dataset)
    metrics = replies[0].content["metrics"]
    assert metrics["num-examples"] == train_size
    first, second = (r.content["arrays"].to_torch_state_dict() for r in replies)
    start = arrays.to_torch_state_dict()
    assert all((first[k] == second[k]).all() for k in first)
    assert any((first[k] != start[k]).any() for k in first)  # it did train


def test_run_config_reaches_the_client(example):
    """local-epochs from the run config: two epochs average the loss over twice the batches and move
    the weights further than one."""
    arrays = example.task.initial_arrays()
    one = example.client_app.app(train_message(arrays, 1), node_context(0, 20, {"local-epochs": 1}))
    two = example.client_app.app(train_message(arrays, 1), node_context(0, 20, {"local-epochs": 2}))
    start = arrays.to_torch_state_dict()

    def moved(reply):
        state = reply.content["arrays"].to_torch_state_dict()
        return sum(float((state[k] - start[k]).norm()) for k in state)

    assert moved(two) > moved(one)


def test_evaluate_reports_accuracy_on_the_test_share(example):
    arrays = example.task.initial_arrays()
    msg = instruction(RecordDict({"arrays": arrays, "config": ConfigRecord()}), MessageType.EVALUATE)
    metrics = example.client_app.app(msg, node_context(7, 20)).content["metrics"]
    assert metrics["num-examples"] == len(example.task.load_data(7, 20)[1].dataset)
    assert 0.0 <= metrics["eval_acc"] <= 1.0 and metrics["eval_loss"] > 0


FLOWER_SCRIPT = """
import flower_digits.task as task
from flwr.simulation import run_simulation
from flower_digits.client_app import app as client_app
from flower_digits.server_app import app as server_app
task.DEFAULT_RUN_CONFIG["num-server-rounds"] = 1   # brief: one round (run_simulation passes no run config)
run_simulation(server_app=server_app, client_app=client_app, num_supernodes=2,
               backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}, "init_args": {"num_cpus": 1}})
"""


@pytest.mark.slow
def test_the_app_runs_unchanged_under_flowers_run_simulation():
    """Flower's own simulation engine (Ray) runs the example's files as they are: one round of FedAvg over
    two supernodes, both training and both evaluating."""
    reason = "Flower's run_simulation needs Ray, not installed: pip install 'flwr[simulation]>=1.42,<2' to run this"
    pytest.importorskip("ray", reason=reason)
    env = {**os.environ, "PYTHONPATH": str(APP_DIR)}
    done = subprocess.run(
        [sys.executable, "-c", FLOWER_SCRIPT], cwd=APP_DIR, env=env, capture_output=True, text=True, timeout=600
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert "aggregate_train: Received 2 results and 0 failures" in log, log[-3000:]
    assert "aggregate_evaluate: Received 2 results and 0 failures" in log, log[-3000:]


@pytest.mark.slow
def test_the_study_runs_its_variants_through_a_sweep(tmp_path, monkeypatch):
    """examples/flower_digits/scenarios/study.yaml as a sweep runs it (asyncfl.sweep.jobs hands a scenario with a
    flower: section to asyncfl.flower.run), on 40 virtual seconds and one seed, untuned: the ServerApp variants
    run synchronous rounds (staleness 0), the FedBuff variant asyncfl's K-async server on the same ClientApp (stale
    updates), the 8 s timeout cuts off tasks that the variant without it waits for, and the untimed evaluation
    costs no virtual time where the timed one does."""
    import yaml

    import asyncfl

    monkeypatch.syspath_prepend(str(APP_DIR))
    study = yaml.safe_load((APP_DIR / "scenarios" / "study.yaml").read_text(encoding="utf-8"))
    study.pop("claims")  # one seed cannot test them
    study.pop("tune")
    study["stop"] = {"virtual_time_s": 40}
    study["output"] = {**study["output"], "plot": False}  # figures: not what is checked
    result = asyncfl.run_study(study, seeds=[0], out=tmp_path / "sweep")
    assert result.failures == ()
    names = ("fedavg", "fedavg_deadline", "fedbuff", "fedavg_timed_evaluation")
    fedavg, deadline, fedbuff, timed = (result.run(name, 0) for name in names)
    for run in (fedavg, deadline):
        assert run.summary["status"] == "finished" and run.summary["staleness_mean"] == 0.0
    assert fedbuff.summary["status"] == "finished" and fedbuff.summary["staleness_mean"] > 0
    assert fedbuff.summary["algorithm"] == "fedbuff" and fedavg.summary["algorithm"].startswith("flower ServerApp")
    assert deadline.clients["failed_deadline"].sum() > 0 == fedavg.clients["failed_deadline"].sum()
    assert deadline.rounds["time"].diff().max() < fedavg.rounds["time"].diff().max()  # no round waits past 8 s
    untimed_rounds = fedavg.rounds
    assert (untimed_rounds["started"].iloc[1:].to_numpy() == untimed_rounds["time"].iloc[:-1].to_numpy()).all()
    timed_gaps = timed.rounds["started"].iloc[1:].to_numpy() - timed.rounds["time"].iloc[:-1].to_numpy()
    assert (timed_gaps > 0).all()  # each evaluate round trip before the next train round
