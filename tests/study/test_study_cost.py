"""The cost side of a study (asyncfl.study.cost): updates per virtual hour, lost compute and its share,
never-heard share, per run from hand-built run directories, then over seeds with paired verdicts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from asyncfl.output.reading import read_csv
from asyncfl.study import build_study
from asyncfl.study.compare import sweep_records
from asyncfl.study.cost import (
    LOST_COMPUTE,
    LOST_SHARE,
    NEVER_HEARD,
    UPDATES_PER_HOUR,
    cost_table,
    run_costs,
    write_costs,
)
from asyncfl.study.seed_statistics import RunRecord
from asyncfl.sweep.study_sweep import run_sweep

T_975_1 = 12.706204736174698  # Student t quantile 0.975 with 1 degree of freedom (tables: 12.706)


def fake_run(path: Path, virtual_s: float, updates: int, participations, compute, lost) -> Path:
    """A run directory with only what the cost side reads: summary.json, updates.csv, clients.csv."""
    path.mkdir(parents=True)
    (path / "summary.json").write_text(json.dumps({"status": "finished", "virtual_time_s": virtual_s}))
    (path / "updates.csv").write_text("version,client\n" + "".join(f"{i + 1},0\n" for i in range(updates)))
    rows = ["client,participations,compute_s,lost_compute_s"]
    rows += [f"{i},{p},{c},{x}" for i, (p, c, x) in enumerate(zip(participations, compute, lost))]
    (path / "clients.csv").write_text("\n".join(rows) + "\n")
    return path


RUNS = {  # variant -> seed -> (virtual s, aggregated updates, participations, compute_s, lost_compute_s)
    "base": {
        0: (1800, 30, [3, 0, 2, 0], [10, 20, 30, 40], [0, 20, 5, 0]),
        1: (3600, 50, [1, 1, 1, 0], [50, 50, 0, 0], [10, 0, 0, 0]),
    },
    "new": {
        0: (3600, 90, [1, 2, 3, 4], [25, 25, 25, 25], [0, 0, 0, 0]),
        1: (1800, 40, [0, 1, 1, 1], [10, 10, 10, 10], [2, 2, 0, 0]),
    },
}


def records(root: Path) -> list[RunRecord]:
    return [
        RunRecord(v, s, fake_run(root / v / f"seed{s}", *run)) for v, seeds in RUNS.items() for s, run in seeds.items()
    ]


def test_run_costs_by_hand(tmp_path):
    base0, base1, new0, new1 = (costs := [run_costs(r.path) for r in records(tmp_path)])
    assert len(costs) == 4
    # base seed 0: 30 updates in 1800 s = half an hour -> 60 per hour; lost 0 + 20 + 5 + 0 = 25 of 100 s
    # computed -> 0.25; clients 1 and 3 never delivered -> 2 / 4 = 0.5
    assert base0 == {UPDATES_PER_HOUR: 60.0, LOST_COMPUTE: 25.0, LOST_SHARE: 0.25, NEVER_HEARD: 0.5}
    # base seed 1: 50 in one hour; lost 10 of 100 s; client 3 never heard -> 0.25
    assert base1 == {UPDATES_PER_HOUR: 50.0, LOST_COMPUTE: 10.0, LOST_SHARE: 0.1, NEVER_HEARD: 0.25}
    assert new0 == {UPDATES_PER_HOUR: 90.0, LOST_COMPUTE: 0.0, LOST_SHARE: 0.0, NEVER_HEARD: 0.0}
    assert new1 == {UPDATES_PER_HOUR: 80.0, LOST_COMPUTE: 4.0, LOST_SHARE: 0.1, NEVER_HEARD: 0.25}


def test_a_run_without_the_columns_is_nan_not_zero(tmp_path):
    run = tmp_path / "old"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"virtual_time_s": 7200}))
    (run / "clients.csv").write_text("client,participations\n0,1\n1,0\n")  # before compute_s / lost_compute_s
    got = run_costs(run)
    assert math.isnan(got[UPDATES_PER_HOUR]) and math.isnan(got[LOST_COMPUTE]) and math.isnan(got[LOST_SHARE])
    assert got[NEVER_HEARD] == 0.5
    # nothing computed at all: the share of nothing is undefined, not 0
    fake_run(tmp_path / "idle", 3600, 0, [0, 0], [0, 0], [0, 0])
    idle = run_costs(tmp_path / "idle")
    assert idle[UPDATES_PER_HOUR] == 0.0 and idle[LOST_COMPUTE] == 0.0 and math.isnan(idle[LOST_SHARE])
    assert idle[NEVER_HEARD] == 1.0


def test_cost_files_over_seeds_with_paired_verdicts_by_hand(tmp_path):
    runs = records(tmp_path)
    assert cost_table(runs)["new"][UPDATES_PER_HOUR] == {0: 90.0, 1: 80.0}
    files = write_costs(tmp_path, runs, baseline="base")
    assert [f.name for f in files] == ["cost.csv", "cost.md"]
    rows = {(r["variant"], r["measure"]): r for r in read_csv(tmp_path / "cost.csv")}
    base = rows[("base", UPDATES_PER_HOUR)]  # 60, 50: mean 55, s = sqrt(50), half = t * s / sqrt(2) = 5 t
    assert float(base["mean"]) == 55.0
    assert float(base["ci_half_width"]) == pytest.approx(5 * T_975_1, rel=1e-5)
    assert base["vs_baseline"] == "baseline"
    new = rows[("new", UPDATES_PER_HOUR)]  # 90 - 60 = 30 and 80 - 50 = 30: +30 on both seeds, no spread
    assert float(new["diff_mean"]) == 30.0 and float(new["diff_ci_half_width"]) == 0.0
    assert new["vs_baseline"] == "higher" and new["paired_seeds"] == "2"
    share = rows[("new", LOST_SHARE)]  # 0 - 0.25 and 0.1 - 0.1: mean -0.125, s = 0.125 sqrt(2), half 0.125 t
    assert float(share["diff_mean"]) == pytest.approx(-0.125)
    assert float(share["diff_ci_half_width"]) == pytest.approx(0.125 * T_975_1, rel=1e-5)
    assert share["vs_baseline"] == "no difference"
    heard = rows[("new", NEVER_HEARD)]  # 0 - 0.5 and 0.25 - 0.25: mean -0.25
    assert float(heard["diff_mean"]) == pytest.approx(-0.25)
    md = (tmp_path / "cost.md").read_text()
    # new: 85 ± 5 t = 63.5 updates/h; lost 0, 4 s: 2 ± 2 t = 25.4; shares in %: 0, 10 -> 5.0 ± 0.05 t = 63.5;
    # never heard 0, 25 -> 12.5 ± 0.125 t = 158.8.  base: lost 25, 10 s -> 17.5 ± 7.5 t = 95.3 (printed 18 ± 95);
    # shares 25, 10 % -> 17.5 ± 0.075 t = 95.3; never heard 50, 25 % -> 37.5 ± 158.8
    assert "| variant | seeds | updates per virtual hour | lost compute (virtual s) | lost compute (%) |" in md
    assert "| new | 2 | 85 ± 64 | 2 ± 25 | 5.0 ± 63.5 | 12.5 ± 158.8 |" in md
    assert "| base | 2 | 55 ± 64 | 18 ± 95 | 17.5 ± 95.3 | 37.5 ± 158.8 |" in md


def test_costs_of_a_real_sweep_agree_with_its_other_files(tmp_path):
    """Invariants on real runs: updates per hour x hours = the summary's updates, the clients' lost compute
    adds up to rounds.csv's, shares lie in [0, 1]; a deadline cuts tasks, so something is lost."""
    study = build_study({
        "name": "cost", "seeds": [0, 1], "data": {"dataset": "digits", "clients": 12}, "model": {"name": "logreg"},
        "training": {"local_steps": 5}, "stop": {"virtual_time_s": 120, "rounds": 1000},
        "population": {"compute": {"samples_per_s": {"dist": "lognormal", "median": 40, "sigma": 1.0}},
                       "availability": {"kind": "markov", "p": 0.6, "mean_cycle_s": 60}},
        "server": {"mode": "sync", "clients_per_round": 4, "deadline_s": 2.5},
        "checkpoint": {"every_rounds": None}, "output": {"plot": False, "dir": str(tmp_path / "runs")},
        "compare": [{"name": "deadline"}],
    })  # fmt: skip
    result = run_sweep(study, quiet=True)
    runs = sweep_records(result.sweep_dir)
    assert len(runs) == 2
    for run in runs:
        got = run_costs(run.path)
        summary = json.loads((run.path / "summary.json").read_text())
        assert got[UPDATES_PER_HOUR] * summary["virtual_time_s"] / 3600 == pytest.approx(summary["updates"])
        rounds_lost = sum(float(r["lost_compute_s"]) for r in read_csv(run.path / "rounds.csv"))
        assert got[LOST_COMPUTE] == pytest.approx(rounds_lost, rel=1e-6) and got[LOST_COMPUTE] > 0
        assert 0 < got[LOST_SHARE] < 1 and 0 <= got[NEVER_HEARD] <= 1
