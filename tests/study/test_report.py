"""The study report: t intervals, paired differences by seed, the baseline: key and the report command."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from asyncfl.cli import main
from asyncfl.config import ConfigError
from asyncfl.output.lock import writing
from asyncfl.output.reading import read_csv
from asyncfl.study import build_study
from asyncfl.study.claims import Claim
from asyncfl.study.compare import write_comparison
from asyncfl.study.report import (
    direction,
    one_sided_misses,
    paired_difference,
    report_rows,
    t_interval,
    write_report,
)
from asyncfl.study.seed_statistics import RunRecord, tail_accuracy
from asyncfl.study.spec import load_study
from asyncfl.sweep.study_sweep import run_sweep

T_975_2 = 4.302652729749462  # Student t quantile 0.975 with 2 degrees of freedom (tables: 4.303)
T_975_3 = 3.1824463052837078  # ... with 3 degrees of freedom (tables: 3.182)


def test_t_interval_by_hand():
    got = t_interval([1.0, 2.0, 3.0])  # mean 2, sample std 1
    assert got.n == 3 and got.mean == 2.0
    assert got.half_width == pytest.approx(T_975_2 / math.sqrt(3), rel=1e-9)
    four = t_interval([0.2, 0.4, 0.4, 0.6, math.nan])  # NaN ignored; mean 0.4, s = sqrt(0.08 / 3)
    assert four.n == 4 and four.mean == pytest.approx(0.4)
    assert four.half_width == pytest.approx(T_975_3 * math.sqrt(0.08 / 3) / 2, rel=1e-9)
    one = t_interval([0.7])
    assert one.n == 1 and one.mean == 0.7 and math.isnan(one.half_width)
    assert t_interval([]).n == 0 and math.isnan(t_interval([]).mean)


def test_paired_difference_uses_only_common_seeds():
    variant = {0: 0.5, 1: 0.7, 2: 0.6, 3: 0.9}  # seed 3 has no baseline, seed 4 no variant value
    baseline = {0: 0.4, 1: 0.5, 2: 0.6, 4: 0.1}
    diff = paired_difference(variant, baseline)  # differences 0.1, 0.2, 0.0
    assert diff.n == 3 and diff.mean == pytest.approx(0.1)
    assert diff.half_width == pytest.approx(T_975_2 * 0.1 / math.sqrt(3), rel=1e-9)
    assert direction(diff) == "no difference"  # 0.1 ± 0.248 straddles 0
    # Paired by seed, a small consistent gain is "higher" although the unpaired intervals overlap widely.
    base = {s: 0.5 + 0.1 * s for s in range(5)}
    better = {s: v + 0.01 + 0.001 * (s % 2) for s, v in base.items()}
    assert direction(paired_difference(better, base)) == "higher"
    assert t_interval(list(better.values())).low < t_interval(list(base.values())).high
    assert direction(paired_difference(base, better)) == "lower"
    assert direction(paired_difference({0: 1.0}, {0: 0.0})) == "too few seeds"


def fake_run(path: Path, accuracies: list[float]) -> Path:
    """A run evaluated at virtual times 0, 10, 20, ...; final accuracy = the last one."""
    path.mkdir(parents=True)
    rows = ["time,round,test_accuracy"] + [f"{10 * i},{i},{a}" for i, a in enumerate(accuracies)]
    (path / "metrics.csv").write_text("\n".join(rows) + "\n")
    summary = {"status": "finished", "final_accuracy": accuracies[-1], "best_accuracy": max(accuracies)}
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def test_report_rows_and_files_by_hand(tmp_path):
    runs = {  # variant -> seed -> evaluated accuracies at t = 0, 10, 20, 30, 40
        "base": {0: [0.1, 0.2, 0.3, 0.4, 0.5], 1: [0.1, 0.3, 0.4, 0.5, 0.6], 2: [0.1, 0.2, 0.3, 0.5, 0.7]},
        "new": {0: [0.1, 0.4, 0.5, 0.6, 0.6], 1: [0.1, 0.5, 0.6, 0.7, 0.7], 2: [0.1, 0.3, 0.6, 0.8, 0.8]},
    }
    records = [
        RunRecord(v, s, fake_run(tmp_path / v / f"seed{s}", acc))
        for v, seeds in runs.items()
        for s, acc in seeds.items()
    ]
    # last quarter of a run ending at t = 40: evaluations at t >= 30
    assert tail_accuracy(records[0].path) == pytest.approx(0.45)
    files = write_report(tmp_path, records, "base", targets=[0.6])
    assert [f.name for f in files] == ["report.csv", "report.md"]
    rows = {(r["variant"], r["measure"]): r for r in read_csv(tmp_path / "report.csv")}
    final = rows[("new", "final accuracy")]  # new 0.6, 0.7, 0.8 vs base 0.5, 0.6, 0.7: +0.1 every seed
    assert float(final["mean"]) == pytest.approx(0.7)
    assert float(final["ci_half_width"]) == pytest.approx(T_975_2 * 0.1 / math.sqrt(3), rel=1e-5)
    assert float(final["diff_mean"]) == pytest.approx(0.1)
    assert float(final["diff_ci_half_width"]) == pytest.approx(0, abs=1e-6)
    assert final["vs_baseline"] == "higher" and final["paired_seeds"] == "3"
    tail = rows[("new", "last-quarter accuracy")]  # new: 0.6, 0.7, 0.8; base: 0.45, 0.55, 0.6
    assert float(tail["diff_mean"]) == pytest.approx((0.15 + 0.15 + 0.2) / 3, abs=1e-6)
    time_new = rows[("new", "time to 0.6 (virtual s)")]  # new reaches 0.6 at 30, 20, 20; base at -, 40, 40
    assert time_new["n"] == "3" and float(time_new["mean"]) == pytest.approx(70 / 3, abs=1e-6)
    assert time_new["paired_seeds"] == "2" and float(time_new["diff_mean"]) == pytest.approx(-20)
    assert rows[("base", "time to 0.6 (virtual s)")]["n"] == "2"
    assert rows[("base", "final accuracy")]["vs_baseline"] == "baseline"
    md = (tmp_path / "report.md").read_text()
    assert "| new | final accuracy (%) | 3/3 | 70.0 ± 24.8 | +10.0 ± 0.0 | 3 | higher |" in md
    with pytest.raises(ConfigError, match="baseline: 'nope' is not a variant"):
        report_rows({"a": {}}, "nope")


def tiny_study(tmp_path: Path, **extra) -> dict:
    return {
        "name": "tiny", "seeds": [0, 1], "data": {"dataset": "digits", "clients": 4}, "model": {"name": "logreg"},
        "training": {"local_steps": 2}, "stop": {"rounds": 2}, "checkpoint": {"every_rounds": None},
        "output": {"plot": False, "events": "none", "dir": str(tmp_path / "runs")},
        "compare": [{"name": "plain"}, {"name": "fast", "set": {"training.lr": 0.2}}], **extra,
    }  # fmt: skip


def test_baseline_must_name_a_variant(tmp_path):
    with pytest.raises(ConfigError) as err:
        build_study(tiny_study(tmp_path, baseline="fedbuff"), source="s.yaml")
    assert "baseline: must name one of the compare: variants (plain, fast); got 'fedbuff'" in str(err.value)
    assert build_study(tiny_study(tmp_path, baseline="fast")).baseline == "fast"
    assert build_study(tiny_study(tmp_path)).baseline is None


@pytest.mark.slow
def test_sweep_writes_the_report_and_the_command_rewrites_it(tmp_path, capsys):
    result = run_sweep(build_study(tiny_study(tmp_path, baseline="plain")), quiet=True)
    rows = read_csv(result.sweep_dir / "report.csv")
    fast = next(r for r in rows if r["variant"] == "fast" and r["measure"] == "final accuracy")
    finals = {
        v: {s: json.loads((result.sweep_dir / v / f"seed{s}" / "summary.json").read_text())["final_accuracy"]
            for s in (0, 1)}
        for v in ("plain", "fast")
    }  # fmt: skip
    assert fast["baseline"] == "plain" and fast["paired_seeds"] == "2"
    expected = sum(finals["fast"][s] - finals["plain"][s] for s in (0, 1)) / 2
    assert float(fast["diff_mean"]) == pytest.approx(expected, abs=1e-6)
    cli = [sys.executable, "-m", "asyncfl", "report", str(result.sweep_dir)]
    bad = subprocess.run([*cli, "--baseline", "nope"], capture_output=True, text=True)  # the command's process
    assert bad.returncode == 2 and "--baseline: 'nope' is not a variant" in bad.stderr
    assert "Traceback" not in bad.stderr
    capsys.readouterr()
    assert main(["report", str(result.sweep_dir), "--baseline", "fast"]) == 0  # the same command, in this process
    assert "paired difference vs fast" in capsys.readouterr().out
    assert main(["report", str(tmp_path)]) == 2 and "not a sweep directory" in capsys.readouterr().err


def _reproduce_papers():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "experiments" / "reproduce_papers.py"
    spec = importlib.util.spec_from_file_location("reproduce_papers", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_one_sided_misses_make_a_time_comparison_mixed():
    # sooner on the 3 seeds both reached, but seed 3 only the other reached
    fast, slow = {0: 5.0, 1: 6.0, 2: 5.5, 3: math.nan}, {0: 7.0, 1: 8.0, 2: 7.4, 3: 9.0}
    assert one_sided_misses(fast, slow) == (1, 0)
    assert direction(paired_difference(fast, slow), one_sided_misses(fast, slow)) == "mixed"
    assert direction(paired_difference(fast, slow)) == "lower"


def test_paper_runs_cut_at_half_their_horizon(tmp_path):
    rp = _reproduce_papers()
    # evaluations at virtual 10, 20, ..., 80 s: the cut at half the horizon keeps 10-40 s
    rows = ["round,time,test_accuracy,accuracy_class_9"]
    rows += [
        f"{i},{10.0 * i},{a},{c}"
        for i, (a, c) in enumerate(
            zip([0.1, 0.2, 0.3, 0.5, 0.6, 0.6, 0.7, 0.7], [0.0, 0.0, 0.1, 0.3, 0.4, 0.4, 0.5, 0.5]), start=1
        )
    ]
    (tmp_path / "metrics.csv").write_text("\n".join(rows) + "\n")
    cut, at = rp.cut_measures(tmp_path, [0.3, 0.6], 0.5, ["accuracy_class_9"])
    assert at == 40.0 and cut["final accuracy"] == 0.5  # the evaluation at 40 s
    assert cut["last-quarter accuracy"] == pytest.approx((0.3 + 0.5) / 2)  # x >= 0.75 x 40 = 30 s: 30 and 40 s
    assert cut["time to 0.3 (virtual s)"] == 30.0 and math.isnan(cut["time to 0.6 (virtual s)"])
    assert cut["last-quarter accuracy_class_9"] == pytest.approx((0.1 + 0.3) / 2)
    whole, at = rp.cut_measures(tmp_path, [0.6], 1.0)
    assert at == 80.0
    assert whole["final accuracy"] == 0.7 and whole["time to 0.6 (virtual s)"] == 50.0
    assert whole["last-quarter accuracy"] == pytest.approx((0.6 + 0.7 + 0.7) / 3)  # x >= 60 s


def test_a_diverged_run_is_cut_at_half_the_horizon_it_was_given(tmp_path):
    """A run given 80 s that diverged at 40 s (its last evaluation, 0.1: the broken model) is cut at 40 s, half of
    80, not at 20 s, half of its own end: broken there, its final and last-quarter accuracy are both 0.1 (as at
    its end), and 0.6, reached at 30 s before it broke, still counts.  One that diverged at 60 s is cut at 40 s
    like a run that did not.  Without stop.virtual_time_s (a study stopped by rounds) the horizon is the median
    of the same variant's runs that did not diverge."""
    rp = _reproduce_papers()

    def diverged(path: Path, accuracies: list[float], limit: float | None) -> Path:
        ended_run(path, accuracies)
        summary = json.loads((path / "summary.json").read_text())
        (path / "summary.json").write_text(json.dumps({**summary, "status": "diverged"}))
        (path / "config.yaml").write_text(yaml.safe_dump({"stop": {"virtual_time_s": limit, "rounds": None}}))
        return path

    early = diverged(tmp_path / "early", [0.3, 0.5, 0.6, 0.1], 80.0)
    assert rp.planned_horizon(early, []) == 80.0
    cut, at = rp.cut_measures(early, [0.6], 0.5, [], horizon=80.0)
    assert at == 40.0 and cut["final accuracy"] == 0.1 and cut["last-quarter accuracy"] == 0.1
    assert cut["time to 0.6 (virtual s)"] == 30.0
    own, at = rp.cut_measures(early, [0.6], 0.5)  # what the cut was before: half its own end, a healthy model
    assert at == 20.0 and own["final accuracy"] == 0.5
    late = diverged(tmp_path / "late", [0.3, 0.5, 0.6, 0.6, 0.7, 0.1], 80.0)
    cut, at = rp.cut_measures(late, [0.6], 0.5, [], horizon=rp.planned_horizon(late, []))
    assert at == 40.0 and cut["final accuracy"] == 0.6 and cut["last-quarter accuracy"] == pytest.approx(0.6)
    by_rounds = diverged(tmp_path / "rounds", [0.3, 0.1], None)
    assert rp.planned_horizon(by_rounds, [80.0, 90.0, 80.0]) == 80.0 and rp.planned_horizon(by_rounds, []) is None
    assert rp.planned_horizon(ended_run(tmp_path / "fine", [0.5]), [80.0]) is None  # did not diverge
    records = [RunRecord("a", 0, early), RunRecord("a", 1, ended_run(tmp_path / "a1", [0.5] * 8))]
    table, cuts = rp.cut_table(records, [0.6], 0.5, [], {"a": {0: 40.0, 1: 80.0}})
    assert cuts == {"a": {0: 40.0, 1: 40.0}} and table["a"]["final accuracy"] == {0: 0.1, 1: 0.5}


def test_every_follow_up_tests_its_studys_claims_on_seeds_never_run_before():
    """A follow-up (ours) reruns a published study with overrides: the same claims, tested on evaluation seeds
    that neither the study nor its tuning used, as many as the study's; its command names every override."""
    rp = _reproduce_papers()
    for name, (study, overrides) in rp.FOLLOWUPS.items():
        assert study in rp.STUDIES, name
        main, followup = load_study(rp.study_file(study)), load_study(rp.study_file(study), list(overrides))
        assert followup.claims == main.claims, name
        assert not set(followup.seeds) & (set(main.seeds) | set(main.tuning.spec.seeds)), name
        assert len(followup.seeds) >= len(main.seeds), name
        assert followup.tuning.spec.seeds == main.tuning.spec.seeds, name  # tuned as the study was
        command = rp.followup_command(name)
        assert command.startswith(f"python -m asyncfl scenarios/papers/{study}.yaml --executor ray --set ")
        assert all(o in command for o in overrides[:-1]) and command.endswith(f"--out runs/papers_followups/{name}")
    # the retired follow-up's rule (issue 47) is every paper study's own now
    for study in rp.STUDIES:
        spec = load_study(rp.study_file(study)).tuning.spec
        assert (spec.divergence_margin, spec.collapse_accuracy) == (1, 0.15), study


def test_every_paper_study_declares_claims_and_tunes_on_other_seeds():
    rp = _reproduce_papers()
    for name in rp.STUDIES:
        raw = yaml.safe_load(rp.study_file(name).read_text())
        study = load_study(rp.study_file(name))
        assert study.claims, f"{name}: no claims: declared"
        assert study.tuning is not None, f"{name}: no tune: block"
        assert not set(study.tuning.spec.seeds) & set(study.seeds), name
        assert len(study.seeds) >= (15 if name.startswith("fedhist") else 10), name
        assert raw.get("claims") and rp.paper_of(name) in rp.PAPERS


def test_the_paper_table_shows_the_verdict_across_a_sensitivity_axis():
    """A claim tested at two staleness models on 6 seeds (across_axis: each), +1 .. +6 points at x (raw p
    1/64) and 0 at y: one Holm family of 2, so x is supported at 2/64 and y inconclusive.  The paper's table
    shows the Holm p in both directions with the declared family (here the default: the study) and its size,
    the study-wide Holm p, the verdict across the axis, and links the per-seed pairs; a claim without an axis
    shows no such column."""
    from asyncfl.study.claim_tests import claim_rows
    from asyncfl.study.claims import Claim

    rp = _reproduce_papers()
    base = {s: 0.5 for s in range(6)}
    table = {"b.x": {"final accuracy": base}, "b.y": {"final accuracy": base},
             "a.x": {"final accuracy": {s: 0.5 + 0.01 * (s + 1) for s in range(6)}},
             "a.y": {"final accuracy": base}}  # fmt: skip
    claims = [Claim(variant=f"a.{v}", versus=f"b.{v}", measure="final_accuracy", direction="higher",
                    axis="staleness_model", axis_value=v, across_axis="each") for v in ("x", "y")]  # fmt: skip
    rows = claim_rows(claims, table)
    text = rp.claim_table([("s", c, r, r, table) for c, r in zip(claims, rows)])
    header, _, at_x, at_y = text.splitlines()
    assert "| Holm p (other side; declared family (tests)) | verdict (declared family) | study-wide Holm p: verdict |" \
        in header  # fmt: skip
    assert "| 0.0312 (1.0000; study (2, default: the study)) | **supported** | 0.0312: supported | differs by " \
        "staleness_model value (x: supported; y: inconclusive; dependence not tested) |" in at_x  # fmt: skip
    assert "| +3.50 [+2.00, +5.00] |" in at_x  # mean of 1..6; bounds: the 3rd smallest (1, 1.5, 2) and
    # largest (6, 5.5, 5) of the subset means, since 3 of the 64 sign patterns is the most a 5 % side allows
    assert "| 1.0000 (1.0000; study (2, default: the study)) | **inconclusive** | 1.0000: inconclusive |" in at_y
    assert at_x.endswith("| — (ours) | — | same | [pairs](../results/papers/s/claims_seeds.md) |")
    plain = claim_rows([Claim(variant="a.x", versus="b.x", measure="final_accuracy", direction="higher")], table)
    assert "verdict across the axis" not in rp.claim_table([("s", claims[0], plain[0], plain[0], table)])


def ended_run(path: Path, accuracies: list[float]) -> Path:
    """A finished run evaluated at virtual 10, 20, ... s that ended at its last evaluation."""
    path.mkdir(parents=True)
    rows = ["time,round,test_accuracy"] + [f"{10 * i},{i},{a}" for i, a in enumerate(accuracies, start=1)]
    (path / "metrics.csv").write_text("\n".join(rows) + "\n")
    summary = {"status": "finished", "final_accuracy": accuracies[-1], "virtual_time_s": 10.0 * len(accuracies)}
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def test_the_paper_tables_keep_a_miss_censored_at_the_cut_and_at_the_end(tmp_path):
    """fast reaches 0.6 at 20 s on 6 seeds; slow never does in its 80 s.  Cut at half the horizon (40 s)
    slow's miss counts as 40 s: 6 pairs of 20 − 40 = −20 s, raw p 1/64, supported, reached 6/6 against 0/6.
    At the full horizon slow's miss counts as its end, 80 s: −60 s.  Dropping the misses (what the paper tables
    did before) left no pair to test at all."""
    from asyncfl.study.claim_tests import claim_rows
    from asyncfl.study.claims import Claim
    from asyncfl.study.report import measure_table, run_ends

    rp = _reproduce_papers()
    curves = {"fast": [0.3, 0.6, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7], "slow": [0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.5, 0.5]}
    records = [RunRecord(v, s, ended_run(tmp_path / v / f"seed{s}", c)) for v, c in curves.items() for s in range(6)]
    claim = Claim(variant="fast", versus="slow", measure="time_to:0.6", direction="lower")
    ends = run_ends(records)
    half_table, cuts = rp.cut_table(records, [0.6], 0.5, [], ends)
    assert cuts == {"fast": dict.fromkeys(range(6), 40.0), "slow": dict.fromkeys(range(6), 40.0)}
    (half,) = claim_rows([claim], half_table, cuts)
    assert (half["pairs"], half["diff_mean"], half["p_sign_flip"], half["verdict"]) == (6, -20.0, 1 / 64, "supported")
    assert (half["variant_reached"], half["versus_reached"]) == ("6/6", "0/6")
    (full,) = claim_rows([claim], measure_table(records, [0.6]), ends)
    assert (full["pairs"], full["diff_mean"], full["verdict"]) == (6, -60.0, "supported")
    assert claim_rows([claim], half_table)[0]["pairs"] == 0  # without the cuts: nothing to test
    text = rp.claim_table([("s", claim, full, half, measure_table(records, [0.6]))])
    assert "| 6 (reached 6/6, 0/6) |" in text and "slow 80.0 ± 0.0 (RMST; reached on 0 of 6)" in text
    assert "fast 20.0 ± 0.0 (RMST; reached on 6 of 6)" in text  # 20 − 80 = −60: the cells subtract


@pytest.mark.slow
def test_a_study_reads_trace_files_relative_to_its_own_folder(tmp_path, monkeypatch):
    folder = tmp_path / "studies"
    folder.mkdir()
    rows = ["client,samples_per_s,uplink_mbps,downlink_mbps,latency_s"] + [f"{c},50,10,10,0.1" for c in range(4)]
    (folder / "devices.csv").write_text("\n".join(rows) + "\n")
    raw = tiny_study(tmp_path, population={"device_trace": "devices.csv"})
    (folder / "study.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.chdir(tmp_path)  # not the study's folder: a path relative to the working directory would fail
    study = load_study(folder / "study.yaml")
    assert {r.scenario.population.device_trace for r in study.runs} == {folder / "devices.csv"}
    assert main([str(folder / "study.yaml"), "--set", "seeds=[0]", "--quiet"]) == 0  # the command, in this process


def hand_records(tmp_path: Path, runs: dict[str, dict[int, list[float]]]) -> list[RunRecord]:
    return [
        RunRecord(v, s, fake_run(tmp_path / v / f"seed{s}", acc))
        for v, seeds in runs.items()
        for s, acc in seeds.items()
    ]


def test_a_target_only_one_side_reached_says_so(tmp_path):
    runs = {  # "new" reaches 0.6 on every seed, "base" on none; nobody reaches 0.95
        "base": {0: [0.1, 0.3, 0.5], 1: [0.1, 0.2, 0.4], 2: [0.2, 0.3, 0.5]},
        "new": {0: [0.1, 0.6, 0.7], 1: [0.2, 0.7, 0.8], 2: [0.1, 0.5, 0.6]},
        "once": {0: [0.1, 0.6, 0.7], 1: [0.1, 0.2, 0.3], 2: [0.1, 0.2, 0.3]},  # one seed only
    }
    records = hand_records(tmp_path, runs)
    write_report(tmp_path, records, "base", targets=[0.6, 0.95])
    rows = {(r["variant"], r["measure"]): r for r in read_csv(tmp_path / "report.csv")}
    for measure in ("time to 0.6 (virtual s)", "rounds to 0.6"):
        assert rows[("new", measure)]["paired_seeds"] == "0"
        assert rows[("new", measure)]["vs_baseline"] == "only this variant reached it"
        assert rows[("once", measure)]["vs_baseline"] == "only this variant reached it"
        assert rows[("new", measure.replace("0.6", "0.95"))]["vs_baseline"] == "neither reached it"
    md = (tmp_path / "report.md").read_text()
    assert "| new | time to 0.6 (virtual s) | 3/3, reached 3 | 13.3 ± 14.3 | — | 0 | only this variant reached " \
        "it |" in md  # fmt: skip
    assert "too few seeds" not in md  # three seeds each: never too few here
    write_report(tmp_path, records, "new", targets=[0.6])  # the other way round
    rows = {(r["variant"], r["measure"]): r for r in read_csv(tmp_path / "report.csv")}
    assert rows[("base", "time to 0.6 (virtual s)")]["vs_baseline"] == "only the baseline reached it"
    # "once" and "new" both reached 0.6 on seed 0 only: one pair is too few for an interval
    assert rows[("once", "time to 0.6 (virtual s)")]["paired_seeds"] == "1"
    assert rows[("once", "time to 0.6 (virtual s)")]["vs_baseline"] == "too few seeds"


def test_one_seed_prints_no_spread_rather_than_zero(tmp_path):
    records = hand_records(tmp_path, {"base": {0: [0.1, 0.5, 0.7]}, "new": {0: [0.2, 0.6, 0.9]}})
    write_report(tmp_path, records, "base", targets=[0.6])
    md = (tmp_path / "report.md").read_text()
    assert "| new | final accuracy (%) | 1/1 | 90.0 ± n/a | +20.0 ± n/a | 1 | too few seeds |" in md
    write_comparison(tmp_path, records, targets=[0.6])
    ttt = (tmp_path / "time_to_target.md").read_text()
    assert "± 0" not in ttt
    assert "| new | 0.6 | 1/1 | 10 ± n/a | 1.0 ± n/a | 90.0 ± n/a | 90.0 ± n/a |" in ttt
    row = next(r for r in read_csv(tmp_path / "time_to_target.csv") if r["variant"] == "new")
    assert row["final_accuracy_std"] == "" and row["time_to_target_std_s"] == ""


def test_report_without_a_baseline_promises_no_verdict(tmp_path):
    records = hand_records(tmp_path, {"a": {0: [0.1, 0.5], 1: [0.2, 0.6]}, "b": {0: [0.3, 0.4], 1: [0.2, 0.5]}})
    write_report(tmp_path, records, None)
    md = (tmp_path / "report.md").read_text()
    header = md.splitlines()[2]
    assert "verdict" not in header and "verdict" not in md.split("No baseline")[0]
    assert "No baseline" in md


def test_a_paper_study_is_tabled_only_when_complete_and_nobody_writes_it(tmp_path, monkeypatch):
    """An FL-FDMS study plans 4 variants x 10 seeds: a sweep with none of them ended is left out with how many
    have, and one whose sweep another writer holds says so; FedHist's fairness studies have their own section."""
    rp = _reproduce_papers()
    monkeypatch.setattr(rp, "RUNS", tmp_path)
    monkeypatch.setattr(rp, "RESULTS", tmp_path / "results")  # no published archive to fall back on
    assert rp.complete_records("fl_fdms_mnist1d_a03") == (
        [],
        f"not run yet (no study.yaml in {tmp_path / 'fl_fdms_mnist1d_a03'}, no published runs.tar.xz of this "
        "study file)",
    )
    sweep = tmp_path / "fl_fdms_mnist1d_a03"
    sweep.mkdir()
    (sweep / "study.yaml").write_text(rp.study_file("fl_fdms_mnist1d_a03").read_text())
    assert rp.complete_records("fl_fdms_mnist1d_a03") == ([], "0 of its 80 evaluation runs have ended")
    with writing(sweep, "sweep"):
        records, why = rp.complete_records("fl_fdms_mnist1d_a03")
    assert records == [] and why.startswith("0 of its 80 evaluation runs have ended; PID ") and "still running" in why
    studies = ("fedhist_nk10_mnist1d", "fedhist_fairness_nk25_study", "fl_fdms_mnist1d_a05")
    assert [rp.section_of(s) for s in studies] == ["fedhist", "fedhist_fairness", "fl_fdms"]


def test_a_paper_study_archive_holds_what_the_tables_read_and_restores_them(tmp_path, monkeypatch, capsys):
    """archive_study keeps the files the tables read (not the event logs, not the tuning runs' curves, not the
    metrics rows without an evaluation), the same bytes twice; where runs/papers/<study> is gone, sweep_dir_of
    unpacks it and the tables read the same measures; an archive of an older study file is not used."""
    from asyncfl.study.report import measure_table, run_ends

    rp = _reproduce_papers()
    runs, results = tmp_path / "runs", tmp_path / "results"
    monkeypatch.setattr(rp, "RUNS", runs)
    monkeypatch.setattr(rp, "RESULTS", results)
    study = tmp_path / "s.yaml"
    study.write_text("name: s\nseeds: [0, 1]\n")
    monkeypatch.setattr(rp, "study_file", lambda name: study)
    sweep = runs / "s"
    sweep.mkdir(parents=True)
    (sweep / "study.yaml").write_text("name: s\nseeds:\n- 0\n- 1\n")  # the sweep's copy: same content
    (sweep / "tuned.yaml").write_text("chosen: {}\n")
    records = [RunRecord(v, s, ended_run(sweep / v / f"seed{s}", [0.1 * s, 0.5, 0.6])) for v in "ab" for s in (0, 1)]
    (records[0].path / "timeline_tasks.csv").write_text("an event log\n")
    evaluated = (records[1].path / "metrics.csv").read_text()
    lines = evaluated.splitlines(keepends=True)  # aggregations between evaluations, as a K-async run writes
    (records[1].path / "metrics.csv").write_text("".join([*lines[:2], "12,2,\n", *lines[2:], "31,4,\n"]))
    ended_run(sweep / "tuning" / "a" / "lr0.1" / "seed100", [0.2])
    archive = results / "s" / "runs.tar.xz"
    archive.parent.mkdir(parents=True)
    rp.archive_study(sweep, records, archive)
    first = archive.read_bytes()
    os.utime(records[0].path / "metrics.csv", (1, 1))  # another time stamp, same content: same archive
    rp.archive_study(sweep, records, archive)
    assert archive.read_bytes() == first
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        archived_metrics = tar.extractfile("a/seed1/metrics.csv").read().decode()
    assert archived_metrics == evaluated  # the evaluation rows only
    assert "a/seed0/metrics.csv" in names and "a/seed0/summary.json" in names and "tuned.yaml" in names
    assert "a/seed0/timeline_tasks.csv" not in names  # the event logs stay out
    assert "tuning/a/lr0.1/seed100/summary.json" in names and "tuning/a/lr0.1/seed100/metrics.csv" not in names
    before = repr((measure_table(records, [0.5]), run_ends(records)))  # repr: NaN (no best accuracy) == NaN
    shutil.rmtree(sweep)
    restored = rp.sweep_dir_of("s")
    assert restored != sweep and (restored / "tuned.yaml").read_text() == "chosen: {}\n"
    again = [RunRecord(r.label, r.seed, restored / r.label / f"seed{r.seed}") for r in records]
    assert repr((measure_table(again, [0.5]), run_ends(again))) == before
    rp._restored.clear()
    study.write_text("name: s\nseeds: [0, 1, 2]\n")  # the study file changed since: the archive is stale
    assert rp.sweep_dir_of("s") == sweep
    assert "its published runs.tar.xz holds runs of an older s.yaml; not used" in capsys.readouterr().out


def test_the_tuning_table_reads_each_studys_published_choice(tmp_path, monkeypatch):
    """The tuning table is built from docs/results/papers/<study>/tuned.yaml (no runs needed): the grid with the
    values widening added, the rule beside the criterion, and a study never tabled says so."""
    rp = _reproduce_papers()
    monkeypatch.setattr(rp, "RESULTS", tmp_path)
    study = tmp_path / "s.yaml"
    study.write_text("seeds: [0, 1]\n")
    monkeypatch.setattr(rp, "study_file", lambda name: study)
    (tmp_path / "s").mkdir()
    record = {"criterion": "last_quarter_accuracy", "seeds": [100, 101], "grid": {"training.lr": [0.1, 0.2]},
              "chosen": {"a": {"training.lr": 0.4}}, "untuned": ["b"], "rule": "mean_minus_se",
              "widened": [{"variant": "a", "key": "training.lr", "edge": 0.2, "value": 0.4, "round": 1}]}  # fmt: skip
    (tmp_path / "s" / "tuned.yaml").write_text(yaml.safe_dump(record))
    header, _, row, missing = rp.tuning_table(["s", "never"]).splitlines()
    columns = "study | tuned on seeds | evaluated on seeds | grid | criterion | chosen | near ties (advantage ± SE)"
    assert header == f"| {columns} |"
    assert row == (
        "| s | 100, 101 | 0, 1 | `training.lr` ∈ [0.1, 0.2]; widened: a lr 0.4 | last_quarter_accuracy (mean_minus_se) "
        "| a: lr 0.4; not tuned: b | none |"
    )
    # lr 0.4 over lr 0.2 per seed: +0.02, -0.01, mean 0.005, SE |0.02 - (-0.01)| / 2 = 0.015: a near tie
    (tmp_path / "s" / "tuning.csv").write_text(
        "variant,point,training.lr,seed100,seed101,mean,score,chosen\n"
        "a,lr0.2,0.2,0.50,0.52,0.51,0.50,False\na,lr0.4,0.4,0.52,0.51,0.515,0.51,True\n"
        "a,lr0.1,0.1,0.30,0.30,0.30,0.30,False\n"
    )
    assert rp.tuning_table(["s"]).splitlines()[2].endswith("| a: lr 0.4 over lr 0.2 (+0.005 ± 0.015) |")
    assert missing.startswith("| never | — |")


def test_the_compute_table_names_each_studys_cpus_and_its_load(tmp_path):
    """Studies are rerun over sessions and machines: the compute row sums the runs' real seconds and lists the CPUs
    their summary.json name (a run from before summary.json recorded one says so), and a study's load is its own,
    marked busy above the per-core threshold."""
    rp = _reproduce_papers()
    records = [RunRecord("a", s, ended_run(tmp_path / "a" / f"seed{s}", [0.5])) for s in (0, 1)]
    tuning = ended_run(tmp_path / "tuning" / "a" / "lr0.1" / "seed100", [0.4])
    for path, seconds, cpu in ((records[0].path, 3.0, "AMD EPYC"), (tuning, 5.5, "Intel Xeon")):
        summary = json.loads((path / "summary.json").read_text())
        summary |= {"real_seconds": seconds, "machine": {"cpu": cpu}}
        (path / "summary.json").write_text(json.dumps(summary))
    runs, total, longest, cpus = rp.run_seconds(records, tmp_path)
    assert (runs, total, longest) == (3, 8.5, 5.5)
    assert cpus == {"AMD EPYC", "Intel Xeon", "not recorded"}
    quiet, busy = ({"load_1min": f"{x:.2f}", "cores": "2", "forced": f} for x, f in ((0.52, "false"), (1.5, "true")))
    assert [rp._load(x) for x in (quiet, busy, None)] == ["0.26", "0.75 (busy)", "not recorded"]
    assert rp._seconds(3725.4, 2) == "3,725 (2 commands)"  # a study run over two commands: their sum
    assert rp._seconds(1234.4) == "1,234" and rp._seconds(math.nan) == "— (not recorded)"


def test_a_section_table_takes_a_complete_studys_rows_and_keeps_the_others_published(tmp_path):
    """Studies a and b share a section; b was rerun: its rows (and its per-seed files) are new, a's stay as
    published, in the studies' order; a table with other columns, or none published, is left whole."""
    rp = _reproduce_papers()
    head = "| study | claim | verdict |\n|---|---|---|\n"
    published = tmp_path / "papers_x.md"
    published.write_text(
        head + "| a | a1 > z | old |\n| b | b1 > z | old |\n| b | b2 > z | old |\n| a | a2 > z | old |\n"
    )
    complete = head + "| b | b1 > z | new |\n| b | b2 > z | new |\n"
    assert rp.merge_section(published, complete, ["a", "b"]) == (
        head + "| a | a1 > z | old |\n| a | a2 > z | old |\n| b | b1 > z | new |\n| b | b2 > z | new |\n"
    )
    assert rp.merge_section(published, complete, ["b", "a"]).splitlines()[2:4] == [
        "| b | b1 > z | new |",
        "| b | b2 > z | new |",
    ]
    assert rp.merge_section(published, "| study | claim | verdict | axis |\n|---|---|---|---|\n", ["a", "b"]) is None
    assert rp.merge_section(tmp_path / "none.md", complete, ["a", "b"]) is None


def test_a_follow_up_is_restored_from_its_archive_only_for_the_same_overrides(tmp_path, monkeypatch, capsys):
    """A follow-up whose sweep is gone is read from docs/results/papers/followups/<name>/runs.tar.xz when the
    archived study.yaml is the study file with the follow-up's overrides applied; with other overrides (or
    an edited study file) the archive is not used."""
    rp = _reproduce_papers()
    runs, results = tmp_path / "runs" / "papers", tmp_path / "results"
    monkeypatch.setattr(rp, "RUNS", runs)
    monkeypatch.setattr(rp, "RESULTS", results)
    study = tmp_path / "s.yaml"
    study.write_text("name: s\nseeds: [0, 1]\ntune: {grid: {training.lr: [0.1]}}\n")
    monkeypatch.setattr(rp, "study_file", lambda name: study)
    monkeypatch.setattr(rp, "FOLLOWUPS", {"f": ("s", ("seeds=[30, 31]", "tune.divergence_margin=1"))})
    sweep = runs.parent / "papers_followups" / "f"
    sweep.mkdir(parents=True)
    (sweep / "study.yaml").write_text(
        "name: s\nseeds: [30, 31]\ntune: {grid: {training.lr: [0.1]}, divergence_margin: 1}\n"
    )
    records = [RunRecord("a", s, ended_run(sweep / "a" / f"seed{s}", [0.5])) for s in (30, 31)]
    assert rp.followup_sweep_dir("f") == (sweep, False)
    archive = results / "followups" / "f" / "runs.tar.xz"
    archive.parent.mkdir(parents=True)
    rp.archive_study(sweep, records, archive)
    shutil.rmtree(sweep)
    restored, was = rp.followup_sweep_dir("f")
    assert was and (restored / "a" / "seed31" / "summary.json").is_file()
    monkeypatch.setattr(rp, "FOLLOWUPS", {"f": ("s", ("seeds=[30, 31]", "tune.divergence_margin=2"))})
    assert rp.followup_sweep_dir("f") == (sweep, False)
    assert "holds runs of another s.yaml or other overrides; not used" in capsys.readouterr().out


def test_an_archived_study_yaml_matches_its_study_file_through_resolved_trace_paths():
    """A sweep writes the device trace its study names relative to scenarios/papers/ as the absolute path it
    read (here from another checkout): the same study; another file name, folder or value is not."""
    rp = _reproduce_papers()
    folder = rp.ROOT / "scenarios" / "papers"
    current = {"population": {"device_trace": "trace.csv"}, "seeds": [0, 1]}
    elsewhere = {"population": {"device_trace": "/other/checkout/scenarios/papers/trace.csv"}, "seeds": [0, 1]}
    assert rp.same_study(elsewhere, current, folder)
    assert not rp.same_study(
        {**elsewhere, "population": {"device_trace": "/x/scenarios/papers/other.csv"}}, current, folder
    )
    assert not rp.same_study({**elsewhere, "population": {"device_trace": "/x/scenarios/trace.csv"}}, current, folder)
    assert not rp.same_study({**elsewhere, "seeds": [0, 2]}, current, folder)
    assert not rp.same_study({**elsewhere, "extra": 1}, current, folder)


def test_a_family_split_over_a_papers_studies_is_corrected_as_one():
    """FedHist's Fig. 5 is declared as family fedhist_fig5 in two study files (N/K = 10 and 25): the papers'
    table corrects it once over both.  Hand-computed: study a's claim at every axis value counts as one test
    with p = max(0.01, 0.02) = 0.02 (other side min(1, 2 x 0.98) = 1); study b's claim p = 0.03 (other 0.97);
    Holm over the two: 0.02 x 2 = 0.04, then max(0.04, 0.03 x 1) = 0.04; other side 1 and max(1, 0.97) = 1.
    A family within one study is left as declared."""
    rp = _reproduce_papers()

    def entry(study, family, p, other, value=None):
        claim = Claim(family=family, variant=f"x.{value}" if value else "x", versus=f"y.{value}" if value else "y",
                      measure="last_quarter_accuracy", direction="higher", axis="model" if value else None,
                      axis_value=value)  # fmt: skip
        return study, claim, {"family": family, "p_sign_flip": p, "p_other_side": other}, {}, {}

    entries = [entry("a", "fig5", 0.01, 0.99, "v1"), entry("a", "fig5", 0.02, 0.98, "v2"),
               entry("b", "fig5", 0.03, 0.97), entry("b", "solo", 0.5, 0.5)]  # fmt: skip
    cells = rp.paper_families(entries)
    both = "0.0400 (1.0000): supported (fig5, 2 tests, 2 studies)"
    assert cells == [both, both, both, "as declared"]
    entries[2] = entry("b", "fig5", 0.999, 0.001)  # b's other side rejects: 0.001 x 2 = 0.002; a's still 0.04
    cells = rp.paper_families(entries)
    assert cells[0] == both and cells[2] == "0.9990 (0.0020): contradicted (fig5, 2 tests, 2 studies)"


def test_the_tuning_table_names_the_seeds_its_published_choices_were_evaluated_on(tmp_path):
    """While a rerun on new seeds has not ended, the papers' tuning table shows the published choices, so the
    seeds beside them are the published study's (its runs.tar.xz), not the study file's new ones."""
    import io
    import tarfile

    rp = _reproduce_papers()
    rp.RESULTS = tmp_path
    (tmp_path / "s").mkdir()
    with tarfile.open(tmp_path / "s" / rp.ARCHIVE, "w:xz") as tar:
        data = b"name: s\nseeds: [0, 1, 2]\n"
        info = tarfile.TarInfo(rp.STUDY_FILE)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    assert rp.published_seeds("s", {"seeds": [200, 201]}) == [0, 1, 2]
    assert rp.published_seeds("unpublished", {"seeds": [200, 201]}) == [200, 201]
