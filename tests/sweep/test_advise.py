"""``advise``: timing-only runs over a grid of deadlines or K, advice read back from the run files.

Constant speeds make the numbers checkable by hand: with full batches of 10 samples and one local
step, a slow client (1 sample/s) needs 10 s of compute and a fast one (10 samples/s) 1 s, plus
two 1 ms latencies and transfers of microseconds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from asyncfl.cli import main
from tests.conftest import table

SYNC = {
    "name": "advice",
    "data": {"dataset": "digits", "clients": 8},
    "model": {"name": "logreg"},
    "training": {"local_steps": 1, "batch_size": 10},
    "population": {"device_trace": "devices.csv"},  # clients 0, 1 at 1 sample/s, the others at 10
    "server": {"mode": "sync", "deadline_s": 30},
    "stop": {"rounds": 3},
}
K_ASYNC = {**SYNC, "server": {"mode": "k_async", "k": 4, "concurrency": 4}, "algorithm": {"name": "fedbuff"}}


def _scenario(tmp_path, raw, name="scenario.yaml"):
    rows = [f"{c},{1 if c < 2 else 10},1000,1000,0.001" for c in range(8)]
    (tmp_path / "devices.csv").write_text(
        "client,samples_per_s,uplink_mbps,downlink_mbps,latency_s\n" + "\n".join(rows)
    )
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw))
    return path


def _advise(tmp_path, capsys, *args):
    code = main(["advise", *map(str, args), "--quiet"])
    return code, capsys.readouterr()


def test_deadline_below_the_slow_tiers_task_time_never_hears_it(tmp_path, capsys):
    path = _scenario(tmp_path, SYNC)
    out = tmp_path / "advice"
    code, captured = _advise(tmp_path, capsys, path, "--deadline", "4:12:4", "--out", out)
    assert code == 0 and str(out) in captured.out and "| deadline_s |" in captured.out
    rows = table(out / "advice.csv")
    assert [float(r["deadline_s"]) for r in rows] == [4.0, 8.0, 12.0]
    # The scenario's own setting (deadline 30) needs 3 rounds of 10.002 s (the slow tier's 10 s of compute
    # and two 1 ms latencies) = 30.006 s, so every setting runs 30.1 s (three digits, rounded up).
    assert [float(r["virtual_time_s"]) for r in rows] == [30.1] * 3
    # the slow tier (2 of 8 clients) needs 10 s: cut off at 4 and 8 s, heard at 12 s
    assert [float(r["never_heard_share"]) for r in rows] == [0.25, 0.25, 0.0]
    # rounds closing at 4, 8, ..., 28 s / 8, 16, 24 s / 10, 20, 30.006 s, and one more closed at 30.1 s
    assert [int(r["aggregations"]) for r in rows] == [8, 4, 4]
    assert [int(r["updates"]) for r in rows] == [48, 24, 24]  # 6 fast clients a round; 8 in the whole ones at 12 s
    assert float(rows[0]["mean_round_s"]) == 4.0 and float(rows[1]["mean_round_s"]) == 8.0  # closed at the deadline
    assert float(rows[2]["mean_round_s"]) == pytest.approx(10.002, abs=1e-3)  # closed when the slow tier answered
    assert float(rows[0]["updates_per_hour"]) == pytest.approx(48 / (30.1 / 3600))
    assert float(rows[2]["updates_per_hour"]) == pytest.approx(24 / (30.1 / 3600))
    # speed quartiles of 8 clients = pairs; the slowest pair is the slow tier
    assert [float(rows[0][f"share_q{q}"]) for q in (1, 2, 3, 4)] == pytest.approx([0, 1 / 3, 1 / 3, 1 / 3])
    assert [float(rows[2][f"share_q{q}"]) for q in (1, 2, 3, 4)] == pytest.approx([0.25] * 4)
    assert {r["staleness_max"] for r in rows} == {"0.0"}
    for r in rows:  # each setting is an ordinary timing-only run directory
        run = out / r["run_dir"]
        assert (run / "summary.json").is_file() and not (run / "events.jsonl").exists()
    reference = table(out / "scenario_setting" / "rounds.csv")  # the run that fixed the horizon
    assert [r["time"] for r in reference] == ["10.002042", "20.004083", "30.006125"]
    md = (out / "advice.md").read_text()
    assert "| deadline_s | virtual s | aggregations | updates / virtual h |" in md
    assert "| 4 | 30.1 | 8 | 5,741 | 4.00 | 0 / 33 / 33 / 33 |" in md
    assert "Held fixed: the virtual time**, 30.1 s for every setting" in md
    assert "own setting (deadline_s = 30) needs for its stop.rounds = 3, 30.0061 s, rounded up" in md
    assert (out / "advice.png").stat().st_size > 10_000


def test_k_async_grid_with_concurrency(tmp_path, capsys):
    path = _scenario(tmp_path, K_ASYNC)
    out = tmp_path / "k"
    code, _ = _advise(
        tmp_path, capsys, path, "--k", "2,4", "--concurrency", "4,8", "--set", "stop.rounds=2", "--out", out
    )
    assert code == 0
    rows = table(out / "advice.csv")
    assert [(int(r["k"]), int(r["concurrency"])) for r in rows] == [(2, 4), (4, 4), (2, 8), (4, 8)]
    assert [r["run_dir"] for r in rows] == ["k2_c4", "k4_c4", "k2_c8", "k4_c8"]
    # The scenario's own setting (K = 4, concurrency 4) makes its 2 aggregations by 3.006 s: every setting
    # runs 3.01 s, not 2 aggregations (which would take K = 2 half as long as K = 4)
    assert {r["virtual_time_s"] for r in rows} == {"3.01"}
    own = rows[1]
    assert table(out / "k4_c4" / "rounds.csv") == table(out / "scenario_setting" / "rounds.csv")
    assert int(own["aggregations"]) == 2
    updates = {r["run_dir"]: table(out / r["run_dir"] / "updates.csv") for r in rows}
    for r in rows:
        staleness = sorted(int(u["staleness"]) for u in updates[r["run_dir"]])
        assert int(r["updates"]) == len(staleness) == int(r["aggregations"]) * int(r["k"])
        assert int(r["aggregations"]) == len(table(out / r["run_dir"] / "rounds.csv"))
        assert float(r["staleness_max"]) == staleness[-1]
        assert float(r["staleness_mean"]) == pytest.approx(sum(staleness) / len(staleness))
    # 8 in flight, K = 4: all 8 start at 0; the 6 fast ones arrive at ~1.002, ~2.004 and ~3.006 s (18
    # updates), 16 of them in 4 aggregations at 1.002, 2.004 (two) and 3.006 s; the slow pair never arrives
    k4c8 = rows[3]
    assert int(k4c8["aggregations"]) == 4 and int(k4c8["updates"]) == 16
    assert float(k4c8["mean_round_s"]) == pytest.approx(3.006125 / 4, abs=1e-6)
    assert float(k4c8["never_heard_share"]) == 0.25 and float(k4c8["share_q1"]) == 0.0
    assert float(k4c8["updates_per_hour"]) == pytest.approx(16 / (3.01 / 3600))
    md = (out / "advice.md").read_text()
    assert "| k | concurrency | virtual s | aggregations |" in md and "| 4 | 8 | 3.01 | 4 |" in md


@pytest.mark.slow
def test_the_horizon_is_the_option_else_the_scenarios_virtual_time(tmp_path, capsys):
    path = _scenario(tmp_path, {**SYNC, "stop": {"rounds": 3, "virtual_time_s": 50}})
    code, _ = _advise(tmp_path, capsys, path, "--deadline", "4:12:8", "--out", tmp_path / "own")
    assert code == 0 and not (tmp_path / "own" / "scenario_setting").exists()  # nothing to measure
    rows = table(tmp_path / "own" / "advice.csv")
    assert [(r["virtual_time_s"], r["aggregations"]) for r in rows] == [("50.0", "13"), ("50.0", "5")]
    assert (
        "50 s for every setting, from the scenario's stop.virtual_time_s"
        in (tmp_path / "own" / "advice.md").read_text()
    )
    code, _ = _advise(tmp_path, capsys, path, "--deadline", "4:12:8", "--horizon", "100", "--out", tmp_path / "h")
    rows = table(tmp_path / "h" / "advice.csv")
    # 25 rounds of 4 s; 9 rounds of 10.002 s (8 updates each) and a 10th closed at 100 s, when the 6 fast
    # clients had answered (at 91.02 s) but not the slow pair (due at 100.02 s)
    assert [(r["virtual_time_s"], r["aggregations"], r["updates"]) for r in rows] == [
        ("100.0", "25", "150"), ("100.0", "10", "78")
    ]  # fmt: skip
    assert "100 s for every setting, from --horizon" in (tmp_path / "h" / "advice.md").read_text()


@pytest.mark.parametrize(
    "raw, args, words",
    [
        (SYNC, ["--deadline", "10:5:1"], ["--deadline '10:5:1'", "START:STOP:STEP", "5:60:5"]),
        (SYNC, ["--deadline", "5-60"], ["--deadline", "START:STOP:STEP"]),
        (SYNC, ["--deadline", "1:1000:1"], ["--deadline", "at most 200"]),
        (SYNC, ["--k", "1,5"], ["--k", "k_async", "--deadline"]),
        (SYNC, ["--deadline", "5:10:5", "--concurrency", "4"], ["--concurrency", "only with --k"]),
        (SYNC, [], ["exactly one of --deadline", "--k"]),
        (K_ASYNC, ["--deadline", "5:10:5"], ["--deadline", "sync", "--k"]),
        (K_ASYNC, ["--k", "0,5"], ["--k '0,5'", "integers >= 1"]),
        (K_ASYNC, ["--k", "2", "--concurrency", "x"], ["--concurrency 'x'", "integers >= 1"]),
        (K_ASYNC, ["--k", "4,9"], ["with --k 9:", "server.k (9)", "population"]),
        (K_ASYNC, ["--k", "4", "--horizon", "0"], ["--horizon '0'", "positive number of virtual seconds"]),
        (K_ASYNC, ["--k", "4", "--horizon", "1h"], ["--horizon '1h'", "e.g. 3600"]),
    ],
)
def test_bad_grids_are_one_clear_error(tmp_path, capsys, raw, args, words):
    path = _scenario(tmp_path, raw)
    code, captured = _advise(tmp_path, capsys, path, *args, "--out", tmp_path / "o")
    assert code == 2 and captured.err.startswith("error: ")
    for word in words:
        assert word in captured.err
    assert not (tmp_path / "o").exists()


def test_bad_grid_from_the_command_line_has_no_traceback(tmp_path):
    path = _scenario(tmp_path, SYNC)
    command = [sys.executable, "-m", "asyncfl", "advise", str(path), "--deadline", "0:5:1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and "--deadline" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_horizon_of_k_async_yaml_is_the_training_runs_time(tmp_path, capsys):
    """Issue 29, item 23: advise said k_async.yaml's 200 rounds need 549.65 virtual s, timing full batches of
    32 while the median client holds 18 samples; the training run reaches round 200 at 320.5 s.  Timing-only
    runs now deal the data like the training run, so the horizon is the training run's time, to the bit."""
    from asyncfl.runner.start import run_scenario
    from tests.conftest import scenario

    path, out = Path(__file__).parents[2] / "scenarios" / "k_async.yaml", tmp_path / "advice"
    code, _ = _advise(tmp_path, capsys, path, "--k", "10", "--concurrency", "20", "--out", out)
    assert code == 0
    reference = float(yaml.safe_load((out / "scenario_setting" / "summary.json").read_text())["virtual_time_s"])
    raw = {**yaml.safe_load(path.read_text()), "output": {"plot": False}, "eval": {"every_rounds": 200}}
    trained = run_scenario(scenario(**raw), tmp_path / "t")
    assert reference == float(yaml.safe_load((trained / "summary.json").read_text())["virtual_time_s"])
    assert reference == pytest.approx(320.5, abs=0.1)
    assert float(table(out / "advice.csv")[0]["virtual_time_s"]) == 321.0  # 320.507 rounded up to 3 digits
