"""The tune: keys on real sweeps (training replaced by instant run directories with hand-set accuracies): the
rule changes the choice on a cliff, a criterion per variant or from the claims, algorithm.<key> tuned where
the algorithm has it and skipped where not, and widening beyond a grid edge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from asyncfl.config import ConfigError
from asyncfl.output.reading import read_csv
from asyncfl.study import build_study
from asyncfl.study.tuning import next_value
from asyncfl.sweep import study_sweep
from asyncfl.sweep.study_sweep import run_sweep
from tests.conftest import replace_training
from tests.study.test_tuning import configs, tiny

SEEDS = [100, 101, 102, 103]


def fake_training(monkeypatch, curve_of, status_of=lambda scenario: "finished"):
    """Replace training: ``curve_of(scenario)`` -> (test accuracies at 10, 20 s, ..., accuracy_class_9 per
    evaluation or None); the run directory is written at once, as a run that ended leaves it
    (``status_of(scenario)``: its summary's status)."""

    def run_job(scenario: dict, run_dir: Path, resume: bool = False) -> dict:
        curve, class9 = curve_of(scenario)
        run_dir.mkdir(parents=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(scenario))
        header = "time,round,test_accuracy" + (",accuracy_class_9" if class9 else "")
        rows = [f"{10 * (i + 1)},{i + 1},{a}" + (f",{class9[i]}" if class9 else "") for i, a in enumerate(curve)]
        (run_dir / "metrics.csv").write_text("\n".join([header, *rows]) + "\n")
        summary = {"status": status_of(scenario), "final_accuracy": curve[-1], "best_accuracy": max(curve),
                   "virtual_time_s": 10.0 * len(curve)}  # fmt: skip
        (run_dir / "summary.json").write_text(json.dumps(summary))
        return summary

    replace_training(monkeypatch, run_job)


def sweep_of(raw: dict):
    result = run_sweep(build_study(raw), quiet=True)
    assert result.failures == []
    return result.sweep_dir


def rows_of(sweep: Path, variant: str) -> dict[str, dict]:
    return {r["point"]: r for r in read_csv(sweep / "tuning.csv") if r["variant"] == variant}


def test_the_rule_changes_the_choice_on_a_cliff(tmp_path, monkeypatch):
    """lr 0.1: 0.58 on even tuning seeds, 0.25 on odd ones (mean 0.415, worst 0.25); lr 0.3: 0.40 on every seed
    (mean and worst 0.40).  The mean picks the cliff, worst and mean − SE (0.415 − 0.0953 = 0.320) the
    steady point; the evaluation runs carry the choice."""
    fake_training(monkeypatch, lambda s: ([0.1, 0.40 if s["training"]["lr"] == 0.3 else
                                           (0.58 if s["seed"] % 2 == 0 else 0.25)], None))  # fmt: skip
    grid, one = {"training.lr": [0.1, 0.3]}, [{"name": "plain"}]
    on_mean = sweep_of(tiny(tmp_path, {"grid": grid, "seeds": SEEDS}, compare=one))
    assert yaml.safe_load((on_mean / "tuned.yaml").read_text())["chosen"] == {"plain": {"training.lr": 0.1}}
    assert float(rows_of(on_mean, "plain")["lr0.1"]["mean"]) == pytest.approx(0.415)
    for rule in ("worst", "mean_minus_se"):
        sweep = sweep_of(tiny(tmp_path, {"grid": grid, "seeds": SEEDS, "rule": rule}, compare=one))
        tuned = yaml.safe_load((sweep / "tuned.yaml").read_text())
        assert tuned["chosen"] == {"plain": {"training.lr": 0.3}} and tuned["rule"] == rule
        rows = rows_of(sweep, "plain")
        assert float(rows["lr0.3"]["score"]) == pytest.approx(0.40)  # no spread: SE 0
        if rule == "worst":
            assert float(rows["lr0.1"]["score"]) == 0.25
        else:  # SE = std(0.58, 0.25, 0.58, 0.25; ddof 1) / 2 = 0.19053 / 2
            assert float(rows["lr0.1"]["score"]) == pytest.approx(0.415 - 0.0952628, abs=1e-6)
        assert {c["training"]["lr"] for k, c in configs(sweep).items() if k.startswith("plain/")} == {0.3}
        assert f"by the rule {rule}" in (sweep / "report.md").read_text()
    with pytest.raises(ConfigError, match="tune.rule"):
        build_study(tiny(tmp_path, {"grid": grid, "seeds": SEEDS, "rule": "median"}))


def test_few_tuning_seeds_are_warned_of_in_the_report_of_a_real_sweep(tmp_path, monkeypatch):
    fake_training(monkeypatch, lambda s: ([0.1, 0.5], None))
    sweep = sweep_of(
        tiny(tmp_path, {"grid": {"training.lr": [0.1, 0.3]}, "seeds": [100, 101]}, compare=[{"name": "a"}])
    )
    assert "- tuned on 2 seed(s), fewer than 4: one seed's cliff" in (sweep / "report.md").read_text()


def class_curves(scenario: dict):
    """lr 0.1: final accuracy 0.7, class 9 at 0.1; lr 0.3: final 0.6, class 9 at 0.5 (per evaluation)."""
    lr = scenario["training"]["lr"]
    return ([0.3, 0.7], [0.1, 0.1]) if lr == 0.1 else ([0.3, 0.6], [0.5, 0.5])


def test_a_criterion_per_variant_and_from_the_claims(tmp_path, monkeypatch):
    """plain tuned on class 9 picks lr 0.3 (0.5 > 0.1); longer, left out of the mapping, on final accuracy picks
    lr 0.1 (0.7 > 0.6).  With criterion: claimed both are tuned on the measure their one claim tests."""
    fake_training(monkeypatch, class_curves)
    grid = {"training.lr": [0.1, 0.3]}
    per_variant = {"grid": grid, "seeds": SEEDS, "criterion": {"plain": "last_quarter:accuracy_class_9"}}
    sweep = sweep_of(tiny(tmp_path, per_variant, eval={"per_class": True}))
    tuned = yaml.safe_load((sweep / "tuned.yaml").read_text())
    assert tuned["chosen"] == {"plain": {"training.lr": 0.3}, "longer": {"training.lr": 0.1}}
    assert tuned["criterion"] == "per variant"
    assert tuned["measures"] == {"plain": "last_quarter:accuracy_class_9", "longer": "final_accuracy"}
    assert (
        float(rows_of(sweep, "plain")["lr0.3"]["mean"]) == 0.5
        and float(rows_of(sweep, "longer")["lr0.1"]["mean"]) == 0.7
    )
    claim = {"variant": "plain", "versus": "longer", "measure": "last_quarter:accuracy_class_9", "direction": "higher"}
    claimed = {"grid": grid, "seeds": SEEDS, "criterion": "claimed"}
    sweep = sweep_of(tiny(tmp_path, claimed, eval={"per_class": True}, claims=[claim]))
    tuned = yaml.safe_load((sweep / "tuned.yaml").read_text())
    assert tuned["chosen"] == {"plain": {"training.lr": 0.3}, "longer": {"training.lr": 0.3}}
    report = (sweep / "report.md").read_text()
    assert "but claimed on" not in report  # tuned on what is claimed: no warning
    assert "Criterion: best mean the measure each variant's claims test; plain on last_quarter:accuracy_class_9; " \
        "longer on last_quarter:accuracy_class_9 over the tuning seeds" in report  # fmt: skip


def test_criterion_problems_name_the_key_and_the_allowed_values(tmp_path):
    def problems(criterion, **extra) -> str:
        with pytest.raises(ConfigError) as err:
            build_study(
                tiny(tmp_path, {"grid": {"training.lr": [0.1]}, "seeds": SEEDS, "criterion": criterion}, **extra)
            )
        return str(err.value)

    assert "tune.criterion: allowed: final_accuracy, last_quarter_accuracy, best_accuracy, time_to_target, " \
        "last_quarter:<column>, time_to:<target>, claimed, or a mapping" in problems("loss")  # fmt: skip
    assert "tune.criterion.nope: 'nope' is not a tuned variant; allowed: plain, longer." in problems(
        {"nope": "final_accuracy"}
    )
    assert "tune.criterion.plain: 'time_to:0.7': the target must be one of targets: (0.5)." in problems(
        {"plain": "time_to:0.7"}, targets=[0.5]
    )
    assert "no column accuracy_class_9" in problems("last_quarter:accuracy_class_9")  # eval.per_class is off
    assert "tune.criterion: claimed: the claims about 'plain' test no measure; name its measure instead" in problems(
        "claimed"
    )
    plan = build_study(tiny(tmp_path, {"grid": {"training.lr": [0.1]}, "seeds": SEEDS, "criterion": "time_to:0.5"},
                            targets=[0.5])).tuning  # fmt: skip
    assert plan.measures == {"plain": "time_to:0.5", "longer": "time_to:0.5"}


def hist_study(tmp_path, grid: dict, **tune) -> dict:
    return tiny(
        tmp_path, {"grid": grid, "seeds": SEEDS, **tune}, server={"mode": "k_async", "k": 2},
        compare=[{"name": "hist", "set": {"algorithm.name": "fedhist"}},
                 {"name": "buff", "set": {"algorithm.name": "fedbuff"}}],
    )  # fmt: skip


def test_algorithm_history_is_tuned_for_fedhist_and_skipped_for_fedbuff(tmp_path, monkeypatch):
    """Accuracy 0.2 + lr + history / 100: fedhist picks history 4, lr 0.3 among 4 points; fedbuff, whose
    algorithm has no history, is tuned on lr alone (2 points) and its runs keep their own settings."""

    def curve(scenario):
        return [0.1, 0.2 + scenario["training"]["lr"] + scenario["algorithm"].get("history", 0) / 100], None

    fake_training(monkeypatch, curve)
    sweep = sweep_of(hist_study(tmp_path, {"algorithm.history": [2, 4], "training.lr": [0.1, 0.3]}))
    assert set(rows_of(sweep, "hist")) == {"history2_lr0.1", "history2_lr0.3", "history4_lr0.1", "history4_lr0.3"}
    buff = rows_of(sweep, "buff")
    assert set(buff) == {"lr0.1", "lr0.3"} and {r["skipped"] for r in buff.values()} == {"algorithm.history"}
    assert {r["algorithm.history"] for r in buff.values()} == {""}
    assert float(rows_of(sweep, "hist")["history4_lr0.3"]["mean"]) == pytest.approx(0.54)
    tuned = yaml.safe_load((sweep / "tuned.yaml").read_text())
    assert tuned["chosen"] == {"hist": {"algorithm.history": 4, "training.lr": 0.3}, "buff": {"training.lr": 0.3}}
    assert tuned["skipped"] == {"buff": ["algorithm.history"]}
    done = configs(sweep)
    assert done["hist/seed0"]["algorithm"]["history"] == 4 and "history" not in done["buff/seed0"]["algorithm"]
    assert (
        "Not tuned for buff (its algorithm has no such setting, or its set fixes it): algorithm.history."
        in (sweep / "report.md").read_text()
    )
    assert not (sweep / "tuning" / "buff" / "history2_lr0.1").exists()


def test_an_algorithm_key_no_tuned_variant_has_is_refused(tmp_path):
    with pytest.raises(ConfigError) as err:
        build_study(hist_study(tmp_path, {"algorithm.nope": [1, 2]}))
    assert "tune.grid.algorithm.nope: no tuned variant's algorithm has the setting 'nope' (hist: fedhist, buff: " \
        "fedbuff); their settings:" in str(err.value)  # fmt: skip
    with pytest.raises(ConfigError, match="tune.grid.algorithm.history: no tuned variant's algorithm"):
        build_study(hist_study(tmp_path, {"algorithm.history": [2, 4]}, variants=["buff"]))
    # a variant with no grid key left is not tuned (its own values), and says why
    plan = build_study(hist_study(tmp_path, {"algorithm.history": [2, 4]})).tuning
    assert (plan.variants, plan.untuned, dict(plan.skipped)) == (("hist",), ("buff",), {"buff": ("algorithm.history",)})


def test_the_step_beyond_a_grid_edge_by_hand():
    assert next_value([0.1, 0.3], top=True) == 0.9 and next_value([0.1, 0.3], top=False) == pytest.approx(
        0.0333333333333
    )
    assert next_value([0.03, 0.1, 0.3], top=True) == 0.9  # near-constant ratio (3.3, 3): geometric, 0.3 · 3
    assert next_value([1, 2, 3], top=True) == 4 and next_value([1, 2, 3], top=False) == 0  # equal steps: arithmetic
    assert next_value([1, 2, 4], top=True) == 8 and next_value([-1.0, 1.0], top=True) == 3.0


def test_widening_adds_points_beyond_the_edge_and_chooses_again(tmp_path, monkeypatch):
    """Accuracy 0.5 + lr up to lr 0.9, 0.1 beyond: grid 0.1, 0.3 picks 0.3 (its top edge); round 1 adds 0.9
    (0.3 · 3) and picks it; round 2 adds 2.7, which loses: 0.9 stays, no longer at an edge."""
    fake_training(monkeypatch, lambda s: ([0.1, 0.5 + s["training"]["lr"] if s["training"]["lr"] < 1 else 0.1], None))
    grid, one = {"training.lr": [0.1, 0.3]}, [{"name": "plain"}]
    plain = sweep_of(tiny(tmp_path, {"grid": grid, "seeds": SEEDS}, compare=one))  # widen off: as before
    assert list(yaml.safe_load((plain / "tuned.yaml").read_text())) == ["criterion", "target", "seeds", "grid", "ties",
                                                                        "chosen", "untuned"]  # fmt: skip
    assert list(read_csv(plain / "tuning.csv")[0]) == ["variant", "point", "training.lr", *[f"seed{s}" for s in SEEDS],
                                                       "mean", "chosen"]  # fmt: skip
    assert "largest value of its grid" in (plain / "report.md").read_text()
    sweep = sweep_of(tiny(tmp_path, {"grid": grid, "seeds": SEEDS, "widen": True}, compare=one))
    rows = rows_of(sweep, "plain")
    assert [(p, r["widened"], r["chosen"]) for p, r in rows.items()] == [
        ("lr0.1", "0", "False"),
        ("lr0.3", "0", "False"),
        ("lr0.9", "1", "True"),
        ("lr2.7", "2", "False"),
    ]
    assert float(rows["lr0.9"]["mean"]) == pytest.approx(1.4) and float(rows["lr2.7"]["mean"]) == pytest.approx(0.1)
    tuned = yaml.safe_load((sweep / "tuned.yaml").read_text())
    assert tuned["chosen"] == {"plain": {"training.lr": 0.9}}
    assert tuned["widened"] == [
        {"variant": "plain", "key": "training.lr", "edge": 0.3, "value": 0.9, "round": 1},
        {"variant": "plain", "key": "training.lr", "edge": 0.9, "value": 2.7, "round": 2},
    ]
    assert {c["training"]["lr"] for k, c in configs(sweep).items() if k.startswith("plain/")} == {0.9}
    report = (sweep / "report.md").read_text()
    assert "- plain: training.lr = 0.3 at the edge, 0.9 added (round 1)" in report and "largest value" not in report
    once = sweep_of(tiny(tmp_path, {"grid": grid, "seeds": SEEDS, "widen": True, "widen_max": 1}, compare=one))
    assert set(rows_of(once, "plain")) == {"lr0.1", "lr0.3", "lr0.9"}
    assert "plain: training.lr = 0.9 is the largest value of its grid" in (once / "report.md").read_text()


def test_a_resume_stopped_between_widening_rounds_leaves_the_last_complete_choice(tmp_path, monkeypatch):
    """The widened sweep above, resumed and stopped (Ctrl-C, a kill) as it goes through widening round 1:
    tuned.yaml and tuning.csv still say lr 0.9, the value its evaluation runs were made with, not round 0's
    0.3 (the grid's edge) that a resume recomputes first."""
    fake_training(monkeypatch, lambda s: ([0.1, 0.5 + s["training"]["lr"] if s["training"]["lr"] < 1 else 0.1], None))
    raw = tiny(tmp_path, {"grid": {"training.lr": [0.1, 0.3]}, "seeds": SEEDS, "widen": True}, compare=[{"name": "p"}])
    sweep = sweep_of(raw)
    before = {name: (sweep / name).read_bytes() for name in ("tuned.yaml", "tuning.csv")}
    assert yaml.safe_load(before["tuned.yaml"])["chosen"] == {"p": {"training.lr": 0.9}}
    calls = []

    def stopped_in_round_1(jobs, *args):
        calls.append(len(jobs))
        if len(calls) == 2:  # the first call runs the grid's runs (none left), the second widening round 1's
            raise KeyboardInterrupt

    monkeypatch.setattr(study_sweep, "_execute", stopped_in_round_1)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(build_study(raw), resume=sweep, quiet=True)
    assert calls == [0, 0]
    assert {name: (sweep / name).read_bytes() for name in before} == before


def test_divergence_margin_keeps_the_choice_away_from_a_diverging_step(tmp_path, monkeypatch):
    """Accuracy 0.5 + lr / 10 on every tuning seed, except that lr 2.7 diverges on seed 101 (0.1 there):
    mean − SE scores 0.51, 0.53, 0.59 and 0.6025 − 0.1675 = 0.435, so without a margin lr 0.9 wins, the step
    right below the divergence.  Margin 1 rules out 0.9 and 2.7 (0.3 wins), margin 2 also 0.3 (0.1 wins);
    margin 3 rules out every point, and the choice is made as without it, which tuned.yaml and the report say."""

    def diverges(s):
        return s["training"]["lr"] == 2.7 and s["seed"] == 101

    fake_training(
        monkeypatch, lambda s: ([0.1, 0.1 if diverges(s) else 0.5 + s["training"]["lr"] / 10], None),
        lambda s: "diverged" if diverges(s) else "finished",
    )  # fmt: skip
    chosen = {}
    for margin in (0, 1, 2, 3):
        tune = {"grid": {"training.lr": [0.1, 0.3, 0.9, 2.7]}, "seeds": SEEDS, "rule": "mean_minus_se",
                "divergence_margin": margin}  # fmt: skip
        sweep = sweep_of(tiny(tmp_path / f"m{margin}", tune, compare=[{"name": "p"}]))
        chosen[margin] = yaml.safe_load((sweep / "tuned.yaml").read_text())["chosen"]["p"]["training.lr"]
        rows = rows_of(sweep, "p")
        if margin == 1:
            assert float(rows["lr2.7"]["score"]) == pytest.approx(0.6025 - 0.1675, abs=1e-4)
            assert [rows[p]["near_divergence"] for p in ("lr0.1", "lr0.3", "lr0.9", "lr2.7")] == [
                "False", "False", "True", "True",
            ]  # fmt: skip
            assert {c["training"]["lr"] for k, c in configs(sweep).items() if not k.startswith("tuning/")} == {0.3}
        report = (sweep / "report.md").read_text()
    assert chosen == {0: 0.9, 1: 0.3, 2: 0.1, 3: 0.9}
    off = sweep_of(tiny(tmp_path / "off", {"grid": {"training.lr": [0.1]}, "seeds": SEEDS}, compare=[{"name": "p"}]))
    assert "near_divergence" not in rows_of(off, "p")["lr0.1"]  # no margin: tuning.csv as before
    tuned = yaml.safe_load(next((tmp_path / "m3").rglob("tuned.yaml")).read_text())
    assert tuned["divergence_margin"] == 3 and tuned["near_divergence_everywhere"] == ["p"]
    assert "p: every point was that close; chosen as without the margin." in report


def test_near_divergence_steps_along_one_key_by_hand():
    from asyncfl.study.tuning_results import near_divergence

    points = [{"lr": lr, "h": h} for lr in (0.1, 0.3, 0.9) for h in (5, 10)]
    diverged = [p == {"lr": 0.9, "h": 5} for p in points]
    # margin 1: (0.9, 5) itself, (0.3, 5) one lr step, (0.9, 10) one h step; not (0.3, 10), two keys apart
    assert near_divergence(points, diverged, 1) == [False, False, True, False, True, True]
    assert near_divergence(points, diverged, 2) == [True, False, True, False, True, True]
    assert near_divergence(points, [False] * 6, 5) == [False] * 6


def test_collapse_accuracy_counts_a_model_collapsed_with_finite_parameters_as_failed(tmp_path, monkeypatch):
    """The margin test's grid, but lr 2.7 collapses to 0.102 on seed 101 with status finished (finite
    parameters): margin 1 alone does not see it and keeps lr 0.9, the step right below; with
    collapse_accuracy 0.15 that run failed and lr 0.3 is chosen, which tuned.yaml and the report say.
    collapse_accuracy without the margin would be ignored, so it is refused."""

    def collapses(s):
        return (s["training"]["lr"], s["seed"]) == (2.7, 101)

    fake_training(monkeypatch, lambda s: ([0.1, 0.102 if collapses(s) else 0.5 + s["training"]["lr"] / 10], None))
    grid = {"training.lr": [0.1, 0.3, 0.9, 2.7]}
    chosen = {}
    for name, extra in (("margin", {}), ("collapse", {"collapse_accuracy": 0.15})):
        tune = {"grid": grid, "seeds": SEEDS, "rule": "mean_minus_se", "divergence_margin": 1, **extra}
        sweep = sweep_of(tiny(tmp_path / name, tune, compare=[{"name": "p"}]))
        chosen[name] = yaml.safe_load((sweep / "tuned.yaml").read_text())["chosen"]["p"]["training.lr"]
    assert chosen == {"margin": 0.9, "collapse": 0.3}
    assert yaml.safe_load((sweep / "tuned.yaml").read_text())["collapse_accuracy"] == 0.15
    assert "diverged or ended at most 0.15 accurate (`collapse_accuracy: 0.15`)" in (sweep / "report.md").read_text()
    alone = tiny(tmp_path / "alone", {"grid": grid, "seeds": SEEDS, "collapse_accuracy": 0.15, "divergence_margin": 0})
    with pytest.raises(
        ConfigError, match="collapse_accuracy: counts a collapsed run for divergence_margin, which is 0"
    ):
        build_study(alone)
