"""Reliability: a run killed at any moment resumes to the same metrics; Ctrl-C and divergence leave a
readable run directory with a summary that says what happened."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import scenario, table

from asyncfl.algorithms import PARAMS
from asyncfl.cli import main
from asyncfl.runner import simulation, start
from asyncfl.runner.loop_guards import interrupts_deferred

MODES = {
    "sync": dict(
        data={"dataset": "digits", "clients": 10, "partition": {"kind": "dirichlet", "alpha": 0.5}},
        model={"name": "logreg"},
        training={"local_steps": 3, "momentum": 0.5},
        population={
            "compute": {"samples_per_s": {"dist": "lognormal", "median": 40, "sigma": 0.8}, "jitter_sigma": 0.2},
            "availability": {"kind": "bernoulli", "p": {"dist": "uniform", "low": 0.4, "high": 1.0}},
        },
        server={"mode": "sync", "deadline_s": 5.0, "late_updates": "next_round", "clients_per_round": 7},
        algorithm={"name": "mifa", "record_weights": True},
        stop={"rounds": 16},
        checkpoint={"every_rounds": 3, "min_wall_s": 0},
        output={"plot": False},
    ),
    "k_async": dict(
        data={"dataset": "digits", "clients": 10},
        model={"name": "logreg"},
        training={"local_steps": 3},
        population={
            "compute": {"samples_per_s": {"dist": "pareto", "scale": 20, "shape": 1.5}, "jitter_sigma": 0.2},
            "availability": {"kind": "markov", "p": 0.6, "mean_cycle_s": 20},
            "battery": {"capacity_j": 40, "joules_per_sample": 0.05, "charging": {"period_s": 60}},
        },
        server={"mode": "k_async", "k": 3, "concurrency": 5, "max_staleness": 4},
        algorithm={"name": "fedbuff", "record_weights": True},
        stop={"rounds": 16},
        checkpoint={"every_rounds": 3, "min_wall_s": 0},
        output={"plot": False},
    ),
}
LOGS = ("metrics.csv", "rounds.csv", "weights.csv", "clients.csv")
LOGS += ("updates.csv", "timeline_tasks.csv", "offline_periods.csv")  # what the figures read


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs (the run's own handlers are bypassed below)."""


def _same_results(a: Path, b: Path) -> None:
    for name in LOGS:
        strip = [{k: v for k, v in r.items() if k != "wall_seconds"} for r in table(a / name)]
        other = [{k: v for k, v in r.items() if k != "wall_seconds"} for r in table(b / name)]
        assert strip == other, name
    assert (a / "events.jsonl").read_bytes() == (b / "events.jsonl").read_bytes()
    first, second = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    for key in ("real_seconds",):
        first.pop(key), second.pop(key)
    assert first == second


def _kill_at_event(monkeypatch, s, run_dir: Path, n: int) -> bool:
    """Run until the n-th event line, then die like SIGKILL (no summary, a torn last line)."""
    count = {"events": 0}
    log = simulation.Simulation._log

    def dying_log(self, *args):
        if self.resume is None:
            count["events"] += 1
            if count["events"] == n:
                # What reached the OS stays on disk; the open handles die with the process.
                self.out.close()
                raise Killed
        log(self, *args)

    monkeypatch.setattr(simulation.Simulation, "_log", dying_log)
    monkeypatch.setattr(simulation.Simulation, "finish", lambda self, now: None)  # SIGKILL runs no cleanup
    try:
        start.run_scenario(s, run_dir)
    except Killed:
        pass
    else:
        return False
    finally:
        monkeypatch.undo()
    for name in ("events.jsonl", "metrics.csv"):  # a write cut short by the kill
        with open(run_dir / name, "a") as handle:
            handle.write('{"t":12.5,"cli')
    return True


@pytest.mark.parametrize("mode", sorted(MODES))
def test_resume_after_a_kill_at_many_moments_gives_identical_results(tmp_path, monkeypatch, mode):
    s = scenario(**MODES[mode])
    reference = start.run_scenario(s, tmp_path / "reference")
    lines = (reference / "events.jsonl").read_text().splitlines()
    total_events = sum('"event":"aggregate"' not in line for line in lines)  # client events go through _log
    kill_points = sorted({1, 2, *range(7, total_events, max(1, total_events // 12)), total_events - 1})
    for n in kill_points:
        run_dir = tmp_path / f"killed_at_{n}"
        assert _kill_at_event(monkeypatch, s, run_dir, n)
        start.resume_run(run_dir)
        _same_results(reference, run_dir)
    assert len(kill_points) >= 10


def _cli(*args, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "asyncfl", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs
    )


def _scenario_file(tmp_path: Path, mode: str, rounds: int) -> Path:
    import yaml

    raw = {**MODES[mode], "stop": {"rounds": rounds}, "checkpoint": {"every_rounds": 2, "min_wall_s": 0}}
    path = tmp_path / f"{mode}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _wait_for_rounds(run_dir: Path, rounds: int, process: subprocess.Popen, limit: float = 120) -> None:
    deadline = time.time() + limit
    while time.time() < deadline and process.poll() is None:
        path = run_dir / "rounds.csv"
        if path.is_file() and len(path.read_text().splitlines()) > rounds:
            return
        time.sleep(0.05)
    raise AssertionError(f"the run did not reach {rounds} rounds (exit {process.poll()})")


@pytest.mark.slow
@pytest.mark.parametrize("mode", sorted(MODES))
def test_sigkill_then_resume_from_the_command_line(tmp_path, mode):
    path = _scenario_file(tmp_path, mode, rounds=200)
    reference = tmp_path / "reference"
    assert main([str(path), "--quiet", "--out", str(reference)]) == 0  # the same command, in this process
    killed = tmp_path / "killed"
    process = _cli(str(path), "--quiet", "--out", str(killed))
    _wait_for_rounds(killed, 37, process)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert not (killed / "summary.json").exists()
    # what reached the disk is whole lines: every log is written a line (or a block of lines) at a time
    lines = (killed / "events.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) > 100 and all(line.endswith("\n") and json.loads(line) for line in lines)
    for name in ("rounds.csv", "updates.csv", "metrics.csv"):
        assert (killed / name).read_text().endswith("\n"), name
    resumed = _cli("run", "--resume", str(killed), "--quiet")
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    _same_results(reference, killed)


def _ctrl_c_as_a_terminal_delivers_it() -> None:
    """Python's own Ctrl-C handling, whatever the test runner inherited: a shell's background job (``cmd &``)
    starts with SIGINT ignored, and a Python started so keeps ignoring it (a user's terminal never does)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_writes_summary_and_figure_then_resumes(tmp_path):
    path = _scenario_file(tmp_path, "k_async", rounds=400)
    run_dir = tmp_path / "interrupted"
    process = _cli(
        str(path), "--quiet", "--out", str(run_dir), "--set", "output.plot=true",
        preexec_fn=_ctrl_c_as_a_terminal_delivers_it,
    )  # fmt: skip
    _wait_for_rounds(run_dir, 25, process)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130 and "Traceback" not in err
    assert f"python -m asyncfl run --resume {run_dir}" in err and str(run_dir) in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["rounds"] >= 25
    assert (run_dir / "accuracy_vs_time.png").stat().st_size > 0
    rows = table(run_dir / "metrics.csv")
    assert int(rows[-1]["round"]) == summary["rounds"]
    assert main(["run", "--resume", str(run_dir), "--quiet"]) == 0  # a resume's own process: the sigkill test
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"
    assert int(table(run_dir / "metrics.csv")[-1]["round"]) == 400


@pytest.mark.slow
def test_divergence_stops_with_a_clear_message_and_readable_files(tmp_path, capsys):
    path = _scenario_file(tmp_path, "k_async", rounds=30)
    run_dir = tmp_path / "diverged"
    overrides = ["--set", "training.lr=1e38", "--set", "training.momentum=0.9"]
    process = _cli(str(path), "--quiet", "--out", str(run_dir), *overrides, env={**os.environ, "PYTHONHASHSEED": "0"})
    _, err = process.communicate(timeout=300)
    assert process.returncode == 3, err
    assert "diverged at round 1" in err and "Traceback" not in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "diverged" and summary["diverged_round"] == 1
    assert [r["round"] for r in table(run_dir / "metrics.csv")] == ["0", "1"]
    assert len(table(run_dir / "rounds.csv")) == 1
    status = main(["run", "--resume", str(run_dir)])
    assert status == 3 and "already ended (diverged); nothing to resume" in capsys.readouterr().out  # 3: it diverged


def test_ctrl_c_during_a_round_commit_is_raised_only_after_the_commit():
    # Python's Ctrl-C handler, as in an interactive session, even where the runner started with SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _commit_steps_under_ctrl_c()
    finally:
        signal.signal(signal.SIGINT, previous)


def _commit_steps_under_ctrl_c() -> None:
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the signal is delivered here; it must not cut the block short
            steps.append("rows written")
    assert steps == ["rows written"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with interrupts_deferred():  # no signal: nothing is raised
        steps.append("next round")
    assert steps == ["rows written", "next round"]


# every algorithm that says it keeps a memory (its tags), under a mode it runs in
MEMORY_ALGORITHMS = {
    name: "sync" if "sync" in params.modes else "k_async" for name, params in PARAMS.items() if params.tags.keeps_memory
}


@pytest.mark.parametrize("name", sorted(MEMORY_ALGORITHMS))
def test_resume_restores_every_strategy_memory(tmp_path, monkeypatch, name):
    """The checkpoint holds the strategy's state_dict (tensors and plain values, no strategy object) and
    nothing else that is not plain either (it loads with weights_only, so reading it runs no code), and a
    run killed half-way resumes to the same files whatever the algorithm remembers."""
    import torch

    from asyncfl.runner.checkpoint import FILE

    raw = {**MODES[MEMORY_ALGORITHMS[name]], "algorithm": {"name": name, "record_weights": True}}
    if PARAMS[name].tags.server_k:  # it requires its own server.k
        raw["server"] = {**raw["server"], "k": PARAMS[name].tags.server_k}
    s = scenario(**raw)
    reference = start.run_scenario(s, tmp_path / "reference")
    lines = (reference / "events.jsonl").read_text().splitlines()
    killed = tmp_path / "killed"
    assert _kill_at_event(monkeypatch, s, killed, len(lines) // 2)
    checkpoint = torch.load(killed / FILE, weights_only=True)
    state = checkpoint["learner"]["strategy"]
    assert isinstance(state, dict) and state, state

    def plain(value) -> bool:
        if isinstance(value, dict):
            return all(plain(v) for v in value.values())
        if isinstance(value, (list, tuple)):
            return all(plain(v) for v in value)
        return value is None or isinstance(value, (int, float, str, bool, torch.Tensor))

    assert plain(checkpoint)
    assert checkpoint["learner"]["jobs"]["pending"] or checkpoint["learner"]["jobs"]["done"]  # jobs in flight
    start.resume_run(killed)
    _same_results(reference, killed)


SERVER_OPTIMIZERS = {
    "avgm": {"kind": "avgm", "lr": 1.0, "beta1": 0.9},
    "adagrad": {"kind": "adagrad", "lr": 0.05},
    "adam": {"kind": "adam", "lr": 0.05},
    "yogi": {"kind": "yogi", "lr": 0.05},
}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("optimizer", sorted(SERVER_OPTIMIZERS))
def test_a_run_with_a_server_optimizer_is_deterministic_and_resumes_identically(tmp_path, monkeypatch, mode, optimizer):
    """fedavg (sync) and fedbuff (k_async) with each server optimizer: the optimizer's m and v go into the
    checkpoints (every 3 aggregations), so a kill anywhere resumes to the uninterrupted run's results."""
    name = {"sync": "fedavg", "k_async": "fedbuff"}[mode]
    algorithm = {"name": name, "record_weights": True, "server_optimizer": SERVER_OPTIMIZERS[optimizer]}
    s = scenario(**{**MODES[mode], "algorithm": algorithm})
    reference = start.run_scenario(s, tmp_path / "reference")
    _same_results(reference, start.run_scenario(s, tmp_path / "again"))  # same scenario + seed: same run
    plain = start.run_scenario(scenario(**{**MODES[mode], "algorithm": {"name": name}}), tmp_path / "plain")
    assert table(plain / "metrics.csv") != table(reference / "metrics.csv")  # the optimizer acted
    lines = (reference / "events.jsonl").read_text().splitlines()
    total_events = sum('"event":"aggregate"' not in line for line in lines)
    for n in sorted({2, total_events // 3, total_events // 2, (3 * total_events) // 4, total_events - 1}):
        run_dir = tmp_path / f"killed_at_{n}"
        assert _kill_at_event(monkeypatch, s, run_dir, n)
        start.resume_run(run_dir)
        _same_results(reference, run_dir)
