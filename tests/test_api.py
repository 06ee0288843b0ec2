"""The Python API: asyncfl.run -> Run, asyncfl.read_run, asyncfl.run_study -> Study, with user
callbacks on the same hooks as the built-in ones; tables come back as pandas DataFrames equal to the
files the run wrote."""

from __future__ import annotations

import json

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

    def on_aggregation(self, state, aggregation) -> None:
        self.times.append(aggregation.time)
        self.versions.append(aggregation.report.version)

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
    assert len(run.clients) == 12 and set(run.updates["version"]) == {1, 2, 3, 4}
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
    assert set(three.updates.groupby("version").size()) <= {1, 2, 3}  # at most 3 updates per round
    assert asyncfl.read_study(study.path).runs.equals(study.runs)


@pytest.mark.slow
def test_the_readme_python_block_runs_as_written(tmp_path, monkeypatch, capsys):
    """The README's Python API example, executed as a user would paste it (in a directory that has the
    repository's scenarios/), writing only below that directory."""
    import re
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
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
