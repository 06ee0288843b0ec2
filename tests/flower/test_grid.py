"""The virtual-time Grid (asyncfl/flower/grid.py) with an app that trains nothing (toy_app.py): deadlines, failures,
error replies, timestamps, determinism, and the run directory the native callbacks write from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("flwr")

import toy_app  # noqa: E402  (tests/flower is on sys.path: pytest's rootdir-relative import)
from flwr.common.constant import ErrorCode  # noqa: E402

import asyncfl.flower  # noqa: E402
from asyncfl.errors import ConfigError  # noqa: E402
from asyncfl.flower.nodes import NODE_ID_BASE  # noqa: E402

# bytes of a train message and of its reply (toy_app's docstring), with the .npy header Flower's Array data holds
MESSAGE_BYTES = 128 + 1000 + 1 + 20
# population defaults: 100 samples/s, downlink 50 Mbps, uplink 10 Mbps, latency 0.05 s
DOWNLOAD_S = 0.05 + MESSAGE_BYTES / (50e6 / 8)
UPLOAD_S = 0.05 + MESSAGE_BYTES / (10e6 / 8)


def flower_run(tmp_path: Path, server_app=None, name: str = "run", **sections):
    """A Flower run of toy_app's apps on a scenario of 4 clients, without figures."""
    toy_app.SEEN.clear()
    toy_app.CALLS.clear()
    keys = {"data": {"clients": 4}, "output": {"plot": False}, **sections}
    return asyncfl.flower.run(server_app or toy_app.server_app, toy_app.client_app, keys, tmp_path / name)


def events(run) -> list[dict]:
    return [json.loads(line) for line in (run.path / "events.jsonl").read_text().splitlines()]


def test_a_deadline_drops_exactly_the_clients_whose_task_time_exceeds_it(tmp_path):
    """Client i processes 10 (i + 1) samples at 100 samples/s: task time = download + 0.1 (i + 1) + upload
    = 0.050184 + 0.1 (i + 1) + 0.050919 = 0.201103, 0.301103, 0.401103, 0.501103 s.  A timeout of 0.35 virtual
    seconds returns clients 0 and 1, and the clock stands at the deadline.  Each reply is stamped when its node made
    it, as its upload starts (Flower's created_at): download + 0.1 (i + 1) = 0.150184, 0.250184 s."""
    flower_run(tmp_path, toy_app.direct_server_app, flower={"run_config": {"timeout": 0.35}})
    expected = [DOWNLOAD_S + 0.1 * (i + 1) + UPLOAD_S for i in range(4)]
    assert expected[1] < 0.35 < expected[2]
    returned = toy_app.SEEN["direct"]
    assert [node - NODE_ID_BASE for node, _, _ in returned] == [0, 1]
    assert [at for _, at, _ in returned] == pytest.approx([DOWNLOAD_S + 0.1, DOWNLOAD_S + 0.2], abs=1e-9)
    assert toy_app.SEEN["now"] == 0.35
    assert toy_app.SEEN["created"] == [0.0] * 4  # virtual timestamps
    # pulled again, the two returned replies and the two given up at the deadline are Flower's "message unavailable"
    # error replies (a reply given up is never returned)
    late_pull = toy_app.SEEN["late_pull"]
    assert [m.error.code for m in late_pull] == [ErrorCode.MESSAGE_UNAVAILABLE] * 4
    assert [int(m.metadata.reply_to_message_id[-1]) for m in late_pull] == [0, 1, 2, 3]


def test_the_round_record_counts_the_late_tasks_as_deadline_failures(tmp_path):
    run = flower_run(tmp_path, toy_app.direct_server_app, flower={"run_config": {"timeout": 0.35}})
    (row,) = run.rounds.to_dict("records")
    assert (row["selected"], row["received"], row["late"], row["failed_deadline"]) == (4, 2, 2, 2)
    assert row["time"] == 0.35
    # lost: the two late tasks' seconds up to the deadline, of which computing (0.35 - download each)
    assert row["lost_s"] == pytest.approx(0.7)
    assert row["lost_compute_s"] == pytest.approx(2 * (0.35 - DOWNLOAD_S))
    assert list(run.updates["client"]) == [0, 1] and set(run.updates["staleness"]) == {0}


def test_fedavg_rounds_wait_for_every_reply_without_a_deadline(tmp_path):
    """Two rounds of Flower's FedAvg: each train round ends when the slowest client (0.501103 s) is in, then the
    evaluate round (10 samples each: 0.1 s of compute + the transfers) before the next one starts."""
    run = flower_run(tmp_path, flower={"run_config": {"num-server-rounds": 2}})
    rounds = run.rounds.to_dict("records")
    slowest = DOWNLOAD_S + 0.4 + UPLOAD_S
    assert rounds[0]["time"] == pytest.approx(slowest)
    assert [r["received"] for r in rounds] == [4, 4]
    assert all(len(seen) == 4 and not any(err for _, err, _ in seen) for seen in toy_app.SEEN["train"])
    # FedAvg weighted by num-examples of arrays + 1 each round: every weight ends at 2
    assert set(toy_app.SEEN["final"].tolist()) == {2.0}
    metrics = run.metrics.to_dict("records")
    assert [m["round"] for m in metrics] == [0, 1, 2]
    # accuracy: the examples-weighted mean of eval_acc = i / 10 over 4 clients with 10 examples each
    assert metrics[1]["test_accuracy"] == pytest.approx(0.15) and metrics[1]["test_loss"] == pytest.approx(2.5)
    assert metrics[1]["time"] > rounds[0]["time"] and rounds[1]["started"] == metrics[1]["time"]


def test_untimed_evaluation_answers_every_node_at_once_and_leaves_the_clock(tmp_path):
    """flower.evaluation: untimed.  Client 0 is offline for the whole run (trace): timed, its evaluate message
    fails and the round ends when the slowest evaluate reply is in; untimed, every node's ClientApp answers at the
    moment the train round closed, so the next train round starts right then and client 0's accuracy (0) counts."""
    trace = tmp_path / "online.csv"
    trace.write_text("client,start_s,end_s\n0,1e8,1e9\n1,0,1e9\n2,0,1e9\n3,0,1e9\n")
    sections = {
        "population": {"availability": {"kind": "trace", "file": str(trace)}},
        "flower": {"run_config": {"num-server-rounds": 2}, "evaluation": "untimed"},
    }
    run = flower_run(tmp_path, **sections)
    rounds, metrics = run.rounds.to_dict("records"), run.metrics.to_dict("records")
    slowest = DOWNLOAD_S + 0.4 + UPLOAD_S  # client 3's train task; client 0 fails at once (offline)
    assert rounds[0]["time"] == pytest.approx(slowest)
    assert rounds[1]["started"] == rounds[0]["time"]  # the evaluation cost no virtual time
    assert metrics[1]["time"] == rounds[0]["time"]
    # every node answered, the offline one too: eval_acc i / 10 with 10 examples each
    assert metrics[1]["test_accuracy"] == pytest.approx(0.15) and metrics[1]["test_loss"] == pytest.approx(2.5)
    assert {e["event"] for e in events(run) if e.get("client") == 0} == {"fail"}  # train tasks only
    assert len([e for e in events(run) if e["event"] == "fail"]) == 2
    timed = flower_run(tmp_path, name="timed", **{**sections, "flower": {"run_config": {"num-server-rounds": 2}}})
    timed_rounds, timed_metrics = timed.rounds.to_dict("records"), timed.metrics.to_dict("records")
    # timed: the evaluate round trip (the train message's bytes down, 10 samples, a 53-byte reply up: 3 numbers
    # and the keys eval_acc, eval_loss, num-examples) before the next train round
    evaluate_s = DOWNLOAD_S + 0.1 + 0.05 + (3 * 8 + 8 + 9 + 12) / (10e6 / 8)
    gap = timed_rounds[1]["started"] - timed_rounds[0]["time"]
    assert gap == pytest.approx(evaluate_s, abs=2e-6)  # rounds.csv has 6 decimals
    assert timed_metrics[1]["test_accuracy"] == pytest.approx((1 + 2 + 3) / 30)  # client 0's evaluate failed


def test_offline_and_battery_failures_reach_the_strategy_as_error_replies(tmp_path):
    """Client 0 is offline (trace), client 3 needs 40 samples x 0.3 J = 12 J of a 10 J battery: it dies while
    computing.  FedAvg's aggregate_train receives both as NODE_UNAVAILABLE error replies, and client 0's ClientApp
    is never called (its Context is untouched)."""
    trace = tmp_path / "online.csv"
    trace.write_text("client,start_s,end_s\n0,1e8,1e9\n1,0,1e9\n2,0,1e9\n3,0,1e9\n")
    population = {
        "availability": {"kind": "trace", "file": str(trace)},
        "battery": {"capacity_j": 10.0, "joules_per_sample": 0.3, "joules_per_byte": 0.0, "min_level": 0.05},
    }
    run = flower_run(
        tmp_path, population=population, flower={"run_config": {"num-server-rounds": 1, "fraction-evaluate": 0.0}}
    )
    (seen,) = toy_app.SEEN["train"]
    errors = {node - NODE_ID_BASE: code for node, err, code in seen if err}
    assert errors == {0: ErrorCode.NODE_UNAVAILABLE, 3: ErrorCode.NODE_UNAVAILABLE}
    assert 0 not in toy_app.CALLS and toy_app.CALLS[3] == 1
    fails = {e["client"]: e["reason"] for e in events(run) if e["event"] == "fail"}
    assert fails == {0: "offline", 3: "battery"}
    (row,) = run.rounds.to_dict("records")
    assert (row["received"], row["failed_offline"], row["failed_battery"]) == (2, 1, 1)


def test_a_client_app_that_raises_fails_its_task_and_the_run_goes_on(tmp_path):
    run = flower_run(
        tmp_path, flower={"run_config": {"num-server-rounds": 2, "raise-on": "1", "fraction-evaluate": 0.0}}
    )
    assert run.status == "finished"
    for seen in toy_app.SEEN["train"]:
        codes = {node - NODE_ID_BASE: code for node, err, code in seen if err}
        assert codes == {1: ErrorCode.CLIENT_APP_RAISED_EXCEPTION}
    reasons = [e["reason"] for e in events(run) if e["event"] == "fail"]
    assert reasons == ["client_app: <class 'RuntimeError'>:<'partition 1 has no \"data\"'>"] * 2
    assert list(run.rounds["failed_client_app"]) == [1, 1] and list(run.rounds["received"]) == [3, 3]
    assert run.clients.set_index("client").loc[1, "failed_client_app"] == 2


def test_the_same_seed_gives_the_same_events_and_metrics(tmp_path):
    """Jitter, Markov availability and Flower's random node sampling (fraction-train 0.5 of 6): all seeded."""
    sections = {
        "data": {"clients": 6},
        "population": {
            "compute": {"samples_per_s": {"dist": "uniform", "low": 50, "high": 200}, "jitter_sigma": 0.3},
            "availability": {"kind": "markov", "p": 0.7, "mean_cycle_s": 2.0},
        },
        "flower": {"run_config": {"num-server-rounds": 4, "timeout": 0.6, "fraction-train": 0.5}},
    }
    first, second = (flower_run(tmp_path, name=name, **sections) for name in ("a", "b"))
    assert (first.path / "events.jsonl").read_text() == (second.path / "events.jsonl").read_text()
    drop = ["wall_seconds"]
    assert first.metrics.drop(columns=drop).equals(second.metrics.drop(columns=drop))
    assert (first.path / "rounds.csv").read_text() == (second.path / "rounds.csv").read_text()
    assert {e["event"] for e in events(first)} >= {"arrive", "fail", "aggregate"}
    assert set(first.rounds["selected"]) == {3}


def test_stop_rounds_ends_the_server_app_at_the_next_train_round(tmp_path):
    run = flower_run(tmp_path, stop={"rounds": 2}, flower={"run_config": {"num-server-rounds": 5}})
    assert list(run.rounds["round"]) == [1, 2] and run.status == "finished"
    assert list(run.metrics["round"]) == [0, 1, 2]  # the last round's evaluation still ran


def test_a_server_app_waiting_for_more_nodes_than_the_population_is_stopped(tmp_path):
    """Flower's sample_nodes would wait (sleeping in real time) for nodes that never connect."""
    with pytest.raises(ConfigError, match=r"needs more than the 4 clients of the population .*at most 4"):
        flower_run(tmp_path, flower={"run_config": {"min-available-nodes": 5}})
