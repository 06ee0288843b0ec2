"""tune: in a study: grid points run on tuning seeds only, the best mean criterion wins (ties: the first point),
and the evaluation runs carry the chosen values."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from asyncfl.cli.study import validate_study
from asyncfl.config import ConfigError, Scenario
from asyncfl.output.reading import read_csv
from asyncfl.study import build_study
from asyncfl.study.tuning import TUNABLE, UNTUNABLE, grid_points, point_id
from asyncfl.sweep.study_sweep import run_sweep
from tests.conftest import replace_training, write_finished_run

EVAL_SEEDS, TUNE_SEEDS = [0, 1], [100, 101]


# the tuning defaults before issue 47 (no widening, no divergence margin), which these tests were written for;
# a test of the widening or the margin sets its own (tests/study/test_tuning_defaults.py: the new defaults)
BEFORE_47 = {"widen": False, "divergence_margin": 0}


def tiny(tmp_path: Path, tune: dict | None = None, **extra) -> dict:
    tune = tune if tune is not None else {"grid": {"training.lr": [0.01, 0.3]}, "seeds": TUNE_SEEDS}
    if isinstance(tune, dict) and "collapse_accuracy" not in tune:
        tune = {**BEFORE_47, **tune}
    raw = {
        "name": "tiny", "seeds": EVAL_SEEDS, "data": {"dataset": "digits", "clients": 4}, "model": {"name": "logreg"},
        "training": {"local_steps": 2}, "stop": {"rounds": 2}, "checkpoint": {"every_rounds": None},
        "output": {"plot": False, "events": "none", "dir": str(tmp_path / "runs")},
        "compare": [{"name": "plain"}, {"name": "longer", "set": {"training.local_steps": 3}}],
        "tune": tune,
    }  # fmt: skip
    raw.update(extra)
    return raw


def problems(raw: dict) -> str:
    with pytest.raises(ConfigError) as err:
        build_study(raw, source="s.yaml")
    return str(err.value)


def configs(folder: Path) -> dict[str, dict]:
    return {p.parent.relative_to(folder).as_posix(): yaml.safe_load(p.read_text()) for p in folder.rglob("config.yaml")}


def test_grid_order_and_point_ids():
    grid = {"training.lr": [0.03, 0.1], "algorithm.server_lr": [0.5, 1.0]}
    points = grid_points(grid)  # the last key varies fastest
    assert [(p["training.lr"], p["algorithm.server_lr"]) for p in points] == [(0.03, 0.5), (0.03, 1.0), (0.1, 0.5),
                                                                              (0.1, 1.0)]  # fmt: skip
    assert [point_id(p) for p in points] == ["lr0.03_server_lr0.5", "lr0.03_server_lr1", "lr0.1_server_lr0.5",
                                             "lr0.1_server_lr1"]  # fmt: skip
    # two keys ending alike are named in full; a value with a '/' cannot make a path
    assert point_id({"training.lr": 1e-05, "algorithm.lr": "a/b"}) == "training-lr1e-05_algorithm-lra-b"


def test_study_is_refused_with_the_reason(tmp_path):
    overlap = problems(tiny(tmp_path, {"grid": {"training.lr": [0.1]}, "seeds": [1, 100]}))
    assert "tune.seeds: [1] are also evaluation seeds (seeds:)" in overlap
    tuned_key = tiny(tmp_path, {"grid": {"training.local_steps": [1, 2]}, "seeds": TUNE_SEEDS})
    assert "variant 'longer' sets training.local_steps, which tune.grid.training.local_steps tunes" in problems(
        tuned_key
    )
    only_plain = tiny(tmp_path, {"grid": {"training.local_steps": [1, 2]}, "seeds": TUNE_SEEDS, "variants": ["plain"]})
    plan = build_study(only_plain).tuning  # longer is not tuned: no contradiction
    assert (plan.variants, plan.untuned) == (("plain",), ("longer",))
    bad_key = problems(tiny(tmp_path, {"grid": {"training.lrr": [0.1]}, "seeds": TUNE_SEEDS}))
    assert "tune.grid.training.lrr (plain, lrr0.1): training.lrr: unknown key" in bad_key
    bad_value = problems(tiny(tmp_path, {"grid": {"training.lr": [0.1, -1.0]}, "seeds": TUNE_SEEDS}))
    assert "tune.grid.training.lr (plain, lr-1): training.lr:" in bad_value and "lr0.1)" not in bad_value
    unknown = problems(tiny(tmp_path, {"grid": {"training.lr": [0.1]}, "seeds": TUNE_SEEDS, "criterion_": 1}))
    allowed = (
        "Allowed here: collapse_accuracy, criterion, divergence_margin, grid, rule, seeds, variants, widen, widen_max."
    )
    assert f"tune.criterion_: unknown key. Did you mean 'criterion'? {allowed}" in unknown
    criterion = problems(tiny(tmp_path, {"grid": {"training.lr": [0.1]}, "seeds": TUNE_SEEDS, "criterion": "loss"}))
    assert "tune.criterion:" in criterion and "time_to_target" in criterion
    no_target = tiny(tmp_path, {"grid": {"training.lr": [0.1]}, "seeds": TUNE_SEEDS, "criterion": "time_to_target"})
    assert "tune.criterion: time_to_target needs targets:" in problems(no_target)
    variant = problems(tiny(tmp_path, {"grid": {"training.lr": [0.1]}, "seeds": TUNE_SEEDS, "variants": ["nope"]}))
    assert "tune.variants: 'nope' is not a variant; allowed: plain, longer." in variant
    clash = problems(tiny(tmp_path, compare=[{"name": "tuning"}]))
    assert "compare: a variant named 'tuning' would share the tuning runs' directory." in clash


@pytest.mark.parametrize(
    ("key", "values", "reason"),
    [
        ("seed", [1, 2], "tune.seeds and seeds: set it"),
        ("name", ["a", "b"], "it names the run directory"),
        ("output.dir", ["x", "y"], "it says what a run writes, not what it learns"),
        ("stop.rounds", [2, 3], "it is the run's budget"),
        ("eval.every_rounds", [1, 2], "it changes how the criterion is measured"),
    ],
)
def test_a_grid_key_that_cannot_be_tuned_is_refused_with_the_tunable_sections(tmp_path, key, values, reason):
    message = problems(tiny(tmp_path, {"grid": {key: values}, "seeds": TUNE_SEEDS}))
    head = key.split(".")[0]
    expected = f"tune.grid.{key}: {head} cannot be tuned ({reason}"
    sections = "tunable sections: algorithm, clock, data, flower, model, population, server, training."
    assert expected in message and sections in message
    assert message.count("\n  ") == 1  # one problem, not one per variant and point


def test_every_scenario_section_is_either_tunable_or_refused_with_a_reason():
    assert set(TUNABLE) | set(UNTUNABLE) == set(Scenario.model_fields) and not set(TUNABLE) & set(UNTUNABLE)


def test_distinct_values_get_distinct_point_directories(tmp_path):
    assert point_id({"training.lr": 0.1}) == "lr0.1" and point_id({"training.lr": 0.1000000001}) == "lr0.1000000001"
    assert [point_id({"x.e": v}) for v in (1e6, 1e-6, 1.0, 2.5e-7)] == ["e1e06", "e1e-06", "e1", "e2.5e-07"]
    plan = build_study(tiny(tmp_path, {"grid": {"training.lr": [0.1, 0.1000000001]}, "seeds": TUNE_SEEDS})).tuning
    assert plan.ids == ("lr0.1", "lr0.1000000001")
    equal = problems(tiny(tmp_path, {"grid": {"training.lr": [0.1, 0.1]}, "seeds": TUNE_SEEDS}))
    assert "tune.grid.training.lr: the values 0.1 and 0.1 both name the grid point's directory 'lr0.1'" not in equal
    assert "tune.grid.training.lr: the values 0.1 and 0.1 both name the grid point's directory '0.1', because they " \
        "are equal; list each value once" in equal  # fmt: skip
    slash = problems(tiny(tmp_path, {"grid": {"population.compute.dist": ["a/b", "a-b"]}, "seeds": TUNE_SEEDS}))
    assert "the values 'a/b' and 'a-b' both name the grid point's directory 'a-b', because a directory name keeps " \
        "only letters, digits" in slash  # fmt: skip


@pytest.mark.slow
def test_the_cli_prints_one_paragraph_and_exits_2(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(tiny(tmp_path, {"grid": {"training.lr": [0.1]}, "seeds": [0, 100]})))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "asyncfl", "validate", str(path)], capture_output=True, text=True,
                          env=env)  # fmt: skip
    assert done.returncode == 2 and "tune.seeds: [0] are also evaluation seeds" in done.stderr


def fake_accuracy(seed: int, lr: float, local_steps: int) -> float:
    """On tuning seeds (>= 100) accuracy grows with lr; on evaluation seeds it falls: a choice that looked at
    an evaluation seed would pick another lr.  local_steps 3 makes every lr equal (a tie)."""
    if local_steps == 3:
        return 0.5
    return 0.5 + lr + 0.01 * (seed - 100) if seed >= 100 else 0.9 - lr


@pytest.fixture
def fake_runs(monkeypatch):
    """Replace training by a run directory whose final accuracy is :func:`fake_accuracy` (instant, exact)."""
    seen: list[tuple[str, int]] = []

    def run_job(scenario: dict, run_dir: Path, resume: bool = False) -> dict:
        seed, training = scenario["seed"], scenario["training"]
        seen.append((run_dir.as_posix(), seed))
        acc = fake_accuracy(seed, training["lr"], training["local_steps"])
        return write_finished_run(run_dir, scenario, acc)

    replace_training(monkeypatch, run_job)
    return seen


@pytest.mark.slow
def test_the_choice_follows_the_tuning_seeds_only(tmp_path, fake_runs):
    grid = {"training.lr": [0.03, 0.1, 0.3]}
    result = run_sweep(build_study(tiny(tmp_path, {"grid": grid, "seeds": TUNE_SEEDS})), quiet=True)
    sweep = result.sweep_dir
    assert result.failures == [] and result.ran == 2 * 3 * 2 + 2 * 2
    tuning_seeds = {seed for path, seed in fake_runs if "/tuning/" in path}
    assert tuning_seeds == set(TUNE_SEEDS)  # no evaluation seed ran in tuning
    assert [seed for path, seed in fake_runs if "/tuning/" not in path] == [0, 1, 0, 1]
    # On the evaluation seeds lr 0.03 would win (0.87 > 0.8 > 0.6): the choice must be lr 0.3.
    assert max(grid["training.lr"], key=lambda lr: fake_accuracy(0, lr, 2) + fake_accuracy(1, lr, 2)) == 0.03
    rows = read_csv(sweep / "tuning.csv")
    plain = {r["point"]: r for r in rows if r["variant"] == "plain"}
    # plain, tuning seeds 100 and 101: 0.5 + lr + {0, 0.01}; means 0.535, 0.605, 0.805
    for pid, mean in (("lr0.03", 0.535), ("lr0.1", 0.605), ("lr0.3", 0.805)):
        assert float(plain[pid]["mean"]) == pytest.approx(mean)
        assert float(plain[pid]["seed101"]) - float(plain[pid]["seed100"]) == pytest.approx(0.01)
    assert [plain[p]["chosen"] for p in ("lr0.03", "lr0.1", "lr0.3")] == ["False", "False", "True"]
    # longer: 0.5 on every point, a tie: the first point in grid order wins
    longer = [r for r in rows if r["variant"] == "longer"]
    assert [float(r["mean"]) for r in longer] == [0.5, 0.5, 0.5]
    assert [r["chosen"] for r in longer] == ["True", "False", "False"]
    tuned = yaml.safe_load((sweep / "tuned.yaml").read_text())
    assert tuned["chosen"] == {"plain": {"training.lr": 0.3}, "longer": {"training.lr": 0.03}}
    assert tuned["seeds"] == TUNE_SEEDS and tuned["criterion"] == "final_accuracy"
    done = configs(sweep)
    assert {done[f"plain/seed{s}"]["training"]["lr"] for s in EVAL_SEEDS} == {0.3}
    assert {done[f"longer/seed{s}"]["training"]["lr"] for s in EVAL_SEEDS} == {0.03}
    assert done["longer/seed0"]["training"]["local_steps"] == 3  # the variant's own set stays
    study_yaml = yaml.safe_load((sweep / "study.yaml").read_text())
    assert study_yaml["tune"]["grid"] == grid and study_yaml["training"] == {"local_steps": 2}  # as written
    report = (sweep / "report.md").read_text()
    assert "## Tuning" in report and "seeds [100, 101]" in report and "| plain | training.lr = 0.3 |" in report


@pytest.mark.slow
def test_time_to_target_counts_a_miss_as_infinite(tmp_path, monkeypatch):
    """Target 0.6.  lr 0.1 reaches it at t = 10 on seed 100 and never on seed 101: mean +inf; lr 0.3 reaches
    it at t = 30 on both: mean 30, chosen although its best seed is slower."""

    def run_job(scenario: dict, run_dir: Path, resume: bool = False) -> dict:
        lr, seed = scenario["training"]["lr"], scenario["seed"]
        curve = {(0.1, 100): [0.7, 0.7, 0.7], (0.1, 101): [0.2, 0.3, 0.4]}.get((lr, seed), [0.2, 0.4, 0.65])
        run_dir.mkdir(parents=True)
        rows = "".join(f"{10 * (i + 1)},{i + 1},{a}\n" for i, a in enumerate(curve))
        (run_dir / "metrics.csv").write_text("time,round,test_accuracy\n" + rows)
        summary = {"status": "finished", "final_accuracy": curve[-1], "best_accuracy": max(curve)}
        (run_dir / "summary.json").write_text(json.dumps(summary))
        return summary

    replace_training(monkeypatch, run_job)
    tune = {"grid": {"training.lr": [0.1, 0.3]}, "seeds": TUNE_SEEDS, "criterion": "time_to_target"}
    study = build_study(tiny(tmp_path, tune, targets=[0.6, 0.9], compare=[{"name": "plain"}]))
    sweep = run_sweep(study, quiet=True).sweep_dir
    rows = {r["point"]: r for r in read_csv(sweep / "tuning.csv")}
    assert float(rows["lr0.1"]["seed100"]) == 10 and math.isinf(float(rows["lr0.1"]["mean"]))
    assert float(rows["lr0.3"]["mean"]) == 30 and rows["lr0.3"]["chosen"] == "True"
    assert yaml.safe_load((sweep / "tuned.yaml").read_text())["target"] == 0.6  # the first target


@pytest.mark.slow
def test_real_runs_tune_on_tuning_seeds_and_resume_reuses_them(tmp_path):
    study = build_study(tiny(tmp_path))
    result = run_sweep(study, quiet=True)
    sweep = result.sweep_dir
    assert result.failures == [] and result.ran == 2 * 2 * 2 + 2 * 2
    done = configs(sweep)
    tuning = {k: v for k, v in done.items() if k.startswith("tuning/")}
    assert len(tuning) == 8 and {c["seed"] for c in tuning.values()} == set(TUNE_SEEDS)
    assert {c["seed"] for k, c in done.items() if not k.startswith("tuning/")} == set(EVAL_SEEDS)
    # the choice is the argmax of the mean final accuracy over the tuning seeds, read from the runs themselves
    chosen = yaml.safe_load((sweep / "tuned.yaml").read_text())["chosen"]
    rows = read_csv(sweep / "tuning.csv")
    for variant in ("plain", "longer"):
        means = {}
        for lr in (0.01, 0.3):
            finals = [json.loads((sweep / f"tuning/{variant}/lr{lr:g}/seed{s}/summary.json").read_text())
                      ["final_accuracy"] for s in TUNE_SEEDS]  # fmt: skip
            means[lr] = sum(finals) / 2
            row = next(r for r in rows if r["variant"] == variant and r["point"] == f"lr{lr:g}")
            assert float(row["mean"]) == pytest.approx(means[lr], abs=1e-12)
        best = max(means, key=means.get)
        assert chosen[variant] == {"training.lr": best}
        assert {done[f"{variant}/seed{s}"]["training"]["lr"] for s in EVAL_SEEDS} == {best}
    # resume: delete one tuning run and one evaluation run; only those two run again
    kept = sweep / "tuning/plain/lr0.01/seed100/summary.json"
    stamp = kept.stat().st_mtime_ns
    for rel in ("tuning/longer/lr0.3/seed101", "plain/seed1"):
        for path in sorted((sweep / rel).rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        (sweep / rel).rmdir()
    (sweep / "tuned.yaml").unlink()
    again = run_sweep(build_study(yaml.safe_load((sweep / "study.yaml").read_text())), resume=sweep, quiet=True)
    assert again.failures == [] and (again.ran, again.skipped) == (2, 10)
    assert kept.stat().st_mtime_ns == stamp
    assert yaml.safe_load((sweep / "tuned.yaml").read_text())["chosen"] == chosen  # recomputed, same runs


@pytest.mark.slow
def test_ray_runs_the_tuning_phase_then_the_evaluation(tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        raw = tiny(tmp_path, compare=[{"name": "plain"}])
        on_ray = run_sweep(build_study(raw), out=tmp_path / "ray", executor="ray", quiet=True)
        here = run_sweep(build_study(raw), out=tmp_path / "local", quiet=True)
    finally:
        ray.shutdown()
    assert on_ray.failures == [] and on_ray.ran == 2 * 2 + 2
    for name in ("tuning.csv", "tuned.yaml"):
        assert (on_ray.sweep_dir / name).read_text() == (here.sweep_dir / name).read_text()
    assert set(configs(on_ray.sweep_dir)) == set(configs(here.sweep_dir))


def test_the_documented_example_is_a_valid_study():
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "how-to" / "compare.md").read_text(encoding="utf-8")
    section = page[page.index("## Tune step sizes fairly") :]
    example = yaml.safe_load(section[section.index("```yaml\n") + 8 : section.index("```\n", 10)])
    raw = {**yaml.safe_load((root / "scenarios" / "compare_deadlines.yaml").read_text()), **example}
    study = build_study(raw)
    # 2 variants x 6 grid points (3 lr x 2 server_lr) x 4 tuning seeds; 2 variants x 5 evaluation seeds
    assert len(study.tuning.runs) == 48 and len(study.runs) == 10
    assert study.tuning.ids[1] == "lr0.03_server_lr1"


def test_validate_counts_the_tuning_runs_too(tmp_path, capsys):
    """2 grid points x 2 tuning seeds for each of the 2 variants = 8 tuning runs before the 2 x 2 evaluation runs."""
    assert validate_study(build_study(tiny(tmp_path), source="s.yaml"), "s.yaml") == 0
    out = capsys.readouterr().out
    assert "2 variant(s) x 2 seed(s) = 4 runs" in out
    assert "and first 8 tuning runs: 2 grid point(s) x 2 tuning seed(s) for each of plain, longer" in out


@pytest.mark.slow
def test_a_tuned_study_with_claims_reports_both(tmp_path):
    """tune: and claims: together: the claims compare the tuned evaluation runs (never a tuning seed), and
    report.md carries the claims table, then the Tuning section."""
    claim = {"family": "f", "variant": "longer", "versus": "plain", "measure": "final_accuracy", "direction": "higher"}
    result = run_sweep(build_study(tiny(tmp_path, claims=[claim])), quiet=True)
    sweep = result.sweep_dir
    assert result.failures == []
    text = (sweep / "report.md").read_text()
    assert text.index("## Declared claims") < text.index("Tuning")
    (row,) = read_csv(sweep / "claims.csv")
    assert int(row["pairs"]) == len(EVAL_SEEDS)  # the evaluation seeds only
