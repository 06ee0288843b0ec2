"""Issue 47, item 3: a variant whose claims test several measures is tuned on each, from one set of tuning
runs; where a later measure chooses another point than its first, the variant's runs with that point are made
under ``<variant>~<measure>`` and the claims on that measure read them (for the versus too).  Runs are
stand-ins written at once (tests.study.test_tuning_keys.fake_training)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from asyncfl.cli.study import report_dir, validate_study
from asyncfl.output.reading import read_csv
from asyncfl.study import build_study
from asyncfl.study.claims import Claim
from asyncfl.sweep.study_sweep import run_sweep
from tests.study.test_tuning import configs, tiny
from tests.study.test_tuning_keys import fake_training, sweep_of

SEEDS = [100, 101]
# p is claimed on two measures (against q on one, against r on the other)
CLAIMS = [
    {"variant": "p", "versus": "q", "measure": "last_quarter_accuracy", "direction": "higher"},
    {"variant": "p", "versus": "r", "measure": "time_to:0.5", "direction": "lower"},
]
COMPARE = [{"name": "p"}, {"name": "q", "set": {"training.local_steps": 3}}, {"name": "r"}]
# lr 0.1 climbs late and high, lr 0.3 reaches 0.5 at once and stays lower: evaluations at 10, 20, 30, 40 s
SLOW_HIGH, FAST_LOW = [0.2, 0.3, 0.8, 0.8], [0.55, 0.56, 0.57, 0.57]


def study(tmp_path: Path, **tune) -> dict:
    """Three variants, grid lr 0.1 / 0.3 on 2 tuning seeds (no widening, no margin), the claims above."""
    raw = tiny(tmp_path, {"grid": {"training.lr": [0.1, 0.3]}, "seeds": SEEDS, **tune}, compare=COMPARE,
               targets=[0.5], claims=CLAIMS)  # fmt: skip
    return raw


def counting(monkeypatch, curves: dict[float, list[float]]) -> list[tuple[float, int]]:
    """Training replaced by ``curves`` (lr -> accuracies); returns the (lr, seed) of every run made, in order."""
    made: list[tuple[float, int]] = []

    def curve_of(scenario: dict):
        made.append((scenario["training"]["lr"], scenario["seed"]))
        return curves[scenario["training"]["lr"]], None

    fake_training(monkeypatch, curve_of)
    return made


def run_dirs(folder: Path) -> list[str]:
    return sorted(p.parent.relative_to(folder).as_posix() for p in folder.rglob("summary.json"))


def test_two_measures_that_choose_different_points_get_two_evaluation_sets(tmp_path, monkeypatch):
    """Last-quarter accuracy (the evaluation at 40 s: 0.8 against 0.57) chooses lr 0.1 for p and q; time to 0.5
    (30 s against 10 s) chooses lr 0.3 for p and r.  Each tuning run is made once (3 variants x 2 points x 2
    seeds), p's runs carry lr 0.1, p~time_to_0.5's lr 0.3, and the time claim reads p~time_to_0.5 against r."""
    made = counting(monkeypatch, {0.1: SLOW_HIGH, 0.3: FAST_LOW})
    sweep = sweep_of(study(tmp_path))
    tuning = [d for d in run_dirs(sweep) if d.startswith("tuning/")]
    assert len(tuning) == 12 and len([m for m in made if m[1] in SEEDS]) == 12  # no tuning run twice
    assert [d for d in run_dirs(sweep) if not d.startswith("tuning/")] == [
        "p/seed0", "p/seed1", "p~time_to_0.5/seed0", "p~time_to_0.5/seed1", "q/seed0", "q/seed1", "r/seed0", "r/seed1",
    ]  # fmt: skip
    lrs = {k: (c["training"]["lr"], c["seed"]) for k, c in configs(sweep).items() if not k.startswith("tuning/")}
    assert lrs["p/seed0"] == (0.1, 0) and lrs["p~time_to_0.5/seed1"] == (0.3, 1)
    assert lrs["q/seed0"] == (0.1, 0) and lrs["r/seed0"] == (0.3, 0)
    record = yaml.safe_load((sweep / "tuned.yaml").read_text())
    assert record["chosen"] == {"p": {"training.lr": 0.1}, "q": {"training.lr": 0.1}, "r": {"training.lr": 0.3}}
    assert record["per_measure"] == {"p": {
        "last_quarter_accuracy": {"chosen": {"training.lr": 0.1}, "runs": "p"},
        "time_to:0.5": {"chosen": {"training.lr": 0.3}, "runs": "p~time_to_0.5"},
    }}  # fmt: skip
    rows = [(r["variant"], r["measure"], r["point"], r["mean"], r["chosen"]) for r in read_csv(sweep / "tuning.csv")]
    assert rows[:4] == [
        ("p", "last_quarter_accuracy", "lr0.1", "0.8", "True"),
        ("p", "last_quarter_accuracy", "lr0.3", "0.57", "False"),
        ("p", "time_to:0.5", "lr0.1", "30.0", "False"),
        ("p", "time_to:0.5", "lr0.3", "10.0", "True"),
    ]  # fmt: skip
    claims = [(r["variant"], r["versus"], r["measure"]) for r in read_csv(sweep / "claims.csv")]
    assert claims == [("p", "q", "last_quarter_accuracy"), ("p~time_to_0.5", "r", "time_to:0.5")]
    report = (sweep / "report.md").read_text()
    assert "| p | time_to:0.5 | training.lr = 0.3 | p~time_to_0.5 |" in report
    assert "| p | last_quarter_accuracy | training.lr = 0.1 | p |" in report
    assert "p on last_quarter_accuracy and time_to:0.5" in report
    assert "- p on time_to:0.5: training.lr = 0.3 is the largest value of its grid" in report  # widen is off here
    assert "&id" not in (sweep / "tuned.yaml").read_text()  # each point written out, no YAML anchor
    assert "named `<variant>~<measure>`" in (sweep / "claims.md").read_text()
    shutil.rmtree(sweep / "p~time_to_0.5" / "seed1")  # asyncfl report, from the files: the same sets, one run short
    assert report_dir(sweep, None) == 0
    partial = [(r["variant"], r["partial"]) for r in read_csv(sweep / "claims.csv")]
    assert partial == [("p", ""), ("p~time_to_0.5", "variant p~time_to_0.5: 1 of 2 seeds")]


def test_two_measures_that_choose_the_same_point_make_no_extra_runs(tmp_path, monkeypatch):
    """lr 0.1 now both reaches 0.5 first (10 s) and ends highest: both measures choose it, so p has one set of
    evaluation runs and both claims read it."""
    counting(monkeypatch, {0.1: [0.55, 0.6, 0.9, 0.9], 0.3: SLOW_HIGH})
    sweep = sweep_of(study(tmp_path))
    assert [d for d in run_dirs(sweep) if not d.startswith("tuning/")] == [
        "p/seed0", "p/seed1", "q/seed0", "q/seed1", "r/seed0", "r/seed1",
    ]  # fmt: skip
    per = yaml.safe_load((sweep / "tuned.yaml").read_text())["per_measure"]["p"]
    assert {m: (e["chosen"]["training.lr"], e["runs"]) for m, e in per.items()} == {
        "last_quarter_accuracy": (0.1, "p"), "time_to:0.5": (0.1, "p"),
    }  # fmt: skip
    claims = [(r["variant"], r["versus"]) for r in read_csv(sweep / "claims.csv")]
    assert claims == [("p", "q"), ("p", "r")]
    assert "`<variant>~<measure>`" not in (sweep / "claims.md").read_text()


def test_a_resumed_sweep_chooses_each_measure_from_the_tuning_runs_on_disk(tmp_path, monkeypatch):
    """An evaluation run of p~time_to_0.5 and tuned.yaml lost (a sweep stopped there): a resume remakes only that
    run, with the point chosen again from the tuning runs on disk."""
    made = counting(monkeypatch, {0.1: SLOW_HIGH, 0.3: FAST_LOW})
    raw = study(tmp_path)
    sweep = sweep_of(raw)
    shutil.rmtree(sweep / "p~time_to_0.5" / "seed1")
    (sweep / "tuned.yaml").unlink()
    made.clear()
    assert run_sweep(build_study(raw), resume=sweep, quiet=True).failures == []
    assert made == [(0.3, 1)]
    assert yaml.safe_load((sweep / "tuned.yaml").read_text())["per_measure"]["p"]["time_to:0.5"]["runs"] == \
        "p~time_to_0.5"  # fmt: skip


def test_a_criterion_given_keeps_one_measure_per_variant(tmp_path):
    """tune.criterion given (one for all, or a mapping): each variant on that one measure, no further sets."""
    assert build_study(study(tmp_path, criterion="last_quarter_accuracy")).tuning.also == {}
    mapping = build_study(study(tmp_path, criterion={"p": "time_to:0.5"})).tuning
    assert mapping.also == {} and mapping.measures == {"p": "time_to:0.5", "q": "final_accuracy", "r": "final_accuracy"}
    claimed = build_study(study(tmp_path, criterion="claimed")).tuning
    assert claimed.measures["p"] == "last_quarter_accuracy" and claimed.also == {"p": ("time_to:0.5",)}


def test_a_widening_one_measure_asks_for_is_run_once_and_serves_both(tmp_path, monkeypatch):
    """Grid lr 0.1 / 0.3 / 0.9: last-quarter accuracy chooses 0.3 (0.8, inside the grid), time to 0.5 chooses 0.9
    (10 s, the top edge), so widening runs lr 2.7 (0.9 · 3) once per tuning seed for p (and for r, claimed on the
    time only); 2.7 reaches 0.5 at 20 s and ends at 0.6, so neither choice moves and no second round follows."""
    curves = {0.1: [0.2, 0.3, 0.4, 0.45], 0.3: SLOW_HIGH, 0.9: FAST_LOW, 2.7: [0.2, 0.6, 0.6, 0.6]}
    made = counting(monkeypatch, curves)
    raw = study(tmp_path, widen=True)
    raw["tune"]["grid"] = {"training.lr": [0.1, 0.3, 0.9]}
    sweep = sweep_of(raw)
    assert sorted(p.name for p in (sweep / "tuning" / "p").iterdir()) == ["lr0.1", "lr0.3", "lr0.9", "lr2.7"]
    assert sorted(made).count((2.7, 100)) == 2 and (2.7, 101) in made  # p and r, each once
    assert not (sweep / "tuning" / "q" / "lr2.7").exists()
    record = yaml.safe_load((sweep / "tuned.yaml").read_text())
    assert [(w["variant"], w["edge"], w["value"], w["round"]) for w in record["widened"]] == [
        ("p", 0.9, 2.7, 1), ("r", 0.9, 2.7, 1),
    ]  # fmt: skip
    per = record["per_measure"]["p"]
    assert {m: (e["chosen"]["training.lr"], e["runs"]) for m, e in per.items()} == {
        "last_quarter_accuracy": (0.3, "p"), "time_to:0.5": (0.9, "p~time_to_0.5"),
    }  # fmt: skip
    assert "p on time_to:0.5: training.lr" not in (sweep / "report.md").read_text()  # 0.9 is no edge once 2.7 ran
    lrs = {k: c["training"]["lr"] for k, c in configs(sweep).items() if k.endswith("seed0") and "/" not in k[:-6]}
    assert lrs == {"p/seed0": 0.3, "p~time_to_0.5/seed0": 0.9, "q/seed0": 0.3, "r/seed0": 0.9}


def test_a_set_tuned_on_another_measure_keeps_its_claim_on_the_declared_variant():
    """On a sensitivity axis a claim is one test across the axis values (grouped by ``declared``): the runs
    ``fedhist.h20~time_to_0.4`` belong to the declared ``fedhist`` like ``fedhist.h10``."""
    claim = Claim(variant="fedhist.h20~time_to_0.4", versus="fedavg", measure="time_to:0.4", direction="lower",
                  axis="h", axis_value="h20")  # fmt: skip
    assert claim.declared == ("study", "fedhist", "fedavg", "time_to:0.4")
    assert claim.model_copy(update={"variant": "fedhist.h10", "axis_value": "h10"}).declared == claim.declared


def test_validate_names_the_variants_tuned_on_several_measures_and_their_runs(tmp_path, capsys):
    assert validate_study(build_study(study(tmp_path)), "s.yaml") == 0
    out = capsys.readouterr().out
    assert "  tuned on each measure its claims test: p on last_quarter_accuracy, time_to:0.5; where a later " \
        "measure chooses another point, its runs (2 seed(s) each): p~time_to_0.5\n" in out  # fmt: skip
