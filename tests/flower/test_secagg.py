"""Flower's SecAgg+ workflow (unmodified, secagg_app.py) on the virtual Grid: the sum it aggregates, the virtual time
its four stages cost, a client dropping mid-protocol, one record per federated round and determinism."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

import secagg_app  # noqa: E402  (tests/flower is on sys.path: pytest's rootdir-relative import)

import asyncfl.flower  # noqa: E402

# SecAggPlusWorkflow's defaults: each client quantizes (num_examples / max_weight) x parameters stochastically on a
# grid of 2 x clipping_range / quantization_range; the unmasked sum is divided by the sum of those weights
STEP = 2 * 8.0 / 4194304
MAX_WEIGHT = 1000.0
# population defaults: downlink 50 Mbps, uplink 10 Mbps, latency 0.05 s, 100 samples/s
DOWN_BPS, UP_BPS, LATENCY = 50e6 / 8, 10e6 / 8, 0.05


def quantization_bound(examples: list[int]) -> float:
    """The largest error of SecAgg+'s weighted mean over clients with ``examples``: each client's rounding is
    under one STEP, and the sum is divided by the weights' sum (their own rounding is 1e-6 relative, negligible)."""
    return len(examples) * STEP / (sum(examples) / MAX_WEIGHT)


def secagg_run(
    tmp_path: Path,
    name: str,
    secagg: int = 1,
    rounds: int = 1,
    flower_extra: dict | None = None,
    fraction_evaluate: float = 0.0,
    **sections,
):
    """secagg_app on 4 clients (partition i: 10 (i + 1) examples, parameters + i + 1); legacy replies name their
    examples ``num_examples``, which the compute-work contract reads."""
    secagg_app.SEEN.clear()
    run_config = {"num-server-rounds": rounds, "secagg": secagg, "fraction-evaluate": fraction_evaluate}
    flower = {"run_config": run_config, "work": {"examples": "num_examples"}, **(flower_extra or {})}
    keys = {"data": {"clients": 4}, "output": {"plot": False}, "flower": flower, **sections}
    client_app = [secagg_app.plain_client_app, secagg_app.client_app, secagg_app.secagg_client_app][secagg]
    run = asyncfl.flower.run(secagg_app.server_app, client_app, keys, tmp_path / name)
    return run, {key: list(value) for key, value in secagg_app.SEEN.items()}


def test_secure_aggregation_gives_plain_fedavg_sum_within_its_quantization(tmp_path):
    """Same replies, two rounds: FedAvg's weighted mean of parameters + i + 1 with weights 10 (i + 1) adds
    (1 + 4 + 9 + 16) / 10 = 3 a round (bias 0.5 -> 3.5 -> 6.5, exact in the plain run); SecAgg+'s is within its
    quantization bound of it (1.5e-4 a round, the errors adding up over rounds)."""
    _, secure = secagg_run(tmp_path, "secagg", rounds=2)
    _, plain = secagg_run(tmp_path, "plain", secagg=0, rounds=2)
    assert [a[1].tolist() for a in plain["aggregated"]] == [[3.5] * 3, [6.5] * 3]
    bound = quantization_bound([10, 20, 30, 40])
    assert bound == pytest.approx(1.526e-4, rel=1e-3)
    for rnd, (ours, theirs) in enumerate(zip(secure["aggregated"], plain["aggregated"], strict=True), start=1):
        for secure_array, plain_array in zip(ours, theirs, strict=True):
            error = np.max(np.abs(secure_array - plain_array))
            assert 0 < error < rnd * bound  # rounding happened, within the bound (errors add up over rounds)
    # the strategy's aggregate_fit got every client, with its examples, as in the plain run
    assert secure["results"] == plain["results"] and secure["failures"] == [0, 0]


def test_a_legacy_evaluate_reply_s_metrics_reach_metrics_csv(tmp_path):
    """A NumPyClient's evaluate returns (loss = i, 10 examples, {"accuracy": i / 10}); Flower's compat layer puts the
    loss in a MetricRecord and the metrics dict in a ConfigRecord: both are read, examples-weighted."""
    flower = {"metrics": {"accuracy": "accuracy", "loss": "loss"}}
    run, _ = secagg_run(tmp_path, "evaluated", flower_extra=flower, fraction_evaluate=1.0)
    (row,) = run.metrics.dropna(subset=["test_accuracy"]).to_dict("records")
    assert row["test_accuracy"] == pytest.approx((0 + 0.1 + 0.2 + 0.3) / 4)
    assert row["test_loss"] == pytest.approx((0 + 1 + 2 + 3) / 4)


def test_each_stage_costs_its_round_trips_and_the_round_is_one_record(tmp_path):
    """The setup stage by hand: a 139-byte ConfigRecord down (keys and values of stage 'setup', sample_num,
    share_num, threshold, clipping_range, target_range, mod_range, max_weight: 10 + 18 + 17 + 17 + 22 + 20 + 17 + 18)
    and two 215-byte PEM public keys up (+ the keys pk1, pk2); no compute.  Four stages a round: rounds.csv has one
    row per federated round, spanning all four, so a SecAgg+ round lasts more than the plain round (one round trip)
    by at least the three other stages' latencies."""
    run, _ = secagg_run(tmp_path, "secagg", rounds=2)
    plain, _ = secagg_run(tmp_path, "plain", secagg=0, rounds=2)
    setup_s = LATENCY + 139 / DOWN_BPS + LATENCY + (2 * 215 + 6) / UP_BPS
    arrivals = run.events[run.events["event"] == "arrive"]
    assert arrivals["t"].iloc[:4].tolist() == pytest.approx([setup_s] * 4, abs=1e-8)
    assert len(arrivals) == 2 * 4 * 4  # 2 rounds x 4 stages x 4 clients
    rounds, plain_rounds = run.rounds.to_dict("records"), plain.rounds.to_dict("records")
    assert [r["round"] for r in rounds] == [1, 2] and [r["received"] for r in rounds] == [4, 4]
    assert rounds[1]["started"] == rounds[0]["time"]
    # the round's span covers every stage: it ends at the last unmask reply
    assert rounds[0]["time"] == pytest.approx(arrivals["t"].iloc[15], abs=1e-6)
    assert rounds[0]["time"] - plain_rounds[0]["time"] > 3 * 2 * LATENCY
    # the numbers docs/how-to/flower.md quotes (fixed by the messages' sizes)
    assert (rounds[0]["time"], plain_rounds[0]["time"]) == pytest.approx((0.804847, 0.501256), abs=1e-6)
    # compute happens in the collect stage only (client 3: 40 examples at 100 samples/s), as in the plain round
    assert rounds[0]["slowest_task_s"] - plain_rounds[0]["slowest_task_s"] > 0
    assert list(run.updates["round"]) == [1] * 4 + [2] * 4 and set(run.updates["staleness"]) == {0}


def test_a_client_dropping_mid_protocol_is_left_out_of_the_sum_as_flower_does(tmp_path):
    """Client 3 goes offline at 0.3 s, during the collect-masked-vectors stage (it started at 0.2 and computes 0.4 s):
    it fails there (NODE_UNAVAILABLE), Flower's unmask stage rebuilds its pairwise masks from the shares the others
    hold, and the sum is FedAvg over clients 0-2: bias 0.5 + (10 + 40 + 90) / 60."""
    trace = tmp_path / "online.csv"
    trace.write_text("client,start_s,end_s\n0,0,1e9\n1,0,1e9\n2,0,1e9\n3,0,0.3\n")
    run, seen = secagg_run(tmp_path, "drop", population={"availability": {"kind": "trace", "file": str(trace)}})
    (aggregated,) = seen["aggregated"]
    expected = 0.5 + 140 / 60
    assert np.max(np.abs(aggregated[1] - expected)) < quantization_bound([10, 20, 30])
    assert seen["results"] == [[(secagg_app_node(i), 10 * (i + 1)) for i in range(3)]]
    # Flower's collect stage appends each error reply to its failures twice (secaggplus_workflow.py, in its sum
    # loop and again in its "Backward compatibility" loop): aggregate_fit gets 2 failures for the one client
    assert seen["failures"] == [2]
    (row,) = run.rounds.to_dict("records")
    assert (row["selected"], row["received"], row["failed_offline"]) == (4, 3, 1)
    fails = run.events[run.events["event"] == "fail"]
    assert list(fails["client"]) == [3] and fails["t"].tolist() == pytest.approx([0.3])
    assert list(run.updates["client"]) == [0, 1, 2]


def test_a_halted_protocol_is_a_round_that_aggregated_nothing(tmp_path):
    """A reconstruction threshold of all 4 shares: client 3 dropping in the collect stage leaves too few live
    neighbours, and Flower's workflow halts before unmasking (aggregate_fit never runs); the next round halts after
    setup (client 3 still offline).  Each halted round is one record with no updates, numbered in turn."""
    trace = tmp_path / "online.csv"
    trace.write_text("client,start_s,end_s\n0,0,1e9\n1,0,1e9\n2,0,1e9\n3,0,0.3\n")
    secagg_app.SEEN.clear()
    keys = {
        "data": {"clients": 4}, "output": {"plot": False},
        "population": {"availability": {"kind": "trace", "file": str(trace)}},
        "flower": {"run_config": {"num-server-rounds": 2, "reconstruction-threshold": 1.0},
                   "work": {"examples": "num_examples"}},
    }  # fmt: skip
    run = asyncfl.flower.run(secagg_app.server_app, secagg_app.client_app, keys, tmp_path / "halted")
    assert "aggregated" not in secagg_app.SEEN
    rounds = run.rounds.to_dict("records")
    assert [(r["round"], r["selected"], r["received"], r["failed_offline"]) for r in rounds] == [
        (1, 4, 0, 1),
        (2, 4, 0, 1),
    ]
    arrivals = run.events[run.events["event"] == "arrive"]
    assert rounds[0]["time"] == pytest.approx(arrivals["t"].iloc[10], abs=1e-6)  # setup 4, share keys 4, collect 3
    assert rounds[1]["started"] == rounds[0]["time"] and len(arrivals) == 4 + 4 + 3 + 3
    assert run.status == "finished"


def secagg_app_node(partition: int) -> int:
    return (1 << 32) + partition


def test_the_same_seed_gives_the_same_files(tmp_path):
    """SecAgg+'s keys and masks come from the OS's randomness (os.urandom, OpenSSL), but they cancel in the sum and
    their sizes are fixed; Flower's sampling and stochastic rounding draw from the seeded generators."""
    sections = {"population": {"compute": {"jitter_sigma": 0.3}}}
    first, _ = secagg_run(tmp_path, "a", rounds=2, **sections)
    second, _ = secagg_run(tmp_path, "b", rounds=2, **sections)
    for name in ("events.jsonl", "rounds.csv", "updates.csv", "clients.csv"):
        assert (first.path / name).read_bytes() == (second.path / name).read_bytes(), name


def test_stop_rounds_ends_the_workflow_before_a_round_s_setup_never_mid_protocol(tmp_path):
    run, seen = secagg_run(tmp_path, "stop", rounds=3, stop={"rounds": 1})
    assert run.status == "finished" and list(run.rounds["round"]) == [1]
    assert len(seen["aggregated"]) == 1
    assert len(run.events[run.events["event"] == "arrive"]) == 4 * 4


def test_another_thread_asking_for_nodes_does_not_count_and_is_stopped_after_the_run(tmp_path):
    """DefaultWorkflow's node-polling thread (every 5 real seconds): its calls answer every node without counting as
    the ServerApp waiting (more than the 5 that stop a waiting ServerApp), and once the run is over its next call
    gets Flower's RunNotRunningException, which ends that thread (flwr/server/compat/app_utils.py)."""
    from flwr.serverapp import ServerApp
    from flwr.supercore.run import RunNotRunningException

    seen: dict = {}
    app = ServerApp()

    def ask(grid, times: int) -> None:
        try:
            seen.setdefault("answers", []).extend(len(list(grid.get_node_ids())) for _ in range(times))
        except RunNotRunningException:
            seen["stopped"] = True

    @app.main()
    def main(grid, context) -> None:
        seen["grid"] = grid
        poller = threading.Thread(target=ask, args=(grid, 12))
        poller.start()
        poller.join()

    asyncfl.flower.run(app, secagg_app.client_app, {"data": {"clients": 4}, "output": {"plot": False}}, tmp_path / "r")
    assert seen["answers"] == [4] * 12
    after = threading.Thread(target=ask, args=(seen["grid"], 1))
    after.start()
    after.join()
    assert seen["stopped"] and seen["answers"] == [4] * 12


def test_the_workflow_s_timeout_is_each_stage_s_virtual_deadline(tmp_path):
    """SecAggPlusWorkflow(timeout=0.45): every stage waits at most 0.45 virtual seconds.  In the collect stage
    client 3 computes 0.4 s (plus 0.1 s of latency and its bytes): its reply is given up at the deadline (late,
    failed_deadline), Flower unmasks without it and the sum is FedAvg over clients 0-2, as for a dropout; the unmask
    stage starts at the collect stage's deadline."""
    secagg_app.SEEN.clear()
    flower = {"run_config": {"num-server-rounds": 1, "timeout": 0.45}, "work": {"examples": "num_examples"}}
    keys = {"data": {"clients": 4}, "output": {"plot": False}, "flower": flower}
    run = asyncfl.flower.run(secagg_app.server_app, secagg_app.client_app, keys, tmp_path / "deadline")
    (aggregated,) = secagg_app.SEEN["aggregated"]
    assert np.max(np.abs(aggregated[1] - (0.5 + 140 / 60))) < quantization_bound([10, 20, 30])
    (row,) = run.rounds.to_dict("records")
    assert (row["selected"], row["received"], row["late"], row["failed_deadline"]) == (4, 3, 1, 1)
    arrivals = run.events[run.events["event"] == "arrive"]
    collect_start = arrivals["t"].iloc[7]  # the share-keys stage's last reply
    unmask = arrivals["t"].iloc[-3:]  # clients 0-2 after the collect stage closed at its deadline
    assert unmask.min() > collect_start + 0.45 and row["time"] == pytest.approx(unmask.max(), abs=1e-6)


def test_flower_s_secagg_workflow_runs_as_secaggplus_does(tmp_path):
    """SecAggWorkflow (SecAgg+ with every node a neighbour of every other) with secagg_mod: the same four stages,
    the same sum within the quantization bound, the same clock."""
    run, seen = secagg_run(tmp_path, "secagg", secagg=2)
    plus, _ = secagg_run(tmp_path, "plus")
    assert np.max(np.abs(seen["aggregated"][0][1] - 3.5)) < quantization_bound([10, 20, 30, 40])
    assert (tmp_path / "secagg" / "events.jsonl").read_bytes() == (tmp_path / "plus" / "events.jsonl").read_bytes()
    assert run.rounds.equals(plus.rounds)
