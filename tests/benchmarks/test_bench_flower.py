"""benchmarks/performance/bench_flower.py compares like with like (issue 31, item 7): its plain loop (the floor)
and asyncfl's virtual Grid run the example Flower app's same rounds on the same nodes and learn the same
model, so the time between them is the Grid's overhead and nothing else.  Not timed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("flwr")

ROOT = Path(__file__).resolve().parents[2]
APP_DIR = ROOT / "examples" / "flower_digits"
_spec = importlib.util.spec_from_file_location("bench_flower", ROOT / "benchmarks" / "performance" / "bench_flower.py")
bench_flower = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_flower)


def weighted(replies, key: str) -> float:
    metrics = [r.content["metrics"] for r in replies]
    return sum(m[key] * m["num-examples"] for m in metrics) / sum(m["num-examples"] for m in metrics)


def test_the_grid_learns_what_the_plain_loop_learns(tmp_path, monkeypatch):
    """Three FedAvg rounds over 4 always-online nodes: the Grid's metrics.csv holds, round by round, the
    examples-weighted evaluation accuracy and loss of the replies the plain loop got (the loop's evaluate
    calls are every second send_and_receive).  Tolerance: FedAvg samples the nodes in an order drawn from
    Python's random (seeded by the Grid, not by the loop), and summing the weighted arrays in another order
    moves the float32 weights by rounding only."""
    monkeypatch.syspath_prepend(str(APP_DIR))
    from flower_digits.client_app import app as client_app
    from flower_digits.server_app import app as server_app

    import asyncfl.flower

    _, grid = bench_flower.run_loop(server_app, client_app, 4, bench_flower.run_config(3))
    evaluations = grid.calls[1::2]
    assert len(evaluations) == 3 and all(len(replies) == 4 for replies in evaluations)
    out = tmp_path / "grid"
    run = asyncfl.flower.run(server_app, client_app, bench_flower.scenario(4, 3, out, figures=False), out)
    metrics = run.metrics.dropna(subset=["test_accuracy"])
    assert list(metrics["round"]) == [1, 2, 3]
    assert list(metrics["test_accuracy"]) == pytest.approx([weighted(r, "eval_acc") for r in evaluations], abs=1e-6)
    assert list(metrics["test_loss"]) == pytest.approx([weighted(r, "eval_loss") for r in evaluations], rel=1e-4)
    assert run.summary["updates"] == 12  # every node trained every round: nothing failed


@pytest.mark.slow
def test_smallest_settings_print_the_ratios(monkeypatch, capsys):
    """The script's parent in this process (its children, which it times, are processes of their own)."""
    argv = ["bench_flower.py", "--clients", "2", "--rounds", "1", "--repeats", "1", "--skip-flower"]
    monkeypatch.setattr(sys, "argv", argv)
    bench_flower.main()
    assert "Grid overhead over the plain loop (the ServerApp's run" in capsys.readouterr().out
