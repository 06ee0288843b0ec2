"""The Python API: asyncfl.run -> Run, asyncfl.read_run, asyncfl.run_study -> Study, with user
callbacks on the same hooks as the built-in ones; tables come back as pandas DataFrames equal to the
files the run wrote."""

from __future__ import annotations

import json
import os
import re

import pandas as pd
import pytest

import asyncfl

SMALL = {
    "name": "api_small",
    "data": {"dataset": "digits", "clients": 12},
    "model": {"name": "mlp", "hidden": 16},
    "training": {"local_steps": 2, "batch_size": 8},
    "server": {"mode": "sync", "clients_per_round": 6},
    "stop": {"rounds": 4},
    "output": {"events": "all", "plot": False},
    "checkpoint": {"every_rounds": None},
}


class Counting(asyncfl.Callback):
    """A user callback: what every hook heard."""

    def __init__(self) -> None:
        self.started, self.times, self.versions, self.ended_at = 0, [], [], None

    def on_start(self, state) -> None:
        self.started += 1

    def on_aggregation(self, state, record) -> None:
        self.times.append(record.time)
        self.versions.append(record.round)

    def on_end(self, state, now) -> None:
        self.ended_at = now


def test_run_returns_the_run_with_its_tables_and_calls_user_callbacks(tmp_path):
    counting = Counting()
    run = asyncfl.run(SMALL, out=tmp_path / "r", callbacks=[counting], overrides=["seed=3"])
    assert run.path == tmp_path / "r" and run.summary["status"] == "finished" and run.summary["seed"] == 3
    assert counting.started == 1 and counting.versions == [1, 2, 3, 4]
    # the tables are the files, and the callback saw what the files record
    assert isinstance(run.metrics, pd.DataFrame) and len(run.metrics) == 5  # the initial model + 4 aggregations
    assert run.rounds["time"].tolist() == pytest.approx(counting.times, abs=1e-6)  # the CSV keeps 6 decimals
    assert counting.ended_at == pytest.approx(run.summary["virtual_time_s"], abs=1e-6)
    assert len(run.clients) == 12 and set(run.updates["round"]) == {1, 2, 3, 4}
    assert (run.events["event"] == "aggregate").sum() == 4
    assert run.config["seed"] == 3 and run.config["data"]["clients"] == 12
    again = asyncfl.read_run(run.path)
    pd.testing.assert_frame_equal(again.metrics, pd.read_csv(run.path / "metrics.csv"))
    assert again.summary == json.loads((run.path / "summary.json").read_text())


def test_run_plot_draws_the_figures(tmp_path):
    run = asyncfl.run(SMALL, out=tmp_path / "r")
    written = run.plot()
    assert {p.name for p in written} >= {"accuracy_vs_time.png", "timeline.png", "participation.png"}
    assert all(p.is_file() and p.stat().st_size > 0 for p in written)


def test_bad_input_raises_before_anything_is_written(tmp_path):
    with pytest.raises(asyncfl.ConfigError, match="training.lr"):
        asyncfl.run(SMALL, out=tmp_path / "r", overrides=["training.lr=-1"])
    assert not (tmp_path / "r").exists()
    with pytest.raises(asyncfl.ConfigError, match="run_study"):
        asyncfl.run({**SMALL, "seeds": [0, 1]}, out=tmp_path / "s")
    with pytest.raises(TypeError, match="Callback"):
        asyncfl.run(SMALL, out=tmp_path / "r", callbacks=[object()])
    with pytest.raises(asyncfl.ConfigError, match="not a run directory"):
        asyncfl.read_run(tmp_path)


def test_run_study_runs_every_variant_and_seed_and_reads_its_tables(tmp_path):
    spec = {
        **SMALL,
        "compare": [{"name": "all6"}, {"name": "three", "set": {"server.clients_per_round": 3}}],
        "baseline": "all6",
    }
    study = asyncfl.run_study(spec, seeds=[0, 1], out=tmp_path / "sweep")
    assert study.failures == () and study.variants == ["all6", "three"]
    runs = sorted(zip(study.runs["variant"], study.runs["seed"]))
    assert runs == [("all6", 0), ("all6", 1), ("three", 0), ("three", 1)]
    assert set(study.report["variant"]) == {"all6", "three"} and "vs_baseline" in study.report
    three = study.run("three", 1)
    assert three.config["server"]["clients_per_round"] == 3 and three.summary["seed"] == 1
    assert set(three.updates.groupby("round").size()) <= {1, 2, 3}  # at most 3 updates per round
    assert asyncfl.read_study(study.path).runs.equals(study.runs)


@pytest.mark.slow
def test_the_readme_python_block_runs_as_written(tmp_path, monkeypatch, capsys):
    """The README's Python API example, executed as a user would paste it (in a directory that has the
    repository's scenarios/), writing only below that directory."""
    import re
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Python API") :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    shutil.copytree(root / "scenarios", tmp_path / "scenarios")
    monkeypatch.chdir(tmp_path)
    page = (root / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    assert re.search(r"```python\n(.*?)```", page, re.DOTALL).group(1) == code  # the docs show the same block
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.startswith("finished ")
    run = asyncfl.read_run(tmp_path / "runs" / "api_demo")
    assert len(run.rounds) == 20 and run.config["server"]["mode"] == "k_async"
    (sweep,) = (tmp_path / "runs" / "deadline_or_not").iterdir()
    study = asyncfl.read_study(sweep)
    assert len(study.runs) == 4 and set(study.report["vs_baseline"]) - {"baseline"} <= {
        "higher", "lower", "no difference", "too few seeds", "mixed",
        "only this variant reached it", "only the baseline reached it", "neither reached it",
    }  # fmt: skip
    assert "deadline" in printed and "vs_baseline" in printed
    # the deadline binds (issue 29, item 24): every seed's deadline run took fewer updates, in less virtual time
    for seed in (0, 1):
        waited, cut = study.run("no_deadline", seed), study.run("deadline", seed)
        assert waited.clients["participations"].sum() == 200 > cut.clients["participations"].sum()
        assert cut.summary["virtual_time_s"] < waited.summary["virtual_time_s"]


def test_scenario_constructors_take_overrides_and_refuse_a_study(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: from_file\ndata: {dataset: digits, clients: 12}\nstop: {rounds: 4}\n")
    scenario = asyncfl.Scenario.from_yaml(path, ["server.deadline_s=7", "seed=2"])
    assert (scenario.name, scenario.seed, scenario.server.deadline_s, scenario.stop.rounds) == ("from_file", 2, 7.0, 4)
    same = asyncfl.Scenario.from_dict(scenario.model_dump(mode="json"))
    assert same == scenario and asyncfl.Scenario.from_dict({"seed": 4}).seed == 4
    with pytest.raises(asyncfl.ConfigError, match=r"<dict>: 1 problem\(s\):\n  training.lr"):
        asyncfl.Scenario.from_dict({}, ["training.lr=-1"])
    study = tmp_path / "study.yaml"
    study.write_text("seeds: [0, 1]\ncompare: [{name: a}]\n")
    with pytest.raises(asyncfl.ConfigError, match="is a study .* asyncfl.run_study"):
        asyncfl.Scenario.from_yaml(study)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: asyncfl.Scenario.from_dict("name: x"),
         r"^<dict>: Scenario.from_dict takes a dict of sections \(name, data, server, ...\), got str 'name: x'; "
         r"for a YAML file, use Scenario.from_yaml\('name: x'\)\.$"),
        (lambda: asyncfl.Scenario.from_dict(3),
         r"^<dict>: Scenario.from_dict takes a dict of sections .*, got int 3\.$"),
        (lambda: asyncfl.Scenario.from_dict({}, "seed=2"),
         r"^overrides must be a list of 'key=value' strings such as \['server.k=5'\], got str 'seed=2': "
         r"wrap it in a list, \['seed=2'\]\.$"),
        (lambda: asyncfl.Scenario.from_dict({}, ["seed=2", 7]), r"but its item 7 is int, not str\.$"),
        (lambda: asyncfl.Scenario.from_yaml(3),
         r"^expected the path of a YAML file \(a str or pathlib.Path\), got int 3"),
        (lambda: asyncfl.run(SMALL, overrides="seed=2"), r"got str 'seed=2': wrap it in a list"),
        (lambda: asyncfl.run_study({**SMALL, "seeds": [0]}, overrides="seed=2"),
         r"got str 'seed=2': wrap it in a list"),
        (lambda: asyncfl.run_study({**SMALL, "seeds": [0]}, seeds=3),
         r"^seeds must be a list of ints .*, got int 3\.$"),
        (lambda: asyncfl.run_study({**SMALL, "seeds": [0]}, seeds=["a"]), r"seeds"),
    ],
)  # fmt: skip
def test_wrong_python_types_are_config_errors_a_python_user_understands(call, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be written, anywhere
    with pytest.raises(asyncfl.ConfigError, match=message):
        call()
    assert not list(tmp_path.iterdir())


# --- runs that have not ended, damaged files -------------------------------------------------------


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    return asyncfl.run(SMALL, out=tmp_path_factory.mktemp("finished") / "r").path


def _copy(run_dir, to, status=None, keep_rows=None):
    """A copy of ``run_dir`` as a run cut short leaves it: summary.json's status ``status`` (None: no
    summary.json, as after kill -9), metrics.csv cut to its first ``keep_rows`` rows."""
    import shutil

    shutil.copytree(run_dir, to)
    if status is None:
        (to / "summary.json").unlink()
    else:
        summary = json.loads((to / "summary.json").read_text())
        (to / "summary.json").write_text(json.dumps({**summary, "status": status}))
    if keep_rows is not None:
        lines = (to / "metrics.csv").read_text().splitlines(keepends=True)
        (to / "metrics.csv").write_text("".join(lines[: 1 + keep_rows]))
    return to


@pytest.mark.parametrize(
    ("status", "said", "reads_as"),
    [
        (None, r"did not end: it has no summary.json and no process is writing it \(killed", "killed"),
        ("interrupted", r"was interrupted \(Ctrl-C\)", "interrupted"),
        ("running", r"stopped on an error \(its summary.json still says running\)", "failed"),
    ],
)
def test_read_run_refuses_a_run_that_has_not_ended_unless_asked_for_partial(
    finished_run, tmp_path, status, said, reads_as
):
    assert asyncfl.read_run(finished_run).status == "finished"
    cut = _copy(finished_run, tmp_path / "cut", status, keep_rows=2)
    with pytest.raises(asyncfl.ConfigError) as err:
        asyncfl.read_run(cut)
    message = str(err.value)
    assert re.search(rf"^{re.escape(str(cut))}: this run {said}", message)
    assert f"python -m asyncfl run --resume {cut}" in message and "asyncfl.read_run(path, partial=True)" in message
    run = asyncfl.read_run(cut, partial=True)
    assert run.status == reads_as and len(run.metrics) == 2  # the rows it wrote, as they are


def test_a_run_being_written_reads_as_running_and_a_killed_writers_lock_does_not(finished_run, tmp_path):
    import signal
    import subprocess
    import sys

    held = _copy(finished_run, tmp_path / "held", "finished")
    code = "import sys; from pathlib import Path; from asyncfl.output.lock import writing\n"
    code += f"with writing(Path({str(held)!r})):\n    print('held', flush=True); sys.stdin.read()"
    writer = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "held\n"
        with pytest.raises(asyncfl.ConfigError, match=rf"is still running \(PID {writer.pid} is writing it\)"):
            asyncfl.read_run(held)
        assert asyncfl.read_run(held, partial=True).status == "running"
        os.kill(writer.pid, signal.SIGKILL)  # the kernel drops the lock; the .lock file stays behind
        writer.wait(timeout=30)
        assert (held / ".lock").is_file() and asyncfl.read_run(held).status == "finished"
    finally:
        writer.kill()


def test_damaged_summary_and_study_files_are_config_errors_naming_the_file_and_line(finished_run, tmp_path):
    run_dir = _copy(finished_run, tmp_path / "r", "finished")
    text = (run_dir / "summary.json").read_text()
    (run_dir / "summary.json").write_text(text[: len(text) // 2])  # cut short
    with pytest.raises(asyncfl.ConfigError, match=rf"^{re.escape(str(run_dir / 'summary.json'))}, line 1 column \d+"):
        asyncfl.read_run(run_dir)
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "study.yaml").write_text("name: s\ncompare:\n  - {name: a\n  - {name: b}\n")
    with pytest.raises(
        asyncfl.ConfigError, match=rf"^{re.escape(str(sweep / 'study.yaml'))}: not valid YAML at line 4"
    ):
        asyncfl.read_study(sweep)


def test_a_sweep_with_a_run_that_has_not_ended_reads_and_reports_it_as_a_missing_seed(tmp_path, capsys):
    from asyncfl.cli import main

    spec = {**SMALL, "compare": [{"name": "all6"}, {"name": "three", "set": {"server.clients_per_round": 3}}]}
    study = asyncfl.run_study({**spec, "baseline": "all6"}, seeds=[0, 1], out=tmp_path / "sweep")
    before = study.report.set_index(["variant", "measure"])
    killed = study.path / "three" / "seed1"
    (killed / "summary.json").unlink()  # as kill -9 leaves it: no summary.json, metrics.csv cut short
    lines = (killed / "metrics.csv").read_text().splitlines(keepends=True)
    (killed / "metrics.csv").write_text("".join(lines[:3]))
    again = asyncfl.read_study(study.path)
    assert again.variants == ["all6", "three"] and again.run("three", 0).status == "finished"
    with pytest.raises(asyncfl.ConfigError, match="did not end"):
        again.run("three", 1)
    assert again.run("three", 1, partial=True).status == "killed"
    capsys.readouterr()
    assert main(["report", str(study.path)]) == 0  # the command, in this process
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert (
        "Partial study: 1 of the 4 declared runs (2 variant(s) x 2 seed(s)) are not results: three seed(s) 1 "
        "(not ended (no summary.json))." in " ".join(err.split())
    )
    after = pd.read_csv(study.path / "report.csv").set_index(["variant", "measure"])
    assert (after.loc["three", "seeds"] == 2).all() and (after.loc["three", "n"] == 1).all()  # every measure alike
    pd.testing.assert_frame_equal(after.loc["all6"], before.loc["all6"])  # the finished variant as it was
