"""Ctrl-C during a Flower run says how it goes on: a K-async run with the flower command's ``--resume`` (its
checkpoint holds the run), a ServerApp run that it cannot be continued (its state is the app's own code)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from asyncfl.cli import run as cli_run
from asyncfl.runner.loop_guards import RunInterrupted

pytest.importorskip("flwr")


@pytest.mark.parametrize(
    ("mode", "app_dir", "says"),
    [
        ("k_async", None, "continue it with\n  python -m asyncfl flower --resume {run}\n"),
        ("k_async", "my app", "continue it with\n  python -m asyncfl flower 'my app' --resume {run}\n"),
        ("sync", None, "a Flower ServerApp run cannot be continued: run it again\n"),
    ],
)
def test_ctrl_c_in_a_flower_run_says_how_it_goes_on(tmp_path, monkeypatch, capsys, mode, app_dir, says):
    run_dir = tmp_path / "run"

    def interrupted(*args, **kwargs):
        raise RunInterrupted(run_dir)

    monkeypatch.setattr("asyncfl.flower.start.run_flower", interrupted)
    scenario = SimpleNamespace(server=SimpleNamespace(mode=mode))
    assert cli_run.run_flower_scenario(scenario, None, True, app_dir=app_dir) == 130
    err = capsys.readouterr().err
    assert err.startswith(f"interrupted: summary.json, the logs and the figures of what has run are in {run_dir}; ")
    assert err.endswith(says.format(run=run_dir))
