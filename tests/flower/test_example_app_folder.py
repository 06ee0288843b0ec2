"""examples/flower_digits is a plain Flower app folder (issue 46, item 6): Flower's own validator accepts its
pyproject.toml as ``flwr run`` checks it, and its scenario adds to the folder's run config only what differs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from flwr.common.config import validate_config  # noqa: E402

from asyncfl.config.schema import Scenario  # noqa: E402
from asyncfl.flower.app_folder import read_app_folder, tomli  # noqa: E402
from asyncfl.flower.start import app_folder_scenario  # noqa: E402

APP_DIR = Path(__file__).resolve().parents[2] / "examples" / "flower_digits"


def test_flwr_accepts_the_folder_as_flwr_run_does():
    """``flwr run`` loads pyproject.toml with ``load_and_validate``: the fields, the FAB format and each component's
    module file and attribute (``check_module``)."""
    config = tomli.loads((APP_DIR / "pyproject.toml").read_text(encoding="utf-8"))
    assert validate_config(config, check_module=True, project_dir=APP_DIR) == (True, [], [])


def test_the_scenario_runs_the_folder_with_1000_rounds_over_its_defaults():
    scenario = Scenario.from_yaml(APP_DIR / "scenarios" / "fedavg.yaml")
    s = app_folder_scenario(read_app_folder(APP_DIR), scenario, {"lr": 0.1}, "--run-config")
    assert (s.flower.server_app, s.flower.client_app) == (
        "flower_digits.server_app:app",
        "flower_digits.client_app:app",
    )
    assert s.flower.run_config == {
        "num-server-rounds": 1000, "fraction-train": 0.5, "fraction-evaluate": 1.0, "timeout": 3600.0,
        "local-epochs": 1, "batch-size": 16, "lr": 0.1,
    }  # fmt: skip


@pytest.mark.slow
def test_the_documented_command_runs_from_the_repository_root(tmp_path, monkeypatch):
    """``python -m asyncfl flower examples/flower_digits examples/flower_digits/scenarios/fedavg.yaml``, on 10
    virtual seconds: flower_digits imports from the folder, which leaves sys.path afterwards."""
    from asyncfl.cli.main import main

    monkeypatch.chdir(APP_DIR.parents[1])
    before = list(sys.path)
    scenario = "examples/flower_digits/scenarios/fedavg.yaml"
    argv = ["flower", "examples/flower_digits", scenario, "--set", "stop.virtual_time_s=10", "--quiet"]
    assert main([*argv, "--set", "output.plot=false", "--out", str(tmp_path / "run")]) == 0
    assert sys.path == before
    assert (tmp_path / "run" / "rounds.csv").read_text().count("\n") >= 2
