"""The tuning choice as an analysis of finished tuning runs (asyncfl.study.tuning_results): the robust rules
(mean, mean minus one standard error, worst seed), a criterion per variant from its claims (any claim
measure, a missed target censored at the run's end) and the report's warnings, on hand-written runs."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from asyncfl.study import build_study
from asyncfl.study.claims import Claim
from asyncfl.study.tuning import TUNED_FILE, TUNING_DIR, default_seeds
from asyncfl.study.tuning_results import (
    choose,
    claimed_measure,
    measure_value,
    near_ties,
    score,
    tuning_section,
    tuning_warnings,
    write_choice,
)
from tests.study.test_tuning import tiny

SEEDS = [100, 101, 102, 103]


def write_run(run_dir, curve: list[float], end: float | None = None, class9: list[float] | None = None) -> None:
    """Evaluations at 10, 20, 30 ... s with these accuracies (and accuracy_class_9), ended at ``end``."""
    run_dir.mkdir(parents=True)
    header = "time,round,test_accuracy" + (",accuracy_class_9" if class9 else "")
    rows = [f"{10 * (i + 1)},{i + 1},{a}" + (f",{class9[i]}" if class9 else "") for i, a in enumerate(curve)]
    (run_dir / "metrics.csv").write_text("\n".join([header, *rows]) + "\n")
    summary = {"status": "finished", "final_accuracy": curve[-1], "best_accuracy": max(curve),
               "virtual_time_s": end if end is not None else 10.0 * len(curve)}  # fmt: skip
    (run_dir / "summary.json").write_text(json.dumps(summary))


def test_the_rules_by_hand():
    """A cliff: 0.579 on one seed, 0.249 on another (FedAU at η_g = 10), against a steady 0.40, 0.41.
    mean: 0.414 > 0.405, the cliff wins.  mean − SE: SE = |0.579 − 0.249| / √2 / √2 = 0.165, so
    0.414 − 0.165 = 0.249 against 0.405 − 0.005 = 0.400: the steady point wins.  worst: 0.249 < 0.40."""
    cliff, steady = [0.579, 0.249], [0.40, 0.41]
    assert score(cliff, "mean", False) == pytest.approx(0.414) and score(steady, "mean", False) == pytest.approx(0.405)
    assert score(cliff, "mean_minus_se", False) == pytest.approx(0.414 - 0.165)
    assert score(steady, "mean_minus_se", False) == pytest.approx(0.405 - 0.005)
    assert score(cliff, "worst", False) == 0.249 and score(steady, "worst", False) == 0.40
    # times: lower is better, so the SE and the worst seed move up
    assert score([10.0, 30.0], "mean_minus_se", True) == pytest.approx(20 + 10) and score([10, 30], "worst", True) == 30
    assert math.isnan(score([0.5, math.nan], "mean", False))
    with pytest.raises(ValueError, match="rule: allowed: mean, mean_minus_se, worst"):
        score([0.5], "median", False)


def plan_and_runs(tmp_path, curves: dict[str, list[list[float]]], **kw):
    """A tuned study (variant plain, grid lr 0.1 / 0.3, tuning seeds 100-103) and its tuning runs written by hand:
    ``curves``: point id -> one curve per tuning seed."""
    tune = {"grid": {"training.lr": [0.1, 0.3]}, "seeds": SEEDS}
    study = build_study(tiny(tmp_path, tune, compare=[{"name": "plain"}], targets=[0.6]))
    sweep = tmp_path / "sweep"
    for pid, per_seed in curves.items():
        for seed, curve in zip(SEEDS, per_seed):
            write_run(sweep / TUNING_DIR / "plain" / pid / f"seed{seed}", curve, **kw)
    return study.tuning, sweep


def test_a_cliff_wins_on_the_mean_and_loses_on_the_robust_rules(tmp_path):
    """lr 0.1: 0.58, 0.25, 0.58, 0.25 (mean 0.415, SE 0.0953); lr 0.3: 0.40 on every seed."""
    plan, sweep = plan_and_runs(tmp_path, {"lr0.1": [[0.58], [0.25], [0.58], [0.25]], "lr0.3": [[0.40]] * 4})
    assert choose(plan, sweep)[0] == {"plain": {"training.lr": 0.1}}
    assert choose(plan, sweep, "mean_minus_se")[0] == {"plain": {"training.lr": 0.3}}  # 0.415 − 0.095 < 0.40
    chosen, rows = choose(plan, sweep, "worst")
    assert chosen == {"plain": {"training.lr": 0.3}} and [r["score"] for r in rows] == [0.25, 0.40]
    write_choice(plan, sweep, "worst")
    record = yaml.safe_load((sweep / TUNED_FILE).read_text())
    assert record["rule"] == "worst" and "by the rule worst" in tuning_section(sweep)


def test_a_variant_tuned_on_its_claims_measure(tmp_path):
    """Tuned on final accuracy lr 0.1 wins (0.7 > 0.6); on class 9 (its claim's measure) lr 0.3 wins
    (last-quarter mean 0.5 > 0.1).  A run that never reaches 0.6 (0.2 at 10 s, 0.3 at 20 s, ended at 100 s)
    has time_to:0.6 = 100 s, its end (censored as in the claims), best accuracy 0.3."""
    class9 = {"lr0.1": [0.1, 0.1], "lr0.3": [0.5, 0.5]}
    tune = {"grid": {"training.lr": [0.1, 0.3]}, "seeds": SEEDS}
    study = build_study(tiny(tmp_path, tune, compare=[{"name": "plain"}], targets=[0.6], eval={"per_class": True}))
    sweep = tmp_path / "sweep"
    for pid, final in (("lr0.1", 0.7), ("lr0.3", 0.6)):
        for seed in SEEDS:
            write_run(sweep / TUNING_DIR / "plain" / pid / f"seed{seed}", [0.3, final], class9=class9[pid])
    plan = study.tuning
    assert choose(plan, sweep)[0] == {"plain": {"training.lr": 0.1}}
    on_class = choose(plan, sweep, measures={"plain": "last_quarter:accuracy_class_9"})[0]
    assert on_class == {"plain": {"training.lr": 0.3}}
    run = sweep / "miss"
    write_run(run, [0.2, 0.3], end=100.0)
    assert measure_value("time_to:0.6", run) == 100.0 and measure_value("best_accuracy", run) == 0.3
    assert measure_value("last_quarter_accuracy", run) == 0.3  # the last quarter of 20 s: the evaluation at 20


def test_the_report_warns_of_few_seeds_a_grid_edge_and_another_measure():
    claims = [Claim(variant="plain", versus="other", measure="last_quarter:accuracy_class_9", direction="higher"),
              Claim(variant="other", versus="plain", measure="final_accuracy", direction="lower")]  # fmt: skip
    record = {
        "criterion": "final_accuracy",
        "target": None,
        "seeds": [100, 101],
        "grid": {"training.lr": [0.03, 0.1, 0.3], "server.k": [5, 10]},
        "chosen": {"plain": {"training.lr": 0.3, "server.k": 5}, "other": {"training.lr": 0.1, "server.k": 10}},
    }
    assert tuning_warnings(record, claims) == [
        "tuned on 2 seed(s), fewer than 4: one seed's cliff can decide the choice; use more tuning seeds, or the "
        "rule mean_minus_se or worst.",
        "plain: training.lr = 0.3 is the largest value of its grid; the best may lie beyond it.",
        "plain: server.k = 5 is the smallest value of its grid; the best may lie beyond it.",
        "other: server.k = 10 is the largest value of its grid; the best may lie beyond it.",
        "plain: tuned on final_accuracy but claimed on last_quarter:accuracy_class_9.",
        "other: tuned on final_accuracy but claimed on last_quarter:accuracy_class_9.",
    ]  # fmt: skip
    fine = {
        **record,
        "seeds": SEEDS,
        "chosen": {"plain": {"training.lr": 0.1, "server.k": 5}},
        "grid": {"training.lr": [0.03, 0.1, 0.3], "server.k": [5]},
        "measures": {"plain": "last_quarter:accuracy_class_9"},
    }
    assert tuning_warnings(fine, claims) == [
        "plain: tuned on last_quarter:accuracy_class_9 but claimed on final_accuracy."
    ]
    assert claimed_measure("plain", claims) is None and claimed_measure("plain", claims[:1]) == claims[0].measure


def test_tune_without_seeds_uses_four_seeds_disjoint_from_the_evaluation_seeds(tmp_path):
    """No tune.seeds: the first 4 integers from 100 on that are not evaluation seeds (evaluation 0, 1:
    100-103; evaluation 100, 102: 101, 103, 104, 105), every grid point on each (2 points x 4 seeds)."""
    study = build_study(tiny(tmp_path, {"grid": {"training.lr": [0.1, 0.3]}}, compare=[{"name": "plain"}]))
    assert study.tuning.spec.seeds == [100, 101, 102, 103] and default_seeds([0, 1]) == [100, 101, 102, 103]
    assert sorted({run.seed for run in study.tuning.runs}) == [100, 101, 102, 103] and len(study.tuning.runs) == 8
    clash = build_study(tiny(tmp_path, {"grid": {"training.lr": [0.1, 0.3]}}, compare=[{"name": "plain"}],
                             seeds=[100, 102]))  # fmt: skip
    assert clash.tuning.spec.seeds == [101, 103, 104, 105]


def test_the_default_seeds_choose_by_each_rule_on_a_hand_built_table(tmp_path):
    """Default seeds 100-103, three points, final accuracies per seed:
        lr 0.03: 0.50 0.50 0.50 0.50   mean 0.500  SE 0       worst 0.50
        lr 0.1:  0.70 0.30 0.70 0.30   mean 0.500  SE 0.1155  worst 0.30   (a cliff)
        lr 0.3:  0.62 0.58 0.62 0.18   mean 0.500  SE 0.1070  worst 0.18
    (SE = std(ddof=1) / 2: lr 0.1: sqrt(4 x 0.04 / 3) / 2 = 0.11547; lr 0.3: the deviations 0.12, 0.08, 0.12,
    −0.32 give sqrt(0.1376 / 3) / 2 = 0.10708.)  mean: a three-way tie at 0.500, the first point (lr 0.03) wins;
    then lr 0.1's first seed raised to 0.74 (mean 0.510; deviations 0.23, −0.21, 0.19, −0.21, SE
    sqrt(0.1772 / 3) / 2 = 0.12152) makes it win on the mean alone.  mean − SE: 0.500 (lr 0.03) > 0.500 − 0.10708
    = 0.39292 (lr 0.3) > 0.510 − 0.12152 = 0.38848 (lr 0.1): lr 0.03.  worst: 0.50 > 0.30 > 0.18: lr 0.03."""
    table = {"lr0.03": [0.50] * 4, "lr0.1": [0.74, 0.30, 0.70, 0.30], "lr0.3": [0.62, 0.58, 0.62, 0.18]}
    study = build_study(tiny(tmp_path, {"grid": {"training.lr": [0.03, 0.1, 0.3]}}, compare=[{"name": "plain"}]))
    sweep = tmp_path / "sweep"
    for pid, finals in table.items():
        for seed, final in zip(SEEDS, finals):
            write_run(sweep / TUNING_DIR / "plain" / pid / f"seed{seed}", [final])
    plan = study.tuning
    assert choose(plan, sweep, "mean")[0] == {"plain": {"training.lr": 0.1}}
    chosen, rows = choose(plan, sweep, "mean_minus_se")
    assert chosen == {"plain": {"training.lr": 0.03}}
    assert [r["score"] for r in rows] == pytest.approx([0.50, 0.51 - 0.12152, 0.50 - 0.10708], abs=1e-5)
    chosen, rows = choose(plan, sweep, "worst")
    assert chosen == {"plain": {"training.lr": 0.03}} and [r["score"] for r in rows] == [0.50, 0.30, 0.18]
    even = tmp_path / "even"  # lr 0.1 back to 0.70: all three means 0.500, the first point wins the tie
    for pid, finals in {**table, "lr0.1": [0.70, 0.30, 0.70, 0.30]}.items():
        for seed, final in zip(SEEDS, finals):
            write_run(even / TUNING_DIR / "plain" / pid / f"seed{seed}", [final])
    assert choose(plan, even, "mean")[0] == {"plain": {"training.lr": 0.03}}
    write_choice(plan, sweep, "mean_minus_se")
    record = yaml.safe_load((sweep / TUNED_FILE).read_text())
    assert record["seeds"] == SEEDS and not any("fewer than" in w for w in tuning_warnings(record, []))


def test_a_near_tie_is_listed_under_the_tuning_table(tmp_path):
    """Final accuracies per tuning seed (100-103), rule mean:
        lr 0.03: 0.50 0.52 0.48 0.50   mean 0.500  (the runner-up)
        lr 0.1:  0.55 0.47 0.53 0.49   mean 0.510  (chosen)
        lr 0.3:  0.20 0.20 0.20 0.20   mean 0.200
    Paired advantage of lr 0.1 over lr 0.03: 0.05, −0.05, 0.05, −0.01, mean 0.01; deviations 0.04, −0.06,
    0.04, −0.02, std (ddof=1) sqrt(0.0072 / 3) = 0.04899, SE 0.04899 / 2 = 0.02449 ≥ 0.01: a near tie.
    With lr 0.1 at 0.60 0.62 0.58 0.61 the advantage is 0.10, 0.10, 0.10, 0.11 (mean 0.1025, SE 0.0025):
    no line."""
    study = build_study(tiny(tmp_path, {"grid": {"training.lr": [0.03, 0.1, 0.3]}}, compare=[{"name": "plain"}]))
    table = {"lr0.03": [0.50, 0.52, 0.48, 0.50], "lr0.1": [0.55, 0.47, 0.53, 0.49], "lr0.3": [0.20] * 4}
    for name, lr01 in (("tie", table["lr0.1"]), ("clear", [0.60, 0.62, 0.58, 0.61])):
        sweep = tmp_path / name
        for pid, finals in {**table, "lr0.1": lr01}.items():
            for seed, final in zip(SEEDS, finals):
                write_run(sweep / TUNING_DIR / "plain" / pid / f"seed{seed}", [final])
        assert write_choice(study.tuning, sweep, "mean") == {"plain": {"training.lr": 0.1}}
    section = tuning_section(tmp_path / "tie")
    tie = "- plain: training.lr = 0.1 over training.lr = 0.03, +0.01 ± 0.0245 on final_accuracy\n"
    assert "Near ties:" in section and tie in section
    assert "Near ties" not in tuning_section(tmp_path / "clear")


def test_near_ties_by_hand_for_a_time_lower_being_better():
    """Times to target per seed: chosen 100, 110, 90, 100 (mean 100); runner-up 105, 100, 95, 104 (mean 101);
    a third point 99 on every seed but kept out by the divergence margin (it may not be the runner-up).
    Advantage (runner-up − chosen): 5, −10, 5, 4, mean 1.0; deviations 4, −11, 4, 3, std sqrt(162 / 3) =
    7.348, SE 3.674.  A value that is not finite (a target never reached, +inf) leaves the variant out."""
    record = {"criterion": "time_to_target", "target": 0.8, "seeds": SEEDS, "grid": {"training.lr": [0.1, 0.3, 1.0]},
              "chosen": {"plain": {"training.lr": 0.1}}}  # fmt: skip

    def row(lr, times, chosen=False, near="False"):
        seeds = {f"seed{s}": str(t) for s, t in zip(SEEDS, times)}
        return {"variant": "plain", "training.lr": str(lr), **seeds, "mean": str(sum(times) / 4),
                "chosen": str(chosen), "near_divergence": near}  # fmt: skip

    rows = [row(0.1, [100, 110, 90, 100], True), row(0.3, [105, 100, 95, 104]), row(1.0, [99] * 4, near="True")]
    (tie,) = near_ties(record, rows)
    assert (tie.variant, tie.measure) == ("plain", "time_to:0.8")
    assert (tie.chosen, tie.runner_up) == ({"training.lr": "0.1"}, {"training.lr": "0.3"})
    assert (tie.advantage, tie.se) == pytest.approx((1.0, math.sqrt(54) / 2))
    assert tie.line() == "plain: training.lr = 0.1 over training.lr = 0.3, +1 ± 3.67 on time_to:0.8"
    rows[1]["seed101"] = "inf"
    assert near_ties(record, rows) == []
    assert near_ties({**record, "seeds": SEEDS[:1]}, rows) == []  # one seed shows no spread
