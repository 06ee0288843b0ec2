"""Verdicts one setting cannot flip (issue 32): the symmetric Holm rule with the sign-flip test inverted as
its interval, censored times to target, the paper's effect tested only on the paper's data, the per-seed
table beside claims.md, and the sensitivity axis ("depends on <axis>"), all on hand-made values."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from asyncfl.cli.study import report_dir
from asyncfl.config import ConfigError
from asyncfl.output.reading import read_csv
from asyncfl.output.tables import markdown
from asyncfl.study import build_study
from asyncfl.study.claim_tests import claim_markdown, claim_rows, seed_rows, sign_flip
from asyncfl.study.claims import ALPHA, Claim, study_claims
from asyncfl.study.report import write_report
from asyncfl.study.seed_statistics import RunRecord, t_interval
from asyncfl.sweep.study_sweep import run_sweep
from tests.conftest import replace_training, write_finished_run
from tests.study.test_study import BASE as STUDY_BASE

TIME = "time to 0.8 (virtual s)"


def claim(**fields) -> Claim:
    return Claim(**{"variant": "a", "versus": "b", "measure": "final_accuracy", "direction": "higher", **fields})


def paired(diffs: list[float], measure: str = "final accuracy") -> dict:
    """variant a = b + diffs seed by seed (b at 0.5)."""
    return {
        "a": {measure: {s: 0.5 + d for s, d in enumerate(diffs)}},
        "b": {measure: dict.fromkeys(range(len(diffs)), 0.5)},
    }


def test_the_old_t_interval_contradiction_is_now_inconclusive():
    """Differences −1.0, −1.2, −1.1, −1.3 points against a claim "higher".  The Student-t interval,
    −1.15 ± t_{0.975,3} · 0.1291 / 2 = [−1.355, −0.945], lies below 0: the old rule said "contradicted"
    whatever p said.  The one-sided sign-flip p in the other direction ("lower") is 1/16 = 0.0625 at best
    with 4 pairs (only the observed pattern reaches the sum), not below 0.05: inconclusive.  With a fifth
    pair, 1/32 = 0.031 < 0.05: contradicted."""
    diffs = [-0.010, -0.012, -0.011, -0.013]
    old = t_interval([100 * d for d in diffs])
    assert old.high < 0  # what the old rule called contradicted
    four = claim_rows([claim()], paired(diffs))[0]
    assert (four["p_sign_flip"], four["p_other_side"], four["p_holm_other_side"]) == (1.0, 1 / 16, 1 / 16)
    assert four["verdict"] == "inconclusive"
    assert (four["diff_ci_low"], four["diff_ci_high"]) == (-math.inf, math.inf)  # 16 patterns reject no shift
    five = claim_rows([claim()], paired(diffs + [-0.014]))[0]
    assert five["p_other_side"] == 1 / 32 and five["verdict"] == "contradicted"
    assert five["diff_ci_high"] == pytest.approx(-1.0) and five["diff_ci_low"] == pytest.approx(-1.4)


def test_contradicted_needs_holm_in_the_other_direction_too():
    """Two claims of one family, each with 5 pairs all on the other side: raw p 1/32 each, Holm 2/32 =
    0.0625: neither is contradicted.  In families of their own each is."""
    data = paired([-0.01, -0.02, -0.03, -0.02, -0.01])
    data["c"] = data["a"]
    together = claim_rows([claim(family="f"), claim(family="f", variant="c")], data)
    assert [r["p_holm_other_side"] for r in together] == [1 / 16, 1 / 16]
    assert {r["verdict"] for r in together} == {"inconclusive"}
    apart = claim_rows([claim(family="f"), claim(family="g", variant="c")], data)
    assert {r["verdict"] for r in apart} == {"contradicted"}
    assert claim().family == "study"  # no family: the study file's one family


def test_sign_flip_interval_by_hand_with_six_pairs():
    """6 pairs: 64 patterns, the lower end is the ceil(0.05 · 64) = 4th smallest subset mean (the empty
    set's −inf first).  d = 1, 2, 3, 4, 5, 6: the subset means in order are −inf, 1, 1.5, 2 (of {1,3}
    and {2}) ... so the 4th is 2.  The upper end by symmetry: the 4th largest, 7 − 2 = 5."""
    test = sign_flip([1, 2, 3, 4, 5, 6])
    assert (test.low, test.high) == pytest.approx((2.0, 5.0))
    assert test.p_higher == 1 / 64 and test.p_lower == 1.0 and test.method == "exact"


@pytest.mark.parametrize("n", [2, 3, 5, 8, 12, 17])
def test_p_and_interval_agree_in_sign_on_random_inputs(n):
    """On 40 random sets of paired differences (fixed seed; 17 pairs: Monte Carlo), the interval's lower end
    is above 0 exactly when the raw p of "higher" is below 0.05, and its upper end below 0 exactly when
    that of "lower" is: they come from one test and cannot disagree."""
    rng = np.random.default_rng(n)
    for _ in range(40 if n < 17 else 4):
        d = rng.normal(rng.normal(0, 1), 1, size=n).round(int(rng.integers(0, 3)))  # rounding makes ties
        test = sign_flip(d)
        assert (test.low > 0) == (test.p_higher < ALPHA) and (test.high < 0) == (test.p_lower < ALPHA)
        assert test.low <= np.mean(d) <= test.high


def test_a_time_to_target_keeps_the_seeds_that_never_reached_it():
    """Variant a misses the target on seeds 1 and 3 of 5; its runs end at 300 s.  The old rule paired only
    seeds 0, 2, 4 (a: 100, 110, 105 against b: 150, 160, 155: a 50 s faster each time).  Censored at the
    run's end, a's misses count 300 s: differences −50, +150, −50, +140, −50; mean +28.  The test ranks
    them (a's miss is later than b's time): scores −2, +5, −2, +4, −2 (50 three times: midrank 2), sum +3.
    A pattern gives 15 − 2 · (ranks made negative); claim "a faster" (lower), sum <= 3: negative ranks >= 6,
    all but the 9 sets under 6 (none, one 2 ×3, two 2 ×3, the 4, the 5): p = 23/32, inconclusive, and the
    row says a reached it on 3 of 5."""
    times = {
        "a": {TIME: {0: 100.0, 1: math.nan, 2: 110.0, 3: math.nan, 4: 105.0}},
        "b": {TIME: {0: 150.0, 1: 150.0, 2: 160.0, 3: 160.0, 4: 155.0}},
    }
    ends = {"a": dict.fromkeys(range(5), 300.0), "b": dict.fromkeys(range(5), 300.0)}
    row = claim_rows([claim(measure="time_to:0.8", direction="lower")], times, ends)[0]
    assert row["pairs"] == 5 and row["diff_mean"] == pytest.approx(28.0) and row["p_sign_flip"] == 23 / 32
    assert row["verdict"] == "inconclusive"
    assert (row["variant_reached"], row["versus_reached"]) == ("3/5", "5/5")
    assert claim_rows([claim(measure="time_to:0.8", direction="lower")], times)[0]["pairs"] == 3  # no ends known
    seeds = seed_rows([claim(measure="time_to:0.8", direction="lower")], times, ends)
    assert [(r["seed"], r["variant_value"], r["difference"], r["censored"]) for r in seeds] == [
        (0, 100.0, -50.0, ""), (1, 300.0, 150.0, "variant"), (2, 110.0, -50.0, ""),
        (3, 300.0, 140.0, "variant"), (4, 105.0, -50.0, ""),
    ]  # fmt: skip
    # a table mixing an accuracy claim and this one: every row has every column, in one order, "—" for an
    # accuracy claim's "reached" (ragged rows once shifted the columns and printed "nan")
    mixed = {v: {**times[v], "final accuracy": dict.fromkeys(range(5), 0.5)} for v in times}
    both_rows = claim_rows([claim(), claim(measure="time_to:0.8", direction="lower")], mixed, ends)
    accuracy_cells, time_cells = claim_markdown(both_rows)
    assert list(accuracy_cells) == list(time_cells)
    assert (accuracy_cells["reached (variant, versus)"], time_cells["reached (variant, versus)"]) == ("—", "3/5, 5/5")
    assert "nan" not in markdown(claim_markdown(both_rows))
    # a seed where neither reached it is a tie at the runs' ends
    both = {"a": {TIME: {0: math.nan}}, "b": {TIME: {0: math.nan}}}
    (tie,) = seed_rows([claim(measure="time_to:0.8")], both, {"a": {0: 300.0}, "b": {0: 300.0}})
    assert tie["difference"] == 0.0 and tie["censored"] == "variant and versus"


def test_the_papers_effect_is_tested_only_on_the_papers_data():
    diffs = [0.010, 0.012, 0.011, 0.013, 0.014]  # interval [1.0, 1.4] points, p = 1/32: supported alone
    cifar = claim(paper_effect=5.0, paper_data="cifar10")
    undeclared = claim(family="g", paper_effect=5.0)
    same = claim(family="h", paper_effect=5.0, paper_data="mnist1d")
    rows = claim_rows([cifar, undeclared, same], paired(diffs), datasets={"a": "mnist1d", "b": "mnist1d"})
    assert [r["paper_comparison"] for r in rows] == [
        "context only: the paper's data is cifar10, the runs' mnist1d",
        "context only: the paper's data set is not declared (paper_data:)", "tested",
    ]  # fmt: skip
    assert [r["paper_effect_inside"] for r in rows] == ["", "", "no"]
    assert [r["paper_effect"] for r in rows] == [5.0, 5.0, 5.0]  # still shown, as context


def finished(root, variant: str, seed: int, accuracy: float, dataset: str = "digits") -> RunRecord:
    path = root / variant / f"seed{seed}"
    write_finished_run(path, {"data": {"dataset": dataset}, "seed": seed}, accuracy)
    return RunRecord(variant, seed, path)


def test_report_writes_the_pairs_beside_claims_md(tmp_path):
    """a ends at 0.60, 0.62, 0.61 and b at 0.55 (seeds 0-2): differences +5, +7, +6 points."""
    records = [finished(tmp_path, "a", s, 0.60 + s / 100 if s != 2 else 0.61) for s in range(3)]
    records += [finished(tmp_path, "b", s, 0.55) for s in range(3)]
    written = write_report(tmp_path, records, None, (), [claim(paper_effect=6.0, paper_data="digits")])
    assert {p.name for p in written} >= {"claims.csv", "claims.md", "claims_seeds.csv", "claims_seeds.md"}
    seeds = read_csv(tmp_path / "claims_seeds.csv")
    assert [(r["seed"], round(float(r["variant_value"]), 9)) for r in seeds] == [("0", 60.0), ("1", 61.0), ("2", 61.0)]
    assert [round(float(r["difference"]), 9) for r in seeds] == [5.0, 6.0, 6.0]
    md = (tmp_path / "claims_seeds.md").read_text()
    assert "| study | a vs b | final_accuracy (points) | 1 | 61.00 | 55.00 | +6.00 | — |" in md
    (row,) = read_csv(tmp_path / "claims.csv")
    assert row["paper_comparison"] == "tested" and row["pairs"] == "3"
    assert "evaluation interval" not in (tmp_path / "claims.md").read_text()  # no time claim, nothing to resolve


def test_the_report_says_its_t_intervals_describe_and_the_claims_decide(tmp_path):
    """The same three pairs (+5, +7, +6 points): the report's paired t-interval, 6 ± t_{0.975,2} · 1/√3 =
    6 ± 2.48, excludes 0 ("higher"), while 3 pairs cannot give a one-sided sign-flip p below 1/8: the claim is
    inconclusive.  The report says which one to quote; without claims it has nothing to point at."""
    records = [finished(tmp_path, "a", s, 0.60 + s / 100 if s != 2 else 0.61) for s in range(3)]
    records += [finished(tmp_path, "b", s, 0.55) for s in range(3)]
    write_report(tmp_path, records, "b", (), [claim()])
    final = next(
        r for r in read_csv(tmp_path / "report.csv") if r["variant"] == "a" and r["measure"] == "final accuracy"
    )
    assert final["vs_baseline"] == "higher" and read_csv(tmp_path / "claims.csv")[0]["verdict"] == "inconclusive"
    said = "the declared claims below are the tested verdicts (sign-flip test, Holm-corrected)"
    assert said in (tmp_path / "report.md").read_text()
    write_report(tmp_path, records, "b")
    assert said not in (tmp_path / "report.md").read_text()


def test_report_censors_a_miss_at_the_runs_end(tmp_path):
    """write_finished_run's metrics: 0.1 at 0 s, the final accuracy at 10 s; summary.json gets the run's
    end.  Target 0.5: a (0.6) reaches it at 10 s on both seeds, b (0.3 on seed 1) misses it there, censored
    at its end, 40 s: differences 0 and −30 s."""
    records = [finished(tmp_path, "a", s, 0.6) for s in range(2)]
    records += [finished(tmp_path, "b", 0, 0.6), finished(tmp_path, "b", 1, 0.3)]
    for r in records:
        summary = json.loads((r.path / "summary.json").read_text())
        (r.path / "summary.json").write_text(json.dumps({**summary, "virtual_time_s": 40.0}))
    write_report(tmp_path, records, None, [0.5], [claim(measure="time_to:0.5", direction="lower")])
    (row,) = read_csv(tmp_path / "claims.csv")
    assert (row["pairs"], row["variant_reached"], row["versus_reached"]) == ("2", "2/2", "1/2")
    assert float(row["diff_mean"]) == -15.0
    assert [r["censored"] for r in read_csv(tmp_path / "claims_seeds.csv")] == ["", "versus"]
    assert "known only to the evaluation interval" in (tmp_path / "claims.md").read_text()  # 10 s steps here


AXIS = {"axis": "history", "variants": ["fast"], "values": {"h1": {"training.lr": 0.1}, "h2": {"training.lr": 0.2}}}


def axis_study(tmp_path, **extra) -> dict:
    compare = [{"name": "slow", "set": {"training.lr": 0.01}}, {"name": "fast"}]
    claims = [{"variant": "fast", "versus": "slow", "measure": "final_accuracy", "direction": "higher"}]
    out = {"plot": False, "dir": str(tmp_path / "runs")}
    return {**STUDY_BASE, "output": out, "seeds": [0, 1], "compare": compare, "claims": claims,
            "sensitivity": AXIS, **extra}  # fmt: skip


def test_a_sensitivity_axis_expands_the_variants_and_the_claims(tmp_path):
    study = build_study(axis_study(tmp_path))
    assert study.variants == ("slow", "fast.h1", "fast.h2")
    assert {r.variant: r.scenario.training.lr for r in study.runs} == {"slow": 0.01, "fast.h1": 0.1, "fast.h2": 0.2}
    assert [(c.variant, c.versus, c.axis, c.axis_value) for c in study.claims] == [
        ("fast.h1", "slow", "history", "h1"), ("fast.h2", "slow", "history", "h2")
    ]  # fmt: skip
    assert study_claims(axis_study(tmp_path), "study.yaml") == list(study.claims)  # what report reads back


def test_verdicts_that_differ_along_the_axis_say_so_without_claiming_dependence(tmp_path):
    """across_axis: each.  fast.h1 − slow = +1 .. +6 points on 6 seeds, fast.h2 − slow = −1 .. −6: each raw
    one-sided p is 1/64, and both values' tests are one Holm family of 2, so each Holm p is 2/64 < 0.05 (h1
    supported, h2 contradicted).  The words differ, but without a declared interaction test that may be
    power, not dependence: "differs by history value", never "depends on".  With 5 seeds 2/32 = 0.0625
    leaves both inconclusive — an uncorrected per-value family would have called them supported and
    contradicted."""
    each = [{**axis_study(tmp_path)["claims"][0], "across_axis": "each"}]
    claims = study_claims(axis_study(tmp_path, claims=each), "study.yaml")

    def rows_for(seeds: int, h2_sign: int = -1) -> list[dict]:
        up, down = [0.01 * k for k in range(1, seeds + 1)], [h2_sign * 0.01 * k for k in range(1, seeds + 1)]
        table = {"slow": {"final accuracy": dict.fromkeys(range(seeds), 0.5)},
                 "fast.h1": {"final accuracy": {s: 0.5 + d for s, d in enumerate(up)}},
                 "fast.h2": {"final accuracy": {s: 0.5 + d for s, d in enumerate(down)}}}  # fmt: skip
        return claim_rows(claims, table)

    rows = rows_for(6)
    assert [(r["axis_value"], r["verdict"], r["family_size"]) for r in rows] == [
        ("h1", "supported", 2), ("h2", "contradicted", 2)
    ]  # fmt: skip
    assert [(r["p_sign_flip"], r["p_holm"], r["p_holm_other_side"]) for r in rows] == [
        (1 / 64, 2 / 64, 1.0), (1.0, 1.0, 2 / 64)
    ]  # fmt: skip
    assert {r["verdict_across_axis"] for r in rows_for(5)} == {"inconclusive"}
    assert {r["verdict_across_axis"] for r in rows} == {
        "differs by history value (h1: supported; h2: contradicted; dependence not tested)"
    }
    assert {r["verdict_across_axis"] for r in rows_for(6, h2_sign=1)} == {"supported"}


def test_a_bad_sensitivity_axis_names_its_keys(tmp_path):
    bad = {"axis": "", "variants": ["fastest"], "values": {"h/1": {"training.lr": 0.1}}, "extra": 1}
    with pytest.raises(ConfigError) as err:
        build_study(axis_study(tmp_path, sensitivity=bad))
    text = str(err.value)
    assert "sensitivity.extra: unknown key. Allowed here: axis, variants, values." in text
    assert "sensitivity.axis: required, a name for the axis" in text
    assert "sensitivity.variants: a non-empty list of compare: variants (slow, fast); got ['fastest']." in text
    assert "sensitivity.values: at least two values" in text
    with pytest.raises(ConfigError, match=r"sensitivity.values.h/1: the label names directories"):
        build_study(axis_study(tmp_path, sensitivity={**AXIS, "values": {"h/1": {"a": 1}, "h2": {"a": 2}}}))
    with pytest.raises(ConfigError, match=r"baseline: 'fast' is on the sensitivity axis"):
        build_study(axis_study(tmp_path, baseline="fast"))
    # a value's keys are validated as a set would be, and named by the value's label
    with pytest.raises(ConfigError, match=r"sensitivity.values.h1.training.lr: Input should be greater than 0"):
        values = {"h1": {"training.lr": -1}, "h2": {"training.lr": 0.2}}
        build_study(axis_study(tmp_path, sensitivity={**AXIS, "values": values}))


def test_monte_carlo_p_keeps_the_published_draws():
    """Above 16 pairs the p-value is the one reports published before the interval existed: the same
    100,000 sign patterns (seed 0, drawn 10,000 at a time as choice([-1, 1])), the same count."""
    d = np.random.default_rng(3).normal(0.3, 1.0, size=20)
    rng, hits = np.random.default_rng(0), 0
    for _ in range(10):
        signs = rng.choice(np.array([-1.0, 1.0]), size=(10_000, 20))
        hits += int(np.sum(signs @ d >= d.sum() - 1e-9 * np.abs(d).sum()))
    test = sign_flip(d)
    assert test.method == "Monte Carlo" and test.p_higher == (1 + hits) / 100_001


def test_a_sweep_with_an_axis_runs_each_value_and_reports_the_claim_per_value(tmp_path, monkeypatch):
    """Runs replaced by finished run directories (final accuracy 0.5 + lr + seed / 100): the sweep runs
    slow once and fast at each axis value, and report tests the claim at h1 and at h2."""

    def run_job(scenario: dict, run_dir, resume: bool = False) -> dict:
        return write_finished_run(run_dir, scenario, 0.5 + scenario["training"]["lr"] + scenario["seed"] / 100)

    replace_training(monkeypatch, run_job)
    sweep = run_sweep(build_study(axis_study(tmp_path)), quiet=True).sweep_dir
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == ["fast.h1", "fast.h2", "slow"]
    rows = read_csv(sweep / "claims.csv")
    assert [(r["variant"], r["axis_value"], r["pairs"], r["diff_mean"]) for r in rows] == [
        ("fast.h1", "h1", "2", "9.0"), ("fast.h2", "h2", "2", "19.0")
    ]  # fmt: skip
    assert {r["verdict_across_axis"] for r in rows} == {"inconclusive at every history value"}  # 2 pairs: p >= 1/4
    assert len(read_csv(sweep / "claims_seeds.csv")) == 4
    assert report_dir(sweep, None) == 0 and len(read_csv(sweep / "claims.csv")) == 2  # read back from study.yaml
