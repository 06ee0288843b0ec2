"""Issue 47, item 2: rounds to a target are survival data like times to it.  A run that misses the target is
restricted at its horizon in rounds: its own last round when it did not diverge; when it diverged, its
stop.rounds, else the median last round of its variant's runs that did not diverge (its own when all diverged).
report.csv's rounds cells, 'reached' and verdicts, and compare's time_to_target.csv, are restricted means."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from asyncfl.output.reading import read_csv
from asyncfl.study.censoring import run_horizons
from asyncfl.study.compare import write_comparison
from asyncfl.study.report import write_report
from asyncfl.study.seed_statistics import RunRecord, time_to_target_rows

ROUNDS = "rounds to 0.5"


def run(path: Path, reached: int | None, last: int, status: str = "finished", stop: dict | None = None) -> Path:
    """A run evaluated after every round r at 10 · r virtual s up to round ``last``, at 0.9 from round
    ``reached`` on (never when None), 0.1 before."""
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump({"data": {"dataset": "digits"}, "stop": stop or {}}))
    rows = ["time,round,test_accuracy"]
    rows += [f"{10 * r},{r},{0.9 if reached is not None and r >= reached else 0.1}" for r in range(1, last + 1)]
    (path / "metrics.csv").write_text("\n".join(rows) + "\n")
    summary = {"status": status, "virtual_time_s": 10.0 * last, "rounds": last, "final_accuracy": 0.1}
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def study(tmp_path: Path) -> list[RunRecord]:
    """a: reached at round 4 (ran to 10), finished at round 10 without reaching, diverged at round 3 with
    stop.rounds 12.  b: reached at round 2 (ran to 8), finished at round 14 without reaching, diverged at
    round 5 with only stop.virtual_time_s: its round horizon is the median of 8 and 14, 11."""
    specs = {
        "a": [(4, 10, "finished", {"rounds": 10}), (None, 10, "finished", {"rounds": 10}),
              (None, 3, "diverged", {"rounds": 12})],
        "b": [(2, 8, "finished", {"virtual_time_s": 80}), (None, 14, "finished", {"virtual_time_s": 140}),
              (None, 5, "diverged", {"virtual_time_s": 140})],
    }  # fmt: skip
    return [
        RunRecord(variant, seed, run(tmp_path / variant / f"seed{seed}", *spec))
        for variant, runs in specs.items()
        for seed, spec in enumerate(runs)
    ]


def test_the_round_horizon_is_the_last_round_or_a_diverged_runs_planned_one(tmp_path):
    records = study(tmp_path)
    assert run_horizons(records, "round") == {"a": {0: 10, 1: 10, 2: 12}, "b": {0: 8, 1: 14, 2: 11}}
    # every run of c diverged, none declares stop.rounds: each is censored at its own last round
    alone = [RunRecord("c", s, run(tmp_path / f"c{s}", None, last, "diverged")) for s, last in enumerate((3, 6))]
    assert run_horizons(alone, "round") == {"c": {0: 3.0, 1: 6.0}}


def test_report_restricts_a_missed_rounds_count_at_the_horizon(tmp_path):
    """Restricted rounds a: 4, 10, 12, mean 26/3, reached 1; b: 2, 14, 11, mean 9, reached 1.  Paired a − b:
    +2, −4, +1, mean −1/3 = 26/3 − 9, and its t interval spans 0: "no difference" (before, only seed 0 had both
    reached: one pair, "too few seeds", beside means 4 and 2 over the seeds that reached it)."""
    write_report(tmp_path, study(tmp_path), "b", targets=[0.5])
    rows = {r["variant"]: r for r in read_csv(tmp_path / "report.csv") if r["measure"] == ROUNDS}
    a, b = rows["a"], rows["b"]
    assert (float(a["mean"]), a["n"], a["reached"]) == (pytest.approx(26 / 3), "3", "1")
    assert (float(b["mean"]), b["n"], b["reached"]) == (pytest.approx(9.0), "3", "1")
    assert (float(a["diff_mean"]), a["paired_seeds"], a["vs_baseline"]) == (pytest.approx(-1 / 3), "3", "no difference")
    assert float(a["mean"]) - float(b["mean"]) == pytest.approx(float(a["diff_mean"]))  # the columns subtract
    text = (tmp_path / "report.md").read_text()
    assert f"| a | {ROUNDS} | 3/3, reached 1 | 8.7 ± " in text
    assert "rounds to a target alike, a miss counting as the run's last round" in text


def test_a_rounds_verdict_counts_the_misses_at_the_horizon(tmp_path):
    """fast reaches 0.5 at round 2 on three seeds; slow at round 3 on two and never on the third (it ends at
    round 20).  Restricted differences fast − slow: −1, −1, −18, mean −20/3, sd √(289/3): the t interval
    (± 4.303 · 9.81 / √3 = ± 24.4) spans 0, "no difference".  Over the seeds both reached (−1, −1: no spread)
    the old verdict was "lower"."""
    records = [RunRecord("fast", s, run(tmp_path / "fast" / f"seed{s}", 2, 20)) for s in range(3)]
    records += [RunRecord("slow", s, run(tmp_path / "slow" / f"seed{s}", 3, 20)) for s in range(2)]
    records.append(RunRecord("slow", 2, run(tmp_path / "slow" / "seed2", None, 20)))
    write_report(tmp_path, records, "slow", targets=[0.5])
    (fast,) = [r for r in read_csv(tmp_path / "report.csv") if r["measure"] == ROUNDS and r["variant"] == "fast"]
    assert (float(fast["diff_mean"]), fast["vs_baseline"]) == (pytest.approx(-20 / 3), "no difference")


def test_time_to_target_rows_are_restricted_means_over_every_seed(tmp_path):
    """a's times: 40 s (round 4), its end 100 s, and the diverged run at the median end of the others, 100 s:
    mean 80; rounds 4, 10, 12: mean 26/3, std √(52/3).  b's diverged run has stop.virtual_time_s 140: times
    20, 140, 140, mean 100; rounds 2, 14, 11, mean 9.  Without horizons: the seeds that reached it."""
    records = study(tmp_path)
    horizons = {axis: run_horizons(records, axis) for axis in ("time", "round")}
    a, b = time_to_target_rows(records, [0.5], horizons)
    assert (a["reached"], a["seeds"], a["time_to_target_mean_s"]) == (1, 3, pytest.approx(80.0))
    assert (a["rounds_to_target_mean"], a["rounds_to_target_std"]) == pytest.approx((26 / 3, math.sqrt(52 / 3)))
    assert (b["time_to_target_mean_s"], b["rounds_to_target_mean"]) == pytest.approx((100.0, 9.0))
    (old, _) = time_to_target_rows(records, [0.5])
    assert (old["time_to_target_mean_s"], old["rounds_to_target_mean"]) == (40.0, 4.0)


def test_compare_writes_restricted_means_and_says_so(tmp_path):
    (tmp_path / "out").mkdir()
    write_comparison(tmp_path / "out", study(tmp_path), [0.5])
    rows = {r["variant"]: r for r in read_csv(tmp_path / "out" / "time_to_target.csv")}
    assert float(rows["a"]["time_to_target_mean_s"]) == pytest.approx(80.0) and rows["a"]["reached"] == "1"
    assert float(rows["a"]["rounds_to_target_mean"]) == pytest.approx(26 / 3)
    text = (tmp_path / "out" / "time_to_target.md").read_text()
    assert "mean ± std over every seed, a seed that never reached the target counting as its horizon" in text
    assert "| a | 0.5 | 1/3 | 80 ± 35 | 8.7 ± 4.2 |" in text
