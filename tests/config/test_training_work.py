"""What ``validate`` and a run's start say before anything trains (issue 29, items 3 and 22): the training
work a scenario implies in client-steps, refused past one task of 1,000,000 local steps and warned past
100,000,000 client-steps; and TiFL tiers too small to fill a round."""

from __future__ import annotations

import json

import pytest
import yaml

from asyncfl.cli import main
from asyncfl.config import validate_scenario
from asyncfl.config.runnable import scenario_warnings
from asyncfl.config.training_work import MAX_TASK_STEPS, WARN_CLIENT_STEPS, training_work
from asyncfl.sim.selection.tifl import TiFLSelection, small_tiers

BASE = {
    "name": "work",
    "data": {"dataset": "digits", "clients": 10},  # pool 1,438 samples: 1,438 x 0.8 / 10 = 115.04 train a client
    "model": {"name": "logreg"},
    "training": {"local_steps": 3, "batch_size": 32},
    "server": {"mode": "sync", "clients_per_round": 4},
    "stop": {"rounds": 5},
    "eval": {"per_client": False},
    "output": {"plot": False},
}


def _cli(tmp_path, capsys, raw, *args):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(raw))
    code = main([*args, str(path)] if args[:1] == ("validate",) else [str(path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    ("changes", "client_steps", "words"),
    [
        ({}, 60, "5 rounds x 4 clients each x 3 local steps (training.local_steps)"),  # 5 x 4 x 3
        ({"server": {"mode": "sync", "clients_per_round": 4, "over_selection": 0.5}}, 90, "5 rounds x 6 clients"),
        ({"server": {"mode": "k_async", "k": 2, "concurrency": 3}, "stop": {"rounds": 7}}, 42, "7 aggregations x 2"),
        # epochs 2: ceil(2 x 115.04 / 32) = ceil(7.19) = 8 steps, every client each round: 5 x 10 x 8
        ({"training": {"local_work": {"kind": "epochs", "epochs": 2}}, "server": {"mode": "sync"}}, 400, "8 local"),
    ],
)
def test_validate_states_the_training_work(tmp_path, capsys, changes, client_steps, words):
    code, out, err = _cli(tmp_path, capsys, {**BASE, **changes}, "validate")
    assert code == 0 and err == ""
    line = out.splitlines()[1]
    assert line.startswith(f"training work: about {client_steps:,} client-steps: ") and words in line


def test_without_stop_rounds_the_work_is_stated_per_round(tmp_path, capsys):
    code, out, _ = _cli(tmp_path, capsys, {**BASE, "stop": {"virtual_time_s": 100}}, "validate")
    assert code == 0 and "training work: about 12 client-steps a round: 4 clients x 3 local steps" in out


def test_a_huge_task_is_refused_naming_the_key_and_nothing_is_written(tmp_path, capsys):
    """epochs 1e9 over ~115 samples a client: 3.6e9 local steps a task, past 1,000,000."""
    raw = {**BASE, "training": {"local_work": {"kind": "epochs", "epochs": 1e9}}}
    for args in (("validate",), ("--quiet", "--out", str(tmp_path / "run"))):
        code, out, err = _cli(tmp_path, capsys, raw, *args)
        assert code == 2 and "Traceback" not in err and out == ""
        assert err.startswith("error: training.local_work.epochs: one task would take about 3.6e+09 local steps")
        assert f"more than the {MAX_TASK_STEPS:,} a task may take" in err
        assert "allowed: training.local_work.epochs up to about 278,164" in err  # 1e6 x 32 / 115.04
    assert not (tmp_path / "run").exists()
    timing = validate_scenario({**BASE, "training": {"local_steps": 10**7}, "timing_only": True})
    assert training_work(timing).sentence().startswith("training work: none (timing_only")  # nothing trained


def test_a_huge_run_is_warned_about_and_the_run_says_its_work_and_keeps_the_warning(tmp_path, capsys):
    huge = {**BASE, "stop": {"rounds": 10**7}}  # 10^7 x 4 x 3 = 1.2e8 > 1e8
    code, out, err = _cli(tmp_path, capsys, huge, "validate")
    assert code == 0 and err.startswith("warning: training work: about 120,000,000 client-steps")
    assert f"more than {WARN_CLIENT_STEPS:,}" in err
    code, out, err = _cli(tmp_path, capsys, BASE, "--quiet", "--out", str(tmp_path / "run"))
    assert code == 0 and "training work: about 60 client-steps: 5 rounds x 4 clients each" in err
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["warnings"] == []


def test_tifl_tiers_smaller_than_a_round_are_warned_about(tmp_path, capsys):
    """The tutorial's 20 clients, 10 a round, TiFL's default 5 tiers: tiers of 4, so rounds of at most 4."""
    assert small_tiers(TiFLSelection(kind="tifl"), 20, 10).startswith(
        "server.selection.tiers (5) cuts the 20 clients into tiers of at most 4, fewer than the 10 a round asks"
    )
    assert "tiers: 2 or fewer" in small_tiers(TiFLSelection(kind="tifl"), 20, 10)
    assert small_tiers(TiFLSelection(kind="tifl", tiers=2), 20, 10) is None  # 10 a tier: rounds can fill
    assert small_tiers(TiFLSelection(kind="tifl"), 20, None) is None  # everyone asked: no tier chosen
    raw = {
        **BASE,
        "data": {"dataset": "digits", "clients": 20},
        "server": {"mode": "sync", "clients_per_round": 10, "selection": {"kind": "tifl"}},
        "stop": {"rounds": 2},
    }
    code, out, err = _cli(tmp_path, capsys, raw, "validate")
    assert code == 0 and err.startswith(
        "warning: server.selection.tiers (5) cuts the 20 clients into tiers of at most 4"
    )
    code, out, err = _cli(tmp_path, capsys, raw, "--quiet", "--out", str(tmp_path / "run"))
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert code == 0 and summary["warnings"] == scenario_warnings(validate_scenario(raw))
    assert len(summary["warnings"]) == 1 and summary["warnings"][0].startswith("server.selection.tiers (5)")
    fits = {**raw, "server": {**raw["server"], "selection": {"kind": "tifl", "tiers": 2}}}
    assert scenario_warnings(validate_scenario(fits)) == []
