"""The command line: bad input ends in one clear paragraph naming the YAML path, exit 2, no traceback.

Where the process boundary is what is checked (the exit status a shell sees, stdout apart from stderr, no
traceback printed), a test runs ``python -m asyncfl`` (:func:`cli`); elsewhere it calls
:func:`asyncfl.cli.main` in this process (:func:`cli_here`): the same code path without a Python start each
(seconds with torch), and an uncaught exception would fail the test as a traceback would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from asyncfl.cli import main

GOOD = """\
name: tiny
data: {dataset: digits, clients: 4}
model: {name: logreg}
training: {local_steps: 2}
stop: {rounds: 2}
output: {plot: false}
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "asyncfl", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.fixture
def cli_here(monkeypatch, capsys):
    """:func:`cli` run by :func:`asyncfl.cli.main` in this process, in ``cwd``: its exit status and output."""

    def call(*args: str, cwd: Path) -> subprocess.CompletedProcess:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            status = main(list(args))
        except SystemExit as exit:  # argparse's refusals
            status = exit.code
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["asyncfl", *args], status, out, err)

    return call


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


BAD = {
    "wrong type": (GOOD.replace("clients: 4", "clients: four"), ["data.clients", "integer"]),
    "unknown key": (GOOD.replace("model: {name: logreg}", "modle: {name: logreg}"), ["modle", "Did you mean 'model'"]),
    "negative deadline": (GOOD + "server: {deadline_s: -5}\n", ["server.deadline_s", "greater than 0"]),
    "k above population": (GOOD + "server: {mode: k_async, k: 9}\n", ["server.k", "population"]),
    "unknown algorithm": (GOOD + "algorithm: {name: fedprox}\n", ["algorithm.name", "'fedavg'"]),
    "unknown dataset": (GOOD.replace("digits", "imagenet"), ["data.dataset", "'mnist'"]),
    "malformed yaml": (GOOD + "server: {mode: sync\n", ["not valid YAML", "line"]),
    "not a mapping": ("- just\n- a list\n", ["top level must be a mapping"]),
    "empty file": ("", ["the file is empty", "{}"]),
    "only comments": ("# name: tiny\n# stop: {rounds: 2}\n", ["the file is empty"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.slow
def test_bad_scenario_gives_one_clear_error(tmp_path, cli_here, case):
    """The command's own process for one case, this process for the others."""
    text, needles = BAD[case]
    path = _write(tmp_path, text)
    for command in (["validate", str(path)], [str(path), "--quiet"]):
        result = (cli if case == "wrong type" else cli_here)(*command, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        assert str(path) in result.stderr
        for needle in needles:
            assert needle in result.stderr, result.stderr
    assert not (tmp_path / "runs").exists()


def test_missing_file(tmp_path):
    result = cli("validate", str(tmp_path / "nope.yaml"), cwd=tmp_path)
    assert result.returncode == 2 and "not found" in result.stderr and "Traceback" not in result.stderr


def test_validate_reports_every_problem(tmp_path):
    path = _write(tmp_path, GOOD.replace("clients: 4", "clients: 0") + "server: {deadline_s: -1, modee: sync}\n")
    result = cli("validate", str(path), cwd=tmp_path)
    assert "3 problem(s)" in result.stderr
    for needle in ("data.clients", "server.deadline_s", "server.modee"):
        assert needle in result.stderr


@pytest.mark.slow
def test_missing_torchvision_data_is_a_clear_error(tmp_path):
    path = _write(tmp_path, GOOD.replace("digits", "mnist") + "device: cpu\n")
    overrides = ["--set", "data.download=false", "--set", f"data.data_dir={tmp_path}/d"]
    result = cli(str(path), "--quiet", *overrides, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "data.data_dir" in result.stderr
    assert not (tmp_path / "runs").exists()  # a run that never started leaves no directory behind
    result = cli(str(path), "--quiet", *overrides, "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 2 and not (tmp_path / "out").exists()


AVAILABILITY = "population: {availability: {kind: trace, file: online.csv}}\n"
TRACE_PROBLEMS = {  # scenario addition, file name -> content, needles of the error
    "missing device trace": (
        "population: {device_trace: devices.csv}\n",
        {},
        ["population.device_trace", "devices.csv"],
    ),
    "reversed interval": (
        AVAILABILITY,
        {"online.csv": "client,start_s,end_s\n" + "".join(f"{c},0,5\n" for c in range(3)) + "3,9,4\n"},
        ["population.availability.file", "line 5", "start_s < end_s"],
    ),
    "yaml given as a trace": ("population: {device_trace: scenario.yaml}\n", {}, ["population.device_trace", "header"]),
}


@pytest.mark.parametrize("case", sorted(TRACE_PROBLEMS))
@pytest.mark.slow
def test_trace_files_are_checked_by_validate_and_a_failed_run_leaves_nothing(tmp_path, cli_here, case):
    addition, files, needles = TRACE_PROBLEMS[case]
    folder = tmp_path / "sub"  # trace names are relative to the scenario file, not to the working directory
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    path = folder / "scenario.yaml"
    path.write_text(GOOD + addition)
    study = folder / "study.yaml"
    study.write_text(GOOD + addition + "seeds: [0, 1]\n")
    for command in (["validate", str(path)], ["validate", str(study)], [str(path), "--quiet"],
                    [str(path), "--quiet", "--out", str(tmp_path / "out")], [str(study), "--quiet"]):  # fmt: skip
        result = cli_here(*command, cwd=tmp_path)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        for needle in needles:
            assert needle in result.stderr, (command, result.stderr)
    assert not (tmp_path / "runs").exists() and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_run_with_overrides_writes_a_run_directory(tmp_path, cli_here):
    path = _write(tmp_path, GOOD)
    out = tmp_path / "out"
    result = cli(str(path), "--quiet", "--out", str(out), "--seed", "7", "--set", "stop.rounds=3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    config = (out / "config.yaml").read_text()
    assert "seed: 7" in config and "rounds: 3" in config
    assert len((out / "metrics.csv").read_text().splitlines()) == 1 + 4  # header, initial model, 3 rounds
    for name in ("rounds.csv", "events.jsonl", "clients.csv", "summary.json"):
        assert (out / name).stat().st_size > 0
    # a second run into the same directory is refused: nothing already written is lost
    again = cli_here(str(path), "--quiet", "--out", str(out), cwd=tmp_path)
    assert again.returncode == 2 and "refusing to overwrite" in again.stderr


@pytest.mark.slow
def test_bad_override(tmp_path, cli_here):
    path = _write(tmp_path, GOOD)
    result = cli_here(str(path), "--set", "server.deadline_s", cwd=tmp_path)
    assert result.returncode == 2 and "KEY.PATH=VALUE" in result.stderr
    result = cli_here(str(path), "--set", "training.lr=-1", cwd=tmp_path)
    assert result.returncode == 2 and "training.lr" in result.stderr


@pytest.mark.slow
def test_output_into_a_closed_pipe_is_no_traceback(tmp_path):
    """`python -m asyncfl reference | head -3`: the reader goes away before the writer is done."""
    command = [sys.executable, "-m", "asyncfl", "reference"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    process.stdout.close()  # closed before the reference is printed: every write hits a broken pipe
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, stderr  # what a shell reports for a program ended by SIGPIPE
    assert stderr == ""


@pytest.mark.slow
def test_resuming_a_finished_run_says_so_and_succeeds(tmp_path, cli_here):
    path = _write(tmp_path, GOOD)
    out = tmp_path / "out"
    assert cli_here(str(path), "--quiet", "--out", str(out), cwd=tmp_path).returncode == 0
    stamp = (out / "summary.json").stat().st_mtime_ns
    result = cli("run", "--resume", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"{out}: this run already ended (finished); nothing to resume" in result.stdout
    assert (out / "summary.json").stat().st_mtime_ns == stamp


def test_run_help_describes_resume_for_runs_and_sweeps(tmp_path):
    text = " ".join(cli("run", "--help", cwd=tmp_path).stdout.split())
    assert "--resume DIR" in text and "RUN_DIR" in text and "SWEEP_DIR" in text


def test_run_scenario_accepts_a_str_directory(tmp_path):
    import asyncfl

    scenario = asyncfl.load_scenario(_write(tmp_path, GOOD))
    run_dir = asyncfl.run_scenario(scenario, str(tmp_path / "run"))
    assert run_dir == tmp_path / "run" and (run_dir / "summary.json").is_file()


@pytest.mark.slow
def test_an_output_directory_that_cannot_be_made_is_one_clear_error(tmp_path, monkeypatch, capsys):
    """The command's own process for one case (exit status, stderr, no traceback), asyncfl.cli.main in this
    process for the others (the same code path, without a Python start each)."""
    path = _write(tmp_path, GOOD)
    study = tmp_path / "study.yaml"
    study.write_text(GOOD + "seeds: [0, 1]\n")
    (tmp_path / "afile").write_text("not a directory\n")
    cases = {
        ("--out", "afile/sub"): "--out: cannot create the directory afile/sub: afile exists and is not a directory.",
        ("--set", "output.dir=/dev/null/x"): "output.dir: cannot create the directory /dev/null/x/tiny: "
        "/dev/null exists and is not a directory.",
        ("--set", "output.dir=afile/x/y"): "output.dir: cannot create the directory afile/x/y/tiny: "
        "afile exists and is not a directory.",
    }
    result = cli(str(study), "--quiet", "--out", "afile/sub", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.strip() == f"error: {cases['--out', 'afile/sub']}", result.stderr
    monkeypatch.chdir(tmp_path)
    for scenario in (path, study):
        for args, needle in cases.items():
            assert main([str(scenario), "--quiet", *args]) == 2, (scenario, args)
            assert capsys.readouterr().err.strip() == f"error: {needle}", (scenario, args)
    assert main(["compare", "nowhere", "--out", "afile/sub"]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "scenario.yaml", "study.yaml"]  # no debris


@pytest.mark.slow
def test_executor_ray_without_ray_fails_before_making_anything(tmp_path, monkeypatch, cli_here):
    study = tmp_path / "study.yaml"
    study.write_text(GOOD + "seeds: [0, 1]\n")
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    result = cli_here(str(study), "--quiet", "--executor", "ray", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    hint = 'pip install -e ".[ray]"'
    assert "Ray is not installed" in result.stderr and hint in result.stderr
    ray_page = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "ray.md"
    assert f"Ray is an optional extra (`{hint}`)" in ray_page.read_text(encoding="utf-8")  # the docs' command
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study.yaml"]  # no sweep directory left behind


@pytest.mark.slow
def test_sweep_flags_on_a_single_scenario_are_one_grammatical_sentence(tmp_path, cli_here):
    path = _write(tmp_path, GOOD)
    one = cli_here(str(path), "--quiet", "--executor", "ray", cwd=tmp_path)
    assert one.returncode == 2 and "--executor applies only to studies (files with compare: or seeds:)" in one.stderr
    two = cli_here(str(path), "--quiet", "--executor", "local", "--address", "x", cwd=tmp_path)
    assert two.returncode == 2 and "--executor, --address apply only to studies" in two.stderr


@pytest.mark.slow
def test_the_run_directory_is_said_when_the_run_starts(tmp_path):
    """On stderr as soon as the directory is held (before the data set loads); stdout's last line is still
    the run directory, once the run has ended."""
    path = _write(tmp_path, GOOD)
    out = tmp_path / "out"
    result = cli(str(path), "--quiet", "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == f"run directory: {out}"
    assert result.stdout.splitlines()[-1] == str(out)
    default = cli(str(path), "--quiet", cwd=tmp_path)
    run_dir = default.stdout.splitlines()[-1]
    assert run_dir.startswith("runs/tiny/") and default.stderr.splitlines()[0] == f"run directory: {run_dir}"
