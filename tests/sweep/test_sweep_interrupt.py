"""Ctrl-C stops a sweep with exit 130 and leaves it resumable, also when it lands between two runs, where
the collector runs a finished run's finalizers (tqdm's ``__del__``): Python drops an exception raised in a
finalizer, so that Ctrl-C used to vanish and the sweep went on to exit 0.  Real subprocesses, real SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from asyncfl.cli import main
from tests.study.test_study import BASE

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [0, 1, 2, 3, 4]

# the sweep's command line, where the object of a finished run that the collector frees first after run 2
# sends the process SIGINT from its __del__ (as a Ctrl-C landing in tqdm's __del__ would): deterministic
IN_A_FINALIZER = textwrap.dedent(
    """
    import os, signal, sys, time
    from asyncfl.sweep import jobs
    from asyncfl.cli.main import main

    real, done = jobs.run_job, []

    class CtrlCWhenCollected:
        def __init__(self):
            self.cycle = self  # freed by the collector between runs, not when the run returns

        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the handler runs here, inside the finalizer

    def run_job(scenario, run_dir, resume=False):
        summary = real(scenario, run_dir, resume)
        done.append(run_dir)
        if len(done) == 2:
            CtrlCWhenCollected()
        return summary

    jobs.run_job = run_job
    sys.exit(main(sys.argv[1:]))
    """
)


def _ctrl_c_as_a_terminal_delivers_it() -> None:
    """Python's own Ctrl-C handling, even where the test runner started with SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _study(tmp_path: Path) -> Path:
    path = tmp_path / "study.yaml"
    raw = {**BASE, "output": {"plot": False, "events": "none", "dir": str(tmp_path / "runs")}, "seeds": SEEDS}
    path.write_text(yaml.safe_dump(raw))
    return path


def _finished(sweep: Path) -> list[int]:
    statuses = {p.parent.name: json.loads(p.read_text())["status"] for p in sweep.glob("base/seed*/summary.json")}
    return sorted(int(name[4:]) for name, status in statuses.items() if status == "finished")


def _popen(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, preexec_fn=_ctrl_c_as_a_terminal_delivers_it,
                            **pipes)  # fmt: skip


@pytest.mark.slow
def test_ctrl_c_in_a_finalizer_between_runs_stops_the_sweep_with_130(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    process = _popen("-c", IN_A_FINALIZER, "run", str(_study(tmp_path)), "--quiet", "--out", str(sweep))
    _, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert f"interrupted; continue with: python -m asyncfl run --resume {sweep}" in err
    assert _finished(sweep) == [0, 1]  # run 3 never started
    assert main(["run", "--resume", str(sweep)]) == 0  # the resume in this process: its exit is not what is tested
    err = capsys.readouterr().err
    assert "3 run(s) to do, 2 already finished" in err, err
    assert _finished(sweep) == SEEDS


@pytest.mark.slow
def test_ctrl_c_from_outside_between_runs_stops_the_sweep_and_it_resumes(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    process = _popen("-m", "asyncfl", "run", str(_study(tmp_path)), "--out", str(sweep))
    assert process.stderr is not None
    for line in process.stderr:  # the sweep's log: "[2/5] base seed1: finished, ..." once run 2 is written
        if line.startswith("[2/"):
            break
    process.send_signal(signal.SIGINT)
    started = time.perf_counter()
    _, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    assert time.perf_counter() - started < 60 and "Traceback" not in err
    done = _finished(sweep)
    assert done[:2] == [0, 1] and len(done) < len(SEEDS)
    assert main(["run", "--resume", str(sweep)]) == 0  # the resume in this process: its exit is not what is tested
    err = capsys.readouterr().err
    assert f"{len(done)} already finished" in err, err
    assert _finished(sweep) == SEEDS
