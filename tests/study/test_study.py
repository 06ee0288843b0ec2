"""Studies: variant expansion and its errors, aggregation over seeds by hand, resumable sweeps,
``compare`` of separate runs, and the straggler figures read back from run directories."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from asyncfl.cli import main
from asyncfl.config import ConfigError
from asyncfl.figures import render_run_figures
from asyncfl.figures.timeline_files import offline_periods, task_segments, timeline_clients, update_staleness
from asyncfl.output.client_statistics import bias_stats
from asyncfl.output.reading import read_csv
from asyncfl.output.run_directory import ENDED
from asyncfl.study import build_study
from asyncfl.study.compare import write_comparison
from asyncfl.study.seed_statistics import RunRecord, step_value
from asyncfl.sweep.study_sweep import run_sweep

BASE = {
    "name": "tiny",
    "data": {"dataset": "digits", "clients": 4},
    "model": {"name": "logreg"},
    "training": {"local_steps": 2},
    "server": {"deadline_s": 50, "late_updates": "next_round"},
    "algorithm": {"name": "fedavg", "weighting": "samples"},
    "stop": {"rounds": 2},
    "output": {"plot": False},
}


def study_raw(tmp_path: Path, **extra) -> dict:
    return {**BASE, "output": {"plot": False, "dir": str(tmp_path / "runs")}, **extra}


# ---------------------------------------------------------------- expansion and errors


def test_variants_expand_over_seeds_with_dotted_and_nested_overrides(tmp_path):
    raw = study_raw(tmp_path, seeds=[3, 1], compare=[
        {"name": "base"},
        {"name": "short", "set": {"server.deadline_s": 5, "training": {"lr": 0.2}}},
        {"name": "buff", "set": {"server": {"mode": "k_async", "k": 2, "deadline_s": None, "late_updates": "drop"},
                                  "algorithm": {"name": "fedbuff"}}},
    ])  # fmt: skip
    study = build_study(raw)
    assert study.variants == ("base", "short", "buff") and study.seeds == (3, 1)
    assert [(r.variant, r.seed) for r in study.runs] == [
        ("base", 3), ("base", 1), ("short", 3), ("short", 1), ("buff", 3), ("buff", 1),
    ]  # fmt: skip
    assert [r.scenario.seed for r in study.runs] == [3, 1, 3, 1, 3, 1]
    base, short, buff = study.runs[0].scenario, study.runs[2].scenario, study.runs[4].scenario
    assert base.server.deadline_s == 50 and short.server.deadline_s == 5
    assert short.server.late_updates == "next_round"  # a nested mapping merges key by key
    assert short.training.lr == 0.2 and short.training.local_steps == 2
    assert buff.server.mode == "k_async" and buff.server.k == 2 and buff.server.deadline_s is None
    assert buff.algorithm.name == "fedbuff"  # a new union tag replaced the mapping: no fedavg 'weighting'
    assert base.algorithm.weighting == "samples"
    assert str(study.runs[3].rel_dir) == "short/seed1"
    assert "compare" in study.raw and "compare" not in study.runs[0].scenario.model_dump()


def test_seeds_without_compare_is_one_variant(tmp_path):
    study = build_study(study_raw(tmp_path, seeds=[0, 1, 2]))
    assert study.variants == ("base",) and [r.seed for r in study.runs] == [0, 1, 2]


def test_every_problem_is_reported_with_its_yaml_path(tmp_path):
    raw = study_raw(tmp_path, seeds=[0, -1], compare=[
        {"name": "ok", "set": {"stop.rounds": 0}},
        {"name": "bad", "set": {"server": {"k": 0}}, "sett": 1},
        {"name": "ok"},
        {"name": "has space"},
    ])  # fmt: skip
    with pytest.raises(ConfigError) as err:
        build_study(raw, source="s.yaml")
    text = str(err.value)
    assert text.startswith("s.yaml: ")
    assert "seeds: every seed must be a non-negative integer (got -1)" in text
    assert "compare[0].set.stop.rounds: " in text
    assert "compare[1].set.server.k: " in text and "greater than or equal to 1" in text
    assert "compare[1].sett: unknown key" in text
    assert "compare[2].name: 'ok' is used by an earlier variant" in text
    assert "compare[3].name: required" in text


def test_a_base_key_that_breaks_one_variant_is_blamed_on_the_base(tmp_path):
    to_async = {"server.mode": "k_async", "algorithm.name": "fedbuff"}
    raw = study_raw(tmp_path, compare=[{"name": "a"}, {"name": "b", "set": to_async}])
    raw["server"], raw["algorithm"] = {}, {"name": "fedavg"}  # k_async: the default k = 10 > 4 clients
    with pytest.raises(ConfigError) as err:
        build_study(raw)
    assert "compare[1] (b): " in str(err.value) and "server.k (10)" in str(err.value)
    assert "compare[0]" not in str(err.value)


@pytest.mark.slow
def test_cli_validates_every_variant(tmp_path, capsys):
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study_raw(tmp_path, seeds=[0, 1], compare=[{"name": "a"}, {"name": "b"}])))
    assert main(["validate", str(path)]) == 0  # in this process; the refusal below in the command's own
    assert "2 variant(s) x 2 seed(s) = 4 runs" in capsys.readouterr().out
    bad = yaml.safe_load(path.read_text())
    bad["compare"][1]["set"] = {"server.k": -1}
    path.write_text(yaml.safe_dump(bad))
    err = subprocess.run([sys.executable, "-m", "asyncfl", "validate", str(path)], capture_output=True, text=True)
    assert err.returncode == 2 and "compare[1].set.server.k" in err.stderr and "Traceback" not in err.stderr


# ---------------------------------------------------------------- aggregation by hand


def fake_run(
    path: Path, points: list[tuple[float, int, float]], final: float, clients: list[float] = (), status="finished"
) -> Path:
    path.mkdir(parents=True)
    lines = ["time,round,test_accuracy"] + [f"{t},{r},{a}" for t, r, a in points] + [f"{points[-1][0] + 1},9,"]
    (path / "metrics.csv").write_text("\n".join(lines) + "\n")
    (path / "summary.json").write_text(json.dumps({"status": status, "final_accuracy": final,
                                                   "best_accuracy": final, "target_accuracy": None}))  # fmt: skip
    if clients:
        rows = ["client,accuracy"] + [f"{i},{a}" for i, a in enumerate(clients)]
        (path / "clients.csv").write_text("\n".join(rows) + "\n")
    return path


def test_step_value_is_the_latest_evaluation_and_nan_outside():
    import numpy as np

    got = step_value(np.array([0.0, 10.0]), np.array([0.1, 0.5]), np.array([-1.0, 0.0, 5.0, 10.0, 11.0]))
    assert np.isnan(got[0]) and np.isnan(got[4]) and list(got[1:4]) == [0.1, 0.1, 0.5]


def test_comparison_csv_and_time_to_target_by_hand(tmp_path):
    a = fake_run(tmp_path / "a", [(0, 0, 0.1), (10, 1, 0.5), (20, 2, 0.7)], 0.7, [0.1 * i for i in range(1, 11)])
    b = fake_run(tmp_path / "b", [(0, 0, 0.2), (15, 1, 0.6), (30, 2, 0.9)], 0.9, [0.5] * 10)
    c = fake_run(tmp_path / "c", [(0, 0, 0.3), (5, 1, 0.4)], 0.4)
    out = tmp_path / "out"
    out.mkdir()
    records = [RunRecord("x", 0, a), RunRecord("x", 1, b), RunRecord("y", 0, c)]
    files = write_comparison(out, records, targets=[0.5, 0.8])
    names = {"comparison.csv", "runs.csv", "time_to_target.csv", "time_to_target.md", "accuracy_vs_time.png",
             "accuracy_vs_round.png", "client_accuracy.csv", "client_accuracy.md"}  # fmt: skip
    assert {f.name for f in files} == names and all(f.stat().st_size > 0 for f in files)
    rows = [r for r in read_csv(out / "comparison.csv") if r["variant"] == "x" and r["axis"] == "time"]
    s = math.sqrt(2) * 0.05  # sample std of two values 0.1 apart
    expected = [  # x, seeds, mean, std  (A: 0.1@0 0.5@10 0.7@20; B: 0.2@0 0.6@15 0.9@30)
        (0, 2, 0.15, s), (10, 2, 0.35, math.sqrt(2) * 0.15), (15, 2, 0.55, s), (20, 2, 0.65, s), (30, 1, 0.9, 0.0),
    ]  # fmt: skip
    assert len(rows) == len(expected)
    for row, (x, n, mean, std) in zip(rows, expected):
        assert float(row["x"]) == x and int(row["seeds"]) == n
        assert float(row["accuracy_mean"]) == pytest.approx(mean, abs=1e-6)
        assert float(row["accuracy_std"]) == pytest.approx(std, abs=1e-6)
    by_round = [r for r in read_csv(out / "comparison.csv") if r["variant"] == "x" and r["axis"] == "round"]
    assert [float(r["accuracy_mean"]) for r in by_round] == pytest.approx([0.15, 0.55, 0.8])
    assert float(by_round[2]["accuracy_min"]) == 0.7 and float(by_round[2]["accuracy_max"]) == 0.9
    ttt = {(r["variant"], float(r["target"])): r for r in read_csv(out / "time_to_target.csv")}
    assert ttt[("x", 0.5)]["reached"] == "2" and float(ttt[("x", 0.5)]["time_to_target_mean_s"]) == 12.5
    assert float(ttt[("x", 0.5)]["time_to_target_std_s"]) == pytest.approx(math.sqrt(12.5), abs=1e-6)
    assert ttt[("x", 0.8)]["reached"] == "1" and float(ttt[("x", 0.8)]["time_to_target_mean_s"]) == 30
    assert ttt[("y", 0.5)]["reached"] == "0" and ttt[("y", 0.5)]["time_to_target_mean_s"] == ""
    assert float(ttt[("x", 0.5)]["final_accuracy_mean"]) == pytest.approx(0.8)
    md = (out / "time_to_target.md").read_text()
    assert "| x | 0.5 | 2/2 | 12 ± 4 |" in md and "| y | 0.5 | 0/1 | — |" in md
    bias = read_csv(out / "client_accuracy.csv")[0]  # mean over seeds of the per-seed statistics
    assert float(bias["mean"]) == pytest.approx((55 + 50) / 2) and float(bias["var"]) == pytest.approx(825 / 2)
    assert float(bias["worst10_mean"]) == pytest.approx((10 + 50) / 2)


def test_a_diverged_run_stays_in_the_band_at_its_last_accuracy(tmp_path):
    # A diverged at 10 s (its model broke: 0.1 from then on, as its final accuracy says); B finished at 30 s;
    # C finished early at 10 s without diverging (another horizon), so it leaves the band after 10 s.
    a = fake_run(tmp_path / "a", [(0, 0, 0.2), (5, 1, 0.6), (10, 2, 0.1)], 0.1, status="diverged")
    b = fake_run(tmp_path / "b", [(0, 0, 0.2), (20, 1, 0.5), (30, 2, 0.7)], 0.7)
    c = fake_run(tmp_path / "c", [(0, 0, 0.2), (10, 1, 0.4)], 0.4)
    out = tmp_path / "out"
    out.mkdir()
    write_comparison(out, [RunRecord("x", 0, a), RunRecord("x", 1, b), RunRecord("y", 0, c), RunRecord("y", 1, b)])
    rows = {(r["variant"], float(r["x"])): r for r in read_csv(out / "comparison.csv") if r["axis"] == "time"}
    for x, mean in ((10, 0.15), (20, 0.3), (30, 0.4)):  # A holds 0.1 past 10 s; B 0.2, 0.5, 0.7
        assert int(rows[("x", x)]["seeds"]) == 2 and float(rows[("x", x)]["accuracy_mean"]) == pytest.approx(mean)
    assert float(rows[("x", 30)]["accuracy_min"]) == pytest.approx(0.1)
    assert int(rows[("y", 20)]["seeds"]) == 1 and float(rows[("y", 30)]["accuracy_mean"]) == pytest.approx(0.7)
    by_round = [r for r in read_csv(out / "comparison.csv") if r["variant"] == "x" and r["axis"] == "round"]
    assert [int(r["seeds"]) for r in by_round] == [2, 2, 2] and float(by_round[-1]["accuracy_mean"]) == 0.4


def test_bias_statistics_follow_fedar_table_3():
    stats = bias_stats([0.1 * i for i in range(1, 21)] + [math.nan])  # 20 clients: worst/best 10 % = 2 clients
    assert stats["clients"] == 20 and stats["mean"] == pytest.approx(105)
    assert stats["var"] == pytest.approx(3325) and stats["std"] == pytest.approx(math.sqrt(3325))
    assert stats["worst10_mean"] == pytest.approx(15) and stats["worst10_std"] == pytest.approx(5)
    assert stats["best10_mean"] == pytest.approx(195)


# ---------------------------------------------------------------- sweeps, resume, compare


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    raw = study_raw(tmp, seeds=[0, 1], targets=[0.15], compare=[
        {"name": "fedavg"},
        {"name": "buff", "set": {"server": {"mode": "k_async", "k": 2, "concurrency": 3, "deadline_s": None,
                                             "late_updates": "drop"}, "algorithm": {"name": "fedbuff"}}},
    ])  # fmt: skip
    study = build_study(raw)
    result = run_sweep(study, quiet=True)
    return study, result.sweep_dir


def _metrics_without_wall(path: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in read_csv(path / "metrics.csv")]


@pytest.mark.slow
def test_sweep_layout_and_comparison(sweep):
    study, sweep_dir = sweep
    for variant in ("fedavg", "buff"):
        for seed in (0, 1):
            run_dir = sweep_dir / variant / f"seed{seed}"
            summary = json.loads((run_dir / "summary.json").read_text())
            assert summary["status"] in ENDED and summary["seed"] == seed
            assert yaml.safe_load((run_dir / "config.yaml").read_text())["seed"] == seed
    assert yaml.safe_load((sweep_dir / "study.yaml").read_text())["seeds"] == [0, 1]
    runs = read_csv(sweep_dir / "runs.csv")
    assert [(r["variant"], r["seed"]) for r in runs] == [("fedavg", "0"), ("fedavg", "1"), ("buff", "0"), ("buff", "1")]
    final = [r for r in read_csv(sweep_dir / "comparison.csv") if r["variant"] == "fedavg" and r["axis"] == "round"]
    summaries = [json.loads((sweep_dir / "fedavg" / f"seed{s}" / "summary.json").read_text()) for s in (0, 1)]
    accs = [s["final_accuracy"] for s in summaries]
    assert float(final[-1]["accuracy_mean"]) == pytest.approx(sum(accs) / 2, abs=1e-6)
    assert [r["target"] for r in read_csv(sweep_dir / "time_to_target.csv")] == ["0.15", "0.15"]


def test_resume_skips_finished_runs_and_redoes_the_others(sweep, tmp_path):
    import shutil

    study, original = sweep
    sweep_dir = tmp_path / "copy"
    shutil.copytree(original, sweep_dir)
    done = sweep_dir / "fedavg" / "seed0"
    interrupted = sweep_dir / "fedavg" / "seed1"
    partial = sweep_dir / "buff" / "seed0"
    stamp = (done / "metrics.csv").stat().st_mtime_ns
    summary = json.loads((interrupted / "summary.json").read_text())
    (interrupted / "summary.json").write_text(json.dumps({**summary, "status": "running"}))
    (partial / "summary.json").unlink()
    (partial / "checkpoint.pt").unlink(missing_ok=True)  # died before its first checkpoint: redone from scratch
    (partial / "junk.txt").write_text("left by a crash")
    result = run_sweep(study, resume=sweep_dir, quiet=True)
    assert (result.ran, result.skipped, result.failures) == (2, 2, [])
    assert (done / "metrics.csv").stat().st_mtime_ns == stamp  # untouched
    assert not (partial / "junk.txt").exists()  # the partial directory was cleared before the redo
    for run in (interrupted, partial):
        assert json.loads((run / "summary.json").read_text())["status"] in ENDED
        rel = run.relative_to(sweep_dir)
        assert _metrics_without_wall(run) == _metrics_without_wall(original / rel)  # same seed, same numbers


def test_resume_refuses_a_finished_run_made_with_other_settings(sweep, tmp_path):
    import shutil

    study, original = sweep
    shutil.copytree(original, tmp_path / "copy")
    changed = build_study({**study.raw, "training": {"local_steps": 3}})
    with pytest.raises(ConfigError, match="training.local_steps"):
        run_sweep(changed, resume=tmp_path / "copy", quiet=True)


@pytest.mark.slow
def test_cli_compare_overlays_separate_runs(sweep, tmp_path):
    _, sweep_dir = sweep
    runs = [str(sweep_dir / "fedavg" / "seed0"), str(sweep_dir / "buff" / "seed1"), str(sweep_dir / "buff" / "seed0")]
    out = tmp_path / "cmp"
    assert main(["compare", *runs, "--out", str(out), "--target", "0.12"]) == 0  # the command, in this process
    rows = read_csv(out / "runs.csv")
    assert [(r["variant"], r["seed"]) for r in rows] == [("fedavg", "0"), ("buff", "1"), ("buff", "0")]
    ttt = read_csv(out / "time_to_target.csv")
    assert [(r["variant"], r["seeds"]) for r in ttt] == [("fedavg", "1"), ("buff", "2")]
    for name in ("accuracy_vs_time.png", "accuracy_vs_round.png", "time_to_target.md", "comparison.csv"):
        assert (out / name).stat().st_size > 0


# ---------------------------------------------------------------- straggler figures


@pytest.fixture(scope="module")
def markov_run(tmp_path_factory):
    from asyncfl.config import validate_scenario
    from asyncfl.runner.start import run_scenario

    raw = {**BASE, "data": {"dataset": "digits", "clients": 6}, "algorithm": {"name": "fedbuff"},
           "server": {"mode": "k_async", "k": 2, "concurrency": 4}, "stop": {"rounds": 12},
           "population": {"availability": {"kind": "markov", "p": {"dist": "uniform", "low": 0.3, "high": 0.8},
                                           "mean_cycle_s": 4}}}  # fmt: skip
    return run_scenario(validate_scenario(raw), tmp_path_factory.mktemp("markov") / "run", quiet=True)


@pytest.mark.slow
def test_every_straggler_figure_is_written(markov_run, capsys):
    files = render_run_figures(markov_run)
    assert [f.name for f in files] == [
        "accuracy_vs_time.png", "timeline.png", "staleness.png", "participation.png", "client_accuracy.png",
        "time_breakdown.png",  # timezones.png only with population.timezones
    ]  # fmt: skip
    assert all(f.stat().st_size > 10_000 for f in files)
    assert "Mean (%)" in (markov_run / "client_accuracy.md").read_text()
    capsys.readouterr()
    assert main(["plot", str(markov_run)]) == 0  # the command, in this process
    out = capsys.readouterr().out
    assert "timeline.png" in out and "accuracy_vs_time.png" in out


def test_offline_periods_explain_every_offline_failure(markov_run):
    segments, failures = task_segments(markov_run)
    offline = [f for f in failures if f.reason == "offline"]
    assert offline, "the scenario should produce offline failures"
    assert timeline_clients(markov_run) == list(range(6))  # 6 clients: all of them are on the timeline
    spans = offline_periods(markov_run)
    for f in offline:  # a client drops exactly when an offline period starts (or is offline at a start)
        assert any(s - 1e-6 <= f.time <= e + 1e-6 for s, e in spans[f.client]), f
    for s in segments:  # no phase runs while its client is offline
        assert not any(a + 1e-6 < s.start < b - 1e-6 for a, b in spans[s.client]), s


def test_staleness_in_updates_csv_matches_rounds_csv(markov_run):
    rounds = read_csv(markov_run / "rounds.csv")
    tau = update_staleness(markov_run)
    assert len(tau) == sum(int(r["received"]) for r in rounds) and max(tau) > 0
    start = 0
    for r in rounds:
        chunk = tau[start : start + int(r["received"])]
        start += len(chunk)
        assert sum(chunk) / len(chunk) == pytest.approx(float(r["staleness_mean"]), abs=1e-6)
        assert max(chunk) == int(float(r["staleness_max"]))


def test_resume_continues_a_killed_run_from_its_checkpoint(sweep, tmp_path, monkeypatch):
    """A run killed mid-way (here at its 5th event) resumes from its checkpoint instead of starting
    over, and ends with the numbers of the uninterrupted run."""
    import shutil

    from asyncfl.config import validate_scenario
    from asyncfl.sweep import jobs
    from tests.runner.test_resume import _kill_at_event

    study, original = sweep
    sweep_dir = tmp_path / "copy"
    shutil.copytree(original, sweep_dir)
    killed = sweep_dir / "fedavg" / "seed1"
    shutil.rmtree(killed)
    spec = next(r for r in study.runs if (r.variant, r.seed) == ("fedavg", 1))
    assert _kill_at_event(monkeypatch, validate_scenario(spec.scenario.model_dump(mode="json")), killed, 5)
    assert (killed / "checkpoint.pt").is_file() and not (killed / "summary.json").exists()
    resumed = []
    original_resume = jobs.resume_run
    monkeypatch.setattr(jobs, "resume_run", lambda d, quiet=True: resumed.append(d) or original_resume(d, quiet))
    result = run_sweep(study, resume=sweep_dir, quiet=True)
    assert (result.ran, result.skipped, result.failures) == (1, 3, [])
    assert resumed == [killed]
    assert _metrics_without_wall(killed) == _metrics_without_wall(original / "fedavg" / "seed1")


@pytest.fixture(scope="module")
def same_name_runs(tmp_path_factory):
    """Three runs of scenario 'tiny': seeds 0 and 1 of one setting, and seed 0 with other local steps."""
    from asyncfl.config import validate_scenario
    from asyncfl.runner.start import run_scenario

    tmp = tmp_path_factory.mktemp("same_name")
    settings = [("a", 0, 2), ("b", 1, 2), ("c", 0, 3)]
    return [
        run_scenario(validate_scenario({**BASE, "seed": seed, "training": {"local_steps": steps}}), tmp / d)
        for d, seed, steps in settings
    ]


@pytest.mark.slow
def test_compare_groups_runs_by_configuration_not_by_name(same_name_runs, tmp_path):
    out = tmp_path / "cmp"
    assert main(["compare", *map(str, same_name_runs), "--out", str(out)]) == 0  # the command, in this process
    rows = read_csv(out / "runs.csv")
    assert [(r["variant"], r["seed"]) for r in rows] == [
        ("tiny (training.local_steps=2)", "0"),
        ("tiny (training.local_steps=2)", "1"),
        ("tiny (training.local_steps=3)", "0"),
    ]
    seeds = {r["variant"]: r["seeds"] for r in read_csv(out / "time_to_target.csv")}
    assert seeds == {"tiny (training.local_steps=2)": "2", "tiny (training.local_steps=3)": "1"}


@pytest.mark.slow
def test_compare_refuses_one_label_for_runs_with_different_settings(same_name_runs, tmp_path):
    args = [str(p) for p in same_name_runs] + ["--label", "x"] * 3 + ["--out", str(tmp_path / "cmp")]
    done = subprocess.run([sys.executable, "-m", "asyncfl", "compare", *args], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--label x" in done.stderr and "training.local_steps" in done.stderr
    assert not (tmp_path / "cmp").exists()


def test_the_local_executor_frees_each_runs_reference_cycles(tmp_path, monkeypatch):
    """A run's objects in reference cycles are collected before the next run starts (with the automatic
    collector off, only run_locally's own collection can free them): a long sweep stays flat in memory."""
    import gc
    import weakref

    from asyncfl.sweep import jobs

    class Node:
        pass

    alive = []

    def fake_run_job(scenario, run_dir, resume=False):
        for ref in alive:  # the previous run's cycle must be gone by now
            assert ref() is None
        node = Node()
        node.self = node  # a cycle: reference counting alone never frees it
        alive.append(weakref.ref(node))
        if scenario.get("fail"):
            raise RuntimeError("broken run")
        return {"status": "finished"}

    monkeypatch.setattr(jobs, "run_job", fake_run_job)
    work = [jobs.Job("v", s, {"fail": s == 1}, tmp_path / f"seed{s}") for s in range(3)]
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        failures = jobs.run_locally(work, lambda msg: None)
    finally:
        if was_enabled:
            gc.enable()
    assert [job.seed for job, _ in failures] == [1]  # a failed run's cycle is freed too
    assert len(alive) == 3 and all(ref() is None for ref in alive)
