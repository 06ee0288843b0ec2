"""Issue 47, item 3: tuning for the claim by default.  A tune: block that says nothing more tunes each variant
on the measure its claims test, keeps one grid step from a point that diverged, widens a grid whose edge
was chosen (running the next value), and censors a time to target at the run's horizon, not where it
diverged.  Runs are stand-ins written at once (tests.study.test_tuning_keys.fake_training)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from asyncfl.config import ConfigError
from asyncfl.output.reading import read_csv
from asyncfl.study import build_study
from asyncfl.study.tuning_results import measure_value
from tests.study.test_tuning import tiny
from tests.study.test_tuning_keys import fake_training, sweep_of

SEEDS = [100, 101]
ONE = [{"name": "p"}]


def bare(tmp_path: Path, grid: dict, **extra) -> dict:
    """The tiny digits study (4 clients, 2 rounds) with a tune: block of grid and seeds only: the defaults."""
    raw = tiny(tmp_path, {"grid": grid, "seeds": SEEDS}, compare=ONE, **extra)
    raw["tune"] = {"grid": grid, "seeds": SEEDS}  # tiny() pins the defaults from before issue 47: not here
    return raw


def test_an_edge_choice_widens_the_grid_and_runs_the_next_value(tmp_path, monkeypatch):
    """Accuracy grows with lr up to 0.9: lr 0.3, the top of [0.1, 0.3], wins; the grid is geometric (x3),
    so one widening runs lr 0.9 on both tuning seeds, which wins; a second runs 2.7, which loses (0.4)."""
    fake_training(monkeypatch, lambda s: ([0.4 if s["training"]["lr"] > 1 else 0.5 + s["training"]["lr"] / 10], None))
    sweep = sweep_of(bare(tmp_path, {"training.lr": [0.1, 0.3]}))
    assert sorted(p.name for p in (sweep / "tuning" / "p").iterdir()) == ["lr0.1", "lr0.3", "lr0.9", "lr2.7"]
    assert all((sweep / "tuning" / "p" / "lr0.9" / f"seed{s}" / "summary.json").is_file() for s in SEEDS)
    record = yaml.safe_load((sweep / "tuned.yaml").read_text())
    assert record["chosen"] == {"p": {"training.lr": 0.9}}
    assert [(w["edge"], w["value"], w["round"]) for w in record["widened"]] == [(0.3, 0.9, 1), (0.9, 2.7, 2)]
    assert "- p: training.lr = 0.3 at the edge, 0.9 added (round 1)" in (sweep / "report.md").read_text()


def test_the_margin_keeps_a_step_from_a_point_that_diverged_by_default(tmp_path, monkeypatch):
    """lr 0.9 diverges on seed 101 (status diverged, its accuracy the best so far): 0.9 and its neighbour 0.3
    are out, so lr 0.1 is chosen although 0.3 scores higher (and, at the grid's bottom, widened to 0.1 / 3,
    which scores lower); divergence_margin: 0 turns the rule off."""
    fake_training(monkeypatch, lambda s: ([0.5 + s["training"]["lr"] / 10], None),
                  lambda s: "diverged" if (s["training"]["lr"], s["seed"]) == (0.9, 101) else "finished")  # fmt: skip
    grid = {"training.lr": [0.1, 0.3, 0.9]}
    sweep = sweep_of(bare(tmp_path / "on", grid))
    assert yaml.safe_load((sweep / "tuned.yaml").read_text())["chosen"]["p"] == {"training.lr": 0.1}
    assert {r["point"]: r["near_divergence"] for r in read_csv(sweep / "tuning.csv")} == {
        "lr0.1": "False",
        "lr0.3": "True",
        "lr0.9": "True",
        "lr0.0333333333333": "False",
    }  # fmt: skip  (0.1 is the grid's bottom: widened to 0.1 / 3, which scores lower)
    off = bare(tmp_path / "off", grid)
    off["tune"].update(divergence_margin=0, widen=False)
    assert yaml.safe_load((sweep_of(off) / "tuned.yaml").read_text())["chosen"]["p"] == {"training.lr": 0.9}


def test_each_variant_is_tuned_on_its_claims_measure_by_default(tmp_path):
    claim = {"variant": "p", "versus": "q", "measure": "time_to:0.5", "direction": "lower"}
    raw = bare(tmp_path, {"training.lr": [0.1, 0.3]}, targets=[0.5], claims=[claim])
    raw["compare"] = [{"name": "p"}, {"name": "q", "set": {"training.local_steps": 3}}, {"name": "r"}]
    plan = build_study(raw).tuning
    assert plan.measures == {"p": "time_to:0.5", "q": "time_to:0.5", "r": "final_accuracy"}
    no_claims = bare(tmp_path, {"training.lr": [0.1, 0.3]})
    assert build_study(no_claims).tuning.spec.criterion == "final_accuracy"  # as before: nothing claimed
    both = {**claim, "measure": "best_accuracy"}
    raw["claims"] = [claim, both]  # claimed on two measures: tuned on each, in the claims' order
    plan = build_study(raw).tuning
    assert plan.measures["p"] == "time_to:0.5" and plan.also == {"p": ("best_accuracy",), "q": ("best_accuracy",)}
    raw["tune"]["criterion"] = {"p": "claimed"}  # a mapping names one measure per variant: still refused
    with pytest.raises(ConfigError) as err:
        build_study(raw)
    assert "tune.criterion.p: claimed: the claims about 'p' test best_accuracy, time_to:0.5; name its measure " \
        "instead (tune.criterion: {p: <measure>})" in str(err.value)  # fmt: skip


def ended(path: Path, status: str, end: float, stop: float | None) -> Path:
    """A run that never reached 0.5 (accuracy 0.2 at 10 s .. end), its config's stop.virtual_time_s ``stop``."""
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump({"stop": {"virtual_time_s": stop} if stop else {"rounds": 9}}))
    (path / "metrics.csv").write_text("time,round,test_accuracy\n10,1,0.2\n" + f"{end},2,0.2\n")
    (path / "summary.json").write_text(json.dumps({"status": status, "final_accuracy": 0.2, "virtual_time_s": end}))
    return path


def test_a_time_to_target_tuning_miss_is_censored_at_the_horizon_not_where_it_diverged(tmp_path):
    """A run that diverged at 62 s of a 240 s horizon counts 240 s, not 62 (it would look fastest); without
    a declared horizon, the median end of the point's runs that did not diverge (100, 140: 120 s)."""
    assert measure_value("time_to:0.5", ended(tmp_path / "a", "diverged", 62.0, 240.0)) == 240.0
    assert measure_value("time_to:0.5", ended(tmp_path / "b", "finished", 80.0, None)) == 80.0
    assert measure_value("time_to:0.5", ended(tmp_path / "c", "diverged", 62.0, None), [100.0, 140.0]) == 120.0


def test_a_variant_whose_set_fixes_an_algorithm_key_keeps_it_and_is_tuned_on_the_rest(tmp_path):
    """FedHist's window h in the grid of a study with an h sweep: fedhist is tuned on lr x h (4 points), the
    sweep's fedhist_h5 keeps its h = 5 and is tuned on lr (2 points); a training key a variant sets is still
    refused (tests/study/test_tuning.py)."""
    raw = bare(tmp_path, {"training.lr": [0.1, 0.3], "algorithm.history": [10, 20]})
    raw.update(server={"mode": "k_async", "k": 2, "concurrency": 4}, algorithm={"name": "fedhist", "history": 10})
    raw["compare"] = [{"name": "fedhist"}, {"name": "fedhist_h5", "set": {"algorithm.history": 5}}]
    plan = build_study(raw).tuning
    assert plan.skipped == {"fedhist_h5": ("algorithm.history",)}
    assert plan.ids_of("fedhist") == ("lr0.1_history10", "lr0.1_history20", "lr0.3_history10", "lr0.3_history20")
    assert plan.ids_of("fedhist_h5") == ("lr0.1", "lr0.3")
    assert {r.scenario.algorithm.history for r in plan.runs if r.tuned == "fedhist_h5"} == {5}
