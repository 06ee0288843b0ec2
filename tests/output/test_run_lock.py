"""One writer per run (and sweep) directory: a second process is refused before it touches anything,
a killed run leaves no stale lock, and a resume continues only logs that are intact.

The concurrency checks use real processes: the first writer is paused (SIGSTOP) while it holds its
directory, so that the second one is sure to meet it, then let go (SIGCONT) to finish.  The second writer
is a process of its own once per kind of directory (its exit status and stderr); the other second writers
are asyncfl.cli.main in this process, which a lock held by another process refuses just the same."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from asyncfl.cli import main

SCENARIO = {
    "data": {"dataset": "digits", "clients": 10},
    "model": {"name": "logreg"},
    "training": {"local_steps": 3},
    "population": {
        "compute": {"samples_per_s": {"dist": "pareto", "scale": 20, "shape": 1.5}, "jitter_sigma": 0.2},
        "availability": {"kind": "markov", "p": 0.6, "mean_cycle_s": 20},
    },
    "server": {"mode": "k_async", "k": 3, "concurrency": 5, "max_staleness": 4},
    "algorithm": {"name": "fedbuff", "record_weights": True},
    "stop": {"rounds": 120},
    "checkpoint": {"every_rounds": 4, "min_wall_s": 0},
    "output": {"plot": False},
}
LOGS = ("metrics.csv", "rounds.csv", "weights.csv", "updates.csv", "timeline_tasks.csv", "events.jsonl")


def _cli(*args: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "asyncfl", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, lines: int, process: subprocess.Popen, limit: float = 240) -> None:
    """Until ``path`` holds more than ``lines`` lines (a progress condition, not a timing assumption)."""
    deadline = time.time() + limit
    while time.time() < deadline and process.poll() is None:
        if path.is_file() and len(path.read_bytes().splitlines()) > lines:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} did not reach {lines} lines (exit {process.poll()})")


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file's bytes but the lock file's (a stale one, of a killed run, is removed by the next writer)."""
    files = [p for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lock"]
    return {str(p.relative_to(folder)): p.read_bytes() for p in files}


def _logs_without_wall_clock(run_dir: Path) -> dict[str, list[str]]:
    out = {}
    for name in LOGS:
        lines = (run_dir / name).read_text().splitlines()
        if name == "metrics.csv":  # wall_seconds is the last column
            lines = [line.rsplit(",", 1)[0] for line in lines]
        out[name] = lines
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The scenario file, its uninterrupted reference run and a run killed (SIGKILL) part-way."""
    root = tmp_path_factory.mktemp("lock")
    path = root / "k_async.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    reference = root / "reference"
    assert main([str(path), "--quiet", "--out", str(reference)]) == 0  # the same command, in this process
    killed = root / "killed"
    process = _cli(str(path), "--quiet", "--out", str(killed))
    _wait_for(killed / "rounds.csv", 30, process)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert not (killed / "summary.json").exists()
    return {"scenario": path, "reference": reference, "killed": killed, "killed_pid": process.pid}


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / run_dir.name
    shutil.copytree(run_dir, target)
    return target


@pytest.mark.slow
def test_a_resume_of_a_running_run_is_refused_and_changes_nothing(files, tmp_path):
    run_dir = tmp_path / "run"
    first = _cli(str(files["scenario"]), "--quiet", "--out", str(run_dir))
    _wait_for(run_dir / "rounds.csv", 20, first)
    first.send_signal(signal.SIGSTOP)  # holds the lock, writes nothing
    try:
        before = _snapshot(run_dir)
        second = _cli("run", "--resume", str(run_dir), "--quiet")
        _, err = second.communicate(timeout=300)
        assert second.returncode == 2, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert f"another process (PID {first.pid}) is writing this run directory" in err and str(run_dir) in err
        assert _snapshot(run_dir) == before  # nothing truncated, nothing written
        assert main([str(files["scenario"]), "--quiet", "--out", str(run_dir)]) == 2  # a new run into it: refused too
    finally:
        first.send_signal(signal.SIGCONT)
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    for path in run_dir.iterdir():
        if path.suffix == ".npz":  # the final model, binary: whole when every array of it reads back
            with np.load(path) as arrays:
                assert all(arrays[name].size for name in arrays.files), path.name
        else:
            assert b"\0" not in path.read_bytes(), path.name
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"
    assert _logs_without_wall_clock(run_dir) == _logs_without_wall_clock(files["reference"])
    assert not (run_dir / ".lock").exists()  # released (and removed) at the end


@pytest.mark.slow
def test_a_killed_run_leaves_no_stale_lock_and_resumes(files, tmp_path, capsys):
    run_dir = _copy(files["killed"], tmp_path)
    assert (run_dir / ".lock").read_text().strip() == str(files["killed_pid"])  # the file stays; its lock died
    assert main(["run", "--resume", str(run_dir), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"run directory: {run_dir}" in err  # said as the resume starts
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"
    assert _logs_without_wall_clock(run_dir) == _logs_without_wall_clock(files["reference"])
    assert not (run_dir / ".lock").exists()


def _overwrite(path: Path, at: int, data: bytes) -> None:
    with open(path, "r+b") as handle:
        handle.seek(at)
        handle.write(data)


DAMAGE = {  # what is done to a log of the killed run -> what the refusal says
    "nul block": ("metrics.csv", lambda p: _overwrite(p, 60, b"\0" * 16), "holds NUL bytes (the first at byte 60)"),
    "changed byte": ("rounds.csv", lambda p: _overwrite(p, 80, b"9"), "differs from what the checkpoint recorded"),
    "cut short": ("events.jsonl", lambda p: p.write_bytes(p.read_bytes()[:100]), "is 100 bytes long, shorter"),
    "missing": ("updates.csv", lambda p: p.unlink(), "updates.csv is missing"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
@pytest.mark.slow
def test_a_resume_refuses_damaged_logs_and_changes_nothing(files, tmp_path, capsys, case):
    name, damage, needle = DAMAGE[case]
    run_dir = _copy(files["killed"], tmp_path)
    if case == "changed byte":
        assert (run_dir / name).read_bytes()[80:81] != b"9"
    damage(run_dir / name)
    before = _snapshot(run_dir)
    assert main(["run", "--resume", str(run_dir), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"--resume {run_dir}: {name} " in err and needle in err, err
    assert _snapshot(run_dir) == before


@pytest.mark.parametrize("text", ['{"status": "interr', "", "\xff\xfe", "[1, 2]"])
def test_a_resume_with_an_unreadable_summary_names_it(files, tmp_path, capsys, text):
    run_dir = _copy(files["killed"], tmp_path)
    (run_dir / "summary.json").write_bytes(text.encode("latin-1"))
    before = _snapshot(run_dir)
    assert main(["run", "--resume", str(run_dir), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"--resume {run_dir}: {run_dir / 'summary.json'}" in err and "Traceback" not in err, err
    assert _snapshot(run_dir) == before


def _lock_holder(directory: Path) -> str | None:
    try:
        return (directory / ".lock").read_text().strip()
    except OSError:
        return None


def _pause_inside_a_run(process: subprocess.Popen, runs: list[Path]) -> Path:
    """Stop ``process`` (SIGSTOP) at a moment when it holds one of ``runs``: the one whose lock file names
    its PID (written once the lock is taken; the file is removed before the lock is let go).  Paused
    between two runs, it is let go a moment and paused again: the state checked is the process's, not a
    guess about its speed (a fast machine finished the first run before a fixed pause reached it)."""
    for _ in range(2000):
        process.send_signal(signal.SIGSTOP)
        assert process.poll() is None, "the sweep ended before it could be paused inside a run"
        held = [run for run in runs if _lock_holder(run) == str(process.pid)]
        if held:
            return held[0]
        process.send_signal(signal.SIGCONT)
        time.sleep(0.002)
    raise AssertionError("never paused inside a run")


@pytest.mark.slow
def test_a_second_writer_of_a_sweep_is_refused(files, tmp_path, capsys):
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump({**SCENARIO, "stop": {"rounds": 200}, "seeds": [0, 1]}))
    sweep_dir = tmp_path / "sweep"
    first = _cli(str(study), "--quiet", "--out", str(sweep_dir))
    _wait_for(sweep_dir / "base" / "seed0" / "rounds.csv", 10, first)
    running = _pause_inside_a_run(first, [sweep_dir / "base" / f"seed{seed}" for seed in (0, 1)])
    try:
        before = _snapshot(sweep_dir)
        # report and plot write into the same directories (report.md, figures): they are writers too
        writers = (["run", "--resume", str(sweep_dir), "--quiet"], ["run", "--resume", str(running), "--quiet"],
                   ["report", str(sweep_dir)], ["plot", str(sweep_dir)], ["plot", str(running)])  # fmt: skip
        second = _cli(*writers[0])
        _, err = second.communicate(timeout=300)
        assert second.returncode == 2 and "Traceback" not in err, err
        assert f"another process (PID {first.pid}) is writing this" in err
        for args in writers[1:]:
            assert main(args) == 2, args
            err = capsys.readouterr().err
            assert "Traceback" not in err and f"another process (PID {first.pid}) is writing this" in err, (args, err)
        assert _snapshot(sweep_dir) == before
    finally:
        first.send_signal(signal.SIGCONT)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert out.strip().splitlines()[-1] == str(sweep_dir)
    for seed in (0, 1):
        assert json.loads((sweep_dir / "base" / f"seed{seed}" / "summary.json").read_text())["status"] == "finished"
    assert not list(sweep_dir.rglob(".lock"))


def test_a_resume_that_restarts_in_place_holds_its_directory_once(tmp_path):
    """Without checkpoints a resume starts the run again in its directory: the same process takes the
    lock it already holds (re-entrant), and the lock file is gone afterwards."""
    from asyncfl.config import validate_scenario
    from asyncfl.runner.start import resume_run, run_scenario

    raw = {**SCENARIO, "stop": {"rounds": 3}, "checkpoint": {"every_rounds": None}}
    run_dir = run_scenario(validate_scenario(raw, "<test>"), tmp_path / "run")
    (run_dir / "summary.json").unlink()  # as if killed before its end
    assert resume_run(run_dir) == run_dir
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"
    assert not (run_dir / ".lock").exists()
