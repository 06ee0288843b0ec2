"""Issue 47, item 6: report.md's descriptive table counts a time to a target a run never reached at the
run's horizon, as the claims do, so a variant's column is its restricted mean over every seed and the
columns subtract to the paired difference beside them."""

from __future__ import annotations

import pytest

from asyncfl.output.reading import read_csv
from asyncfl.study.report import write_report
from asyncfl.study.seed_statistics import RunRecord
from tests.study.test_report import ended_run

TIME = "time to 0.5 (virtual s)"


def test_a_missed_target_counts_at_the_horizon_in_the_variant_column(tmp_path):
    """a reaches 50 % at 20 s on seeds 0 and 1 and never on seed 2 (it ends at 80 s); b at 40 s on all three.
    a's restricted mean: (20 + 20 + 80) / 3 = 40 s (the reached seeds alone: 20 s), b's 40 s; the paired
    differences −20, −20, +40 average 0 = 40 − 40."""
    runs = [RunRecord("a", s, ended_run(tmp_path / "a" / f"seed{s}", [0.3, 0.6])) for s in (0, 1)]
    runs.append(RunRecord("a", 2, ended_run(tmp_path / "a" / "seed2", [0.3] * 8)))
    runs += [RunRecord("b", s, ended_run(tmp_path / "b" / f"seed{s}", [0.3, 0.3, 0.3, 0.6])) for s in range(3)]
    write_report(tmp_path, runs, "b", targets=[0.5])
    rows = {r["variant"]: r for r in read_csv(tmp_path / "report.csv") if r["measure"] == TIME}
    assert float(rows["a"]["mean"]) == pytest.approx(40.0) and rows["a"]["reached"] == "2"
    assert float(rows["b"]["mean"]) == pytest.approx(40.0) and rows["b"]["reached"] == "3"
    assert float(rows["a"]["diff_mean"]) == pytest.approx(0.0) and rows["a"]["paired_seeds"] == "3"
    text = (tmp_path / "report.md").read_text()
    assert f"| a | {TIME} | 3/3, reached 2 | 40.0 ± " in text
    assert "so its mean is the restricted mean time to target (RMST) over every seed" in text
