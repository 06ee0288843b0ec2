"""Declared claims (asyncfl.study.claims): Holm's correction, the sign-flip p-value, verdicts, the paper's
effect against our interval and the seeds needed, all by hand; validation with YAML paths; a tiny real
study whose report carries the claims; a resumed sweep may not change its claims."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from asyncfl.cli import main
from asyncfl.cli.study import report_dir
from asyncfl.config import ConfigError
from asyncfl.output.reading import read_csv
from asyncfl.study import build_study
from asyncfl.study.claim_tests import claim_markdown, claim_rows, holm, seeds_needed, sign_flip_p, verdict
from asyncfl.study.claims import Claim, smallest_holm_p, smallest_p, unreachable_families
from asyncfl.study.seed_statistics import run_measures
from asyncfl.sweep.study_sweep import run_sweep
from tests.conftest import replace_training, write_finished_run
from tests.study.test_study import BASE as STUDY_BASE

Z_SUM = 1.959963984540054 + 0.8416212335729143  # z_0.975 + z_0.8 = 2.801585218...


def test_holm_by_hand():
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> running max 0.06)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # 0.5 x 2 = 1.0; 0.6 x 1 = 0.6 -> running max 1.0.  0.6 x 2 = 1.2 is capped at 1
    assert holm([0.6, 0.5]) == pytest.approx([1.0, 1.0])
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])
    assert holm([0.02]) == [0.02] and holm([]) == []


def test_exact_sign_flip_p_by_hand():
    # |d| = 1, 2, 3, 0.5 sum to 6.5; observed sum 5.5.  A pattern's sum is 6.5 - 2 x (the flipped |d|),
    # so sum >= 5.5 needs the flipped |d| to total <= 0.5: no flip (6.5) or flipping 0.5 only (5.5): 2 of 16
    assert sign_flip_p([1, 2, 3, -0.5], "higher") == (2 / 16, "exact")
    # lower: sum <= 5.5 is every pattern but the all-positive one (6.5): 15 of 16
    assert sign_flip_p([1, 2, 3, -0.5], "lower") == (15 / 16, "exact")
    # 5 pairs all positive: only the observed pattern reaches its sum: 1/32, the smallest p of 5 seeds
    assert sign_flip_p([0.4, 0.1, 0.3, 0.2, 0.5], "higher") == (1 / 32, "exact")
    assert sign_flip_p([2.0], "higher") == (0.5, "exact")  # +2 or -2
    assert sign_flip_p([], "higher") == (1.0, "exact")  # no pair, no evidence


def test_monte_carlo_sign_flip_matches_the_exact_count_and_is_fixed():
    d = np.random.default_rng(7).normal(0.4, 1.0, size=17)  # 17 pairs: past the exact limit
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=17)))  # every one of the 131,072 patterns
    exact = float(np.mean(signs @ d >= d.sum() - 1e-9))
    p, method = sign_flip_p(d, "higher")
    assert method == "Monte Carlo" and sign_flip_p(d, "higher") == (p, method)  # a fixed seed: same p
    assert abs(p - exact) < 4 * math.sqrt(exact * (1 - exact) / 100_000) + 1e-5


def test_verdicts():
    """(Holm p in the claim's direction, Holm p in the other one): the same test decides both ways."""
    assert verdict(0.01, 0.99) == "supported"
    assert verdict(0.2, 0.8) == "inconclusive"
    assert verdict(0.97, 0.04) == "contradicted"
    assert verdict(0.94, 0.0625) == "inconclusive"  # the other side not significant after Holm either


def test_seeds_needed_by_hand():
    # ((z_0.975 + z_0.8) s / effect)^2 = 2.801585^2 x (2 / 1)^2 = 7.848879 x 4 = 31.40 -> 32
    assert Z_SUM**2 * 4 == pytest.approx(31.3955, abs=1e-4)
    assert seeds_needed(2.0, 1.0) == 32
    assert seeds_needed(4.0, -1.0) == 126  # 7.848879 x 16 = 125.58; the sign of the effect does not matter
    assert seeds_needed(0.3, 1.0) == 2  # 0.71 -> 1, but an interval needs 2 pairs
    assert seeds_needed(math.nan, 1.0) is None and seeds_needed(1.0, 0.0) is None


def claim(**fields) -> Claim:
    return Claim(**{"family": "f", "variant": "a", "versus": "b", "measure": "final_accuracy",
                    "direction": "higher", **fields})  # fmt: skip


def table(diffs: list[float], measure: str = "final accuracy") -> dict:
    """variant a = b + diffs seed by seed (b at 0.5)."""
    return {
        "a": {measure: {s: 0.5 + d for s, d in enumerate(diffs)}},
        "b": {measure: dict.fromkeys(range(len(diffs)), 0.5)},
    }


SAME_DATA = {"a": "mnist1d", "b": "mnist1d"}  # variant -> data.dataset of its runs


def test_claim_row_interval_p_and_paper_effect_by_hand():
    """Differences 1.0, 1.2, 1.1, 1.3, 1.4 points.  Of the 32 sign patterns only the observed one (no flip)
    reaches the sum: p = 1/32, 0.0625 after Holm in a family of 2: inconclusive.  The interval's lower end
    is the ceil(0.05 x 32) = 2nd smallest subset mean (the first is the empty set's −inf): the smallest
    single difference, 1.0; the upper end likewise the largest, 1.4.  Paper 1.2 lies inside, 3.0 above."""
    rows = claim_rows(
        [claim(paper_effect=1.2, paper_numbers="81.2 vs 80.0 %", paper_data="mnist1d"),
         claim(variant="c", paper_effect=3.0, paper_data="mnist1d")],
        {**table([0.010, 0.012, 0.011, 0.013, 0.014]), "c": table([0.010, 0.012, 0.011, 0.013, 0.014])["a"]},
        datasets={**SAME_DATA, "c": "mnist1d"},
    )  # fmt: skip
    inside, outside = rows
    assert inside["pairs"] == 5 and inside["diff_mean"] == pytest.approx(1.2)
    assert inside["diff_ci_low"] == pytest.approx(1.0) and inside["diff_ci_high"] == pytest.approx(1.4)
    assert inside["p_sign_flip"] == 1 / 32 and inside["p_holm"] == 1 / 16 and inside["p_holm_other_side"] == 1.0
    assert inside["paper_effect_inside"] == "yes" and inside["verdict"] == "inconclusive"
    assert outside["paper_effect_inside"] == "no"
    assert outside["verdict"] == "inconclusive; effect smaller than the paper's"
    assert inside["smallest_p"] == 1 / 32 and inside["unit"] == "points"
    assert inside["paper_numbers"] == "81.2 vs 80.0 %" and outside["paper_numbers"] == ""
    assert claim_markdown(rows)[0]["paper's numbers"] == "81.2 vs 80.0 %"


def test_holm_within_a_family_keeps_five_seeds_from_passing():
    five = table([0.01, 0.02, 0.03, 0.02, 0.01])  # all positive: p = 1/32 = 0.03125 each
    five["c"] = five["a"]
    alone = claim_rows([claim()], five)[0]
    assert alone["p_sign_flip"] == 1 / 32 and alone["verdict"] == "supported"
    pair = claim_rows([claim(), claim(variant="c")], five)  # family of 2: 0.03125 x 2 = 0.0625 for both
    assert [r["p_holm"] for r in pair] == [0.0625, 0.0625] and {r["verdict"] for r in pair} == {"inconclusive"}
    assert pair[0]["smallest_p_holm"] == 0.0625 and pair[0]["family_size"] == 2
    other_family = claim_rows([claim(), claim(variant="c", family="g")], five)  # corrected separately
    assert [r["verdict"] for r in other_family] == ["supported", "supported"]


def test_contradicted_claim_on_a_time_to_target():
    measure = "time to 0.8 (virtual s)"
    slower = dict(enumerate([10.0, 12.0, 9.0, 11.0, 8.0]))
    times = {"a": {measure: slower}, "b": {measure: dict.fromkeys(range(5), 5.0)}}
    row = claim_rows([claim(measure="time_to:0.8", direction="lower", paper_effect=2.0, paper_data="mnist1d")],
                     times, datasets=SAME_DATA)[0]  # fmt: skip
    # differences +5, +7, +4, +6, +3 s: a is slower on every seed, the claim said faster.  "lower": every
    # pattern's sum is <= the observed one, p = 1; "higher" (the other side): only the observed, 1/32
    assert row["pairs"] == 5 and row["diff_mean"] == pytest.approx(5.0) and row["unit"] == "virtual s"
    assert row["p_sign_flip"] == 1.0 and row["p_other_side"] == 1 / 32 and row["p_holm_other_side"] == 1 / 32
    assert row["verdict"] == "contradicted" and row["paper_effect"] == -2.0 and row["paper_effect_inside"] == "no"
    assert (row["diff_ci_low"], row["diff_ci_high"]) == pytest.approx((3.0, 7.0))
    assert (row["variant_reached"], row["versus_reached"]) == ("5/5", "5/5")
    one = claim_rows([claim()], table([0.01]))[0]
    assert one["pairs"] == 1 and one["verdict"] == "inconclusive" and one["seeds_needed"] is None
    assert (one["diff_ci_low"], one["diff_ci_high"]) == (-math.inf, math.inf)  # 2 patterns reject no shift


BASE = {**STUDY_BASE, "name": "tiny_claims"}  # the study tests' tiny scenario
CLAIMS = [
    {"family": "lr", "variant": "fast", "versus": "slow", "measure": "final_accuracy", "direction": "higher",
     "paper_effect": 5.0, "source": "made up"},
    {"family": "lr", "variant": "fast", "versus": "slow", "measure": "time_to:0.1", "direction": "lower"},
]  # fmt: skip


def study_raw(tmp_path, **extra) -> dict:
    compare = [{"name": "slow", "set": {"training.lr": 0.01}}, {"name": "fast", "set": {"training.lr": 0.1}}]
    out = {"plot": False, "dir": str(tmp_path / "runs")}
    return {**BASE, "output": out, "seeds": [0, 1], "targets": [0.1], "compare": compare, **extra}


def test_every_claim_field_is_validated_with_its_path(tmp_path):
    bad = [
        {"family": "x", "variant": "fastest", "versus": "slow", "measure": "best", "direction": "up"},
        {"family": "x", "variant": "fast", "versus": "slow", "measure": "time_to:0.9", "direction": "lower",
         "paper_effect": -1, "note": 1},
    ]  # fmt: skip
    with pytest.raises(ConfigError) as err:
        build_study(study_raw(tmp_path, claims=bad))
    text = str(err.value)
    assert "claims[0].variant: must name a variant of compare: (slow, fast); got 'fastest'" in text
    assert "claims[0].measure: allowed: final_accuracy, last_quarter_accuracy, best_accuracy, last_quarter:<" in text
    assert "claims[0].direction: allowed: higher, lower" in text
    assert "claims[1].measure: 'time_to:0.9': the target must be one of targets: (0.1)" in text
    assert "claims[1].paper_effect: Input should be greater than 0" in text
    assert "claims[1].note: unknown key. Allowed here: family, variant, versus" in text
    with pytest.raises(ConfigError, match=r"claims\[1\]: the same claim"):
        build_study(study_raw(tmp_path, claims=[CLAIMS[0], CLAIMS[0]]))
    with pytest.raises(ConfigError, match=r"claims: expected a list"):
        build_study(study_raw(tmp_path, claims={"family": "x"}))
    assert build_study(study_raw(tmp_path, claims=CLAIMS)).claims[1].column == "time to 0.1 (virtual s)"


@pytest.mark.slow
def test_tiny_study_reports_its_claims_and_refuses_changed_claims_on_resume(tmp_path):
    study = build_study(study_raw(tmp_path, claims=CLAIMS))
    sweep_dir = run_sweep(study, quiet=True).sweep_dir
    assert yaml.safe_load((sweep_dir / "study.yaml").read_text())["claims"] == CLAIMS
    rows = read_csv(sweep_dir / "claims.csv")
    assert [(r["family"], r["measure"], r["pairs"]) for r in rows][0] == ("lr", "final_accuracy", "2")
    assert len(rows) == 2 and {r["p_method"] for r in rows} == {"exact"}
    md = (sweep_dir / "claims.md").read_text()
    assert "| lr (2) | fast > slow | final_accuracy (points) | 2 |" in md
    assert "| lr (2) | fast < slow | time_to:0.1" in md
    assert "## Declared claims" in (sweep_dir / "report.md").read_text()
    # at most 2 pairs: p >= 1/4, x2 in a family of 2 -> Holm p >= 0.5: nothing can be "supported"
    assert all(float(r["smallest_p_holm"]) == min(1, 2 * 2 ** -int(r["pairs"])) >= 0.5 for r in rows)
    assert "supported" not in {r["verdict"] for r in rows}
    # slow seed 1 missed 0.1: still a pair, censored at the run's end
    assert (rows[1]["pairs"], rows[1]["variant_reached"], rows[1]["versus_reached"]) == ("2", "2/2", "1/2")
    changed = build_study(study_raw(tmp_path, claims=CLAIMS[:1]))
    with pytest.raises(ConfigError, match="claims cannot change once a sweep has started"):
        run_sweep(changed, resume=sweep_dir, quiet=True)
    assert yaml.safe_load((sweep_dir / "study.yaml").read_text())["claims"] == CLAIMS  # left as declared
    assert run_sweep(study, resume=sweep_dir, quiet=True).skipped == 4  # the same claims resume
    (sweep_dir / "claims.md").unlink()
    assert report_dir(sweep_dir, None) == 0 and (sweep_dir / "claims.md").read_text() == md  # report redoes it


def test_cli_validate_names_a_bad_claim(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study_raw(tmp_path, claims=[{**CLAIMS[0], "direction": "better"}])))
    done = subprocess.run([sys.executable, "-m", "asyncfl", "validate", str(path)], capture_output=True, text=True)
    assert done.returncode == 2 and "claims[0].direction: allowed: higher, lower" in done.stderr


def test_last_quarter_of_a_metrics_column_by_hand(tmp_path):
    """Evaluations at t = 0, 10, 20, 30, 40 (a row without test_accuracy is no evaluation); the last quarter is
    t >= 0.75 x 40 = 30: accuracy_class_9 (0.4 + 0.6) / 2 = 0.5, test_accuracy (0.8 + 0.9) / 2 = 0.85."""
    (tmp_path / "metrics.csv").write_text(
        "time,round,test_accuracy,accuracy_class_9\n0,0,0.1,0.0\n10,1,0.5,0.1\n20,2,0.7,0.2\n"
        "35,3,,0.99\n30,3,0.8,0.4\n40,4,0.9,0.6\n"
    )
    (tmp_path / "summary.json").write_text('{"status": "finished"}')  # a run that has ended (else: no measures)
    measures = run_measures(tmp_path, [], ["accuracy_class_9", "missing_column"])
    assert measures["last-quarter accuracy_class_9"] == pytest.approx(0.5)
    assert measures["last-quarter accuracy"] == pytest.approx(0.85)
    assert math.isnan(measures["last-quarter missing_column"])


def test_a_diverged_run_is_judged_on_its_broken_model_not_on_the_evaluations_before(tmp_path):
    """The same evaluations, but the run diverged at t = 40 (accuracy 0.1 there, class 9 at 0.0): its last
    quarter is that last evaluation (the model would have stayed broken to the horizon), not (0.8 + 0.1) / 2;
    its best accuracy and its time to a target reached before it broke stay as they were."""
    (tmp_path / "metrics.csv").write_text(
        "time,round,test_accuracy,accuracy_class_9\n0,0,0.1,0.0\n10,1,0.5,0.1\n20,2,0.7,0.2\n"
        "30,3,0.8,0.4\n40,4,0.1,0.0\n"
    )
    summary = {"status": "diverged", "final_accuracy": 0.1, "best_accuracy": 0.8}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    measures = run_measures(tmp_path, [0.6], ["accuracy_class_9"])
    assert measures["last-quarter accuracy"] == pytest.approx(0.1)
    assert measures["last-quarter accuracy_class_9"] == pytest.approx(0.0)
    assert measures["best accuracy"] == 0.8 and measures["time to 0.6 (virtual s)"] == 20.0
    (tmp_path / "summary.json").write_text(json.dumps({**summary, "status": "finished"}))
    assert run_measures(tmp_path, [])["last-quarter accuracy"] == pytest.approx((0.8 + 0.1) / 2)  # ended in time


def test_a_claim_on_the_last_quarter_of_a_column(tmp_path):
    """last_quarter:<column> is read in points like the accuracies: differences 0.02, 0.04 -> 2 and 4 points."""
    fair = {**CLAIMS[0], "measure": "last_quarter:accuracy_class_9"}
    parsed = build_study(study_raw(tmp_path, claims=[fair], eval={"per_class": True})).claims[0]
    assert parsed.column == "last-quarter accuracy_class_9" and parsed.unit == "points"
    row = claim_rows([claim(measure=fair["measure"])], table([0.02, 0.04], measure=parsed.column))[0]
    assert row["pairs"] == 2 and row["diff_mean"] == pytest.approx(3.0)
    for bad in ("last_quarter:", "last_quarter:9class", "last_quarter:a-b"):
        with pytest.raises(ConfigError, match=r"claims\[0\].measure: allowed: final_accuracy"):
            build_study(study_raw(tmp_path, claims=[{**fair, "measure": bad}]))


def test_a_claim_on_a_column_the_runs_do_not_write_is_refused(tmp_path):
    """The columns come from the scenario (asyncfl.output.columns): digits has 10 classes, so with
    eval.per_class accuracy_class_0 .. 9 exist and accuracy_class_10 does not; without it none does."""

    def refused(measure: str, **extra) -> str:
        with pytest.raises(ConfigError) as err:
            build_study(study_raw(tmp_path, claims=[{**CLAIMS[0], "measure": measure}], **extra))
        return str(err.value)

    plain = "time, round, test_accuracy, test_loss, train_loss, updates, staleness_mean, wall_seconds"
    text = refused("last_quarter:accuracy_class_9")
    assert (
        "claims[0].measure: 'last_quarter:accuracy_class_9': the runs of variant 'fast' write no column "
        f"accuracy_class_9 to metrics.csv; allowed: {plain} (accuracy_class_<c> only with eval.per_class: true)."
    ) in text and "the runs of versus 'slow' write no column" in text
    text = refused("last_quarter:accuracy_class_10", eval={"per_class": True})
    assert f"allowed: {plain}, accuracy_class_0 … accuracy_class_9." in text
    assert "no column test_acuracy" in refused("last_quarter:test_acuracy")
    # one variant evaluates per class, the other not: only the other is named
    compare = [{"name": "slow", "set": {"eval.per_class": True}}, {"name": "fast"}]
    text = refused("last_quarter:accuracy_class_3", compare=compare)
    assert "the runs of variant 'fast' write no column" in text and "versus 'slow'" not in text
    # utc_time is text: no mean of it (with clock.start_time it is written, but is no measure)
    assert "no column utc_time" in refused("last_quarter:utc_time", clock={"start_time": "2024-01-01T00:00:00Z"})
    assert build_study(study_raw(tmp_path, claims=[{**CLAIMS[0], "measure": "last_quarter:train_loss"}])).claims


def test_a_paper_effect_outside_the_interval_says_on_which_side():
    """Differences 1.0, 1.2, 1.1, 1.3, 1.4 points: interval [1.0, 1.4] (see above), p = 1/32 and, two claims
    in the family, Holm p = 1/16: inconclusive.  Paper 0.5 lies below it: our effect is larger; 3.0 above:
    smaller.  For a claim "lower" on differences -1.0 .. -1.4 the interval [-1.4, -1.0] is an effect of
    1.0 .. 1.4 in the claim's direction: again larger than 0.5 and smaller than 3.0."""
    diffs = [0.010, 0.012, 0.011, 0.013, 0.014]
    higher, lower = table(diffs), table([-d for d in diffs])
    for t in (higher, lower):
        t["c"] = t["a"]
    data = {**SAME_DATA, "c": "mnist1d"}
    pair = [claim(paper_effect=0.5, paper_data="mnist1d"), claim(variant="c", paper_effect=3.0, paper_data="mnist1d")]
    rows = claim_rows(pair, higher, datasets=data)
    rows += claim_rows([c.model_copy(update={"direction": "lower"}) for c in pair], lower, datasets=data)
    assert [r["verdict"] for r in rows] == [
        "inconclusive; effect larger than the paper's", "inconclusive; effect smaller than the paper's",
    ] * 2  # fmt: skip
    assert [r["paper_effect"] for r in rows] == [0.5, 3.0, -0.5, -3.0]


def test_smallest_p_and_holm_by_hand():
    # exact up to 16 pairs: only the observed pattern reaches its sum, 1 / 2^n; Monte Carlo above: 1 / 100,001
    assert [smallest_p(n) for n in (0, 1, 4, 5, 16)] == [1.0, 0.5, 0.0625, 0.03125, 2**-16]
    assert smallest_p(17) == 1 / 100_001
    assert smallest_holm_p(5, 2) == 0.0625 and smallest_holm_p(6, 3) == 3 / 64 and smallest_holm_p(1, 3) == 1.0


def test_validate_warns_of_a_family_that_cannot_reach_significance(tmp_path):
    def family(size: int, name: str = "f") -> list[Claim]:
        return [claim(family=name, variant=f"v{i}") for i in range(size)]

    # 4 seeds, one claim: p >= 1/16 = 0.0625; 5 seeds reach 1/32 = 0.03125
    (four,) = unreachable_families(family(1), 4)
    assert four == (
        "claims: family 'f' (1 claim(s)) cannot reach significance with 4 seed(s): the sign-flip p is at least "
        "0.0625, and 0.0625 after Holm's correction over 1 claim(s), not below 0.05, so no claim of it can be "
        "supported: use at least 5 seeds, or fewer claims in the family."
    )
    assert unreachable_families(family(1), 5) == []
    # 5 seeds, two claims: 2/32 = 0.0625 (6 seeds: 2/64 = 0.03125); 6 seeds, three: 3/64 = 0.047 passes, four
    # 4/64 = 0.0625 does not (7 seeds: 4/128 = 0.03125); each family on its own
    assert "use at least 6 seeds" in unreachable_families(family(2), 5)[0]
    assert unreachable_families(family(3, "a") + family(4, "b"), 6) == [
        "claims: family 'b' (4 claim(s)) cannot reach significance with 6 seed(s): the sign-flip p is at least "
        "0.01562, and 0.0625 after Holm's correction over 4 claim(s), not below 0.05, so no claim of it can be "
        "supported: use at least 7 seeds, or fewer claims in the family."
    ]
    # above 16 pairs the Monte Carlo floor 1/100,001: 5,001 claims cannot pass (0.050009), more seeds do not help
    (many,) = unreachable_families(family(5001), 17)
    assert "at least 1e-05, and 0.05001 after" in many and many.endswith("supported: fewer claims in the family.")
    assert unreachable_families(family(5000), 17) == []
    # one claim on a 3-value sensitivity axis tested at each value is 3 tests of its family: 5 seeds give
    # 3/32 = 0.094, 6 give 3/64; tested at every value (the default), it is one test: 1/32 < 0.05
    on_axis = [claim(family="f", variant=f"v.h{k}", axis="h", axis_value=f"h{k}", across_axis="each") for k in range(3)]
    (warning,) = unreachable_families(on_axis, 5)
    assert "(3 claim(s))" in warning and "0.09375 after" in warning and "use at least 6 seeds" in warning
    assert unreachable_families([c.model_copy(update={"across_axis": "every"}) for c in on_axis], 5) == []


def test_cli_validate_prints_the_warning_and_passes(tmp_path, capsys):
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study_raw(tmp_path, claims=CLAIMS)))  # 2 seeds, a family of 2 claims
    assert main(["validate", str(path)]) == 0  # in this process; the refusal above runs in the command's own
    out, err = capsys.readouterr()
    assert "valid study" in out
    assert (
        "warning: claims: family 'lr' (2 claim(s)) cannot reach significance with 2 seed(s): the sign-flip p is at "
        "least 0.25, and 0.5 after Holm's correction over 2 claim(s), not below 0.05, so no claim of it can be "
        "supported: use at least 6 seeds, or fewer claims in the family."
    ) in err


@pytest.fixture
def instant_runs(monkeypatch):
    """Runs replaced by a run directory written at once: variant fast ends at 0.6 + seed / 100, slow at 0.5."""

    def run_job(scenario: dict, run_dir: Path, resume: bool = False) -> dict:
        acc = (0.6 if scenario["training"]["lr"] == 0.1 else 0.5) + scenario["seed"] / 100
        return write_finished_run(run_dir, scenario, acc)

    replace_training(monkeypatch, run_job)


def test_report_tests_the_claims_the_sweep_was_run_with(tmp_path, instant_runs, capsys):
    """Editing study.yaml's claims after the runs changes nothing the report says: it tests the claims
    recorded at the sweep's start (declared_claims.yaml), says that the file differs, and a resume with the
    edited file is refused."""
    claims = [{k: v for k, v in CLAIMS[0].items() if k != "paper_effect"}]
    sweep_dir = run_sweep(build_study(study_raw(tmp_path, claims=claims)), quiet=True).sweep_dir
    assert yaml.safe_load((sweep_dir / "declared_claims.yaml").read_text()) == {"claims": claims}
    assert [r["direction"] for r in read_csv(sweep_dir / "claims.csv")] == ["higher"]
    raw = yaml.safe_load((sweep_dir / "study.yaml").read_text())
    edited = [{**claims[0], "direction": "lower", "family": "edited"}]
    (sweep_dir / "study.yaml").write_text(yaml.safe_dump({**raw, "claims": edited}))
    capsys.readouterr()
    assert report_dir(sweep_dir, None) == 0
    rows = read_csv(sweep_dir / "claims.csv")  # fast - slow = +10, +10 points: "higher" as recorded
    assert [(r["family"], r["direction"], r["pairs"], r["diff_mean"]) for r in rows] == [("lr", "higher", "2", "10.0")]
    warning = (
        f"warning: the claims: in {sweep_dir / 'study.yaml'} differ from those this sweep was run with "
        "(declared_claims.yaml); the report tests the claims recorded at its start"
    )
    assert warning in capsys.readouterr().err
    assert (sweep_dir / "claims.md").read_text().startswith(f"**Note:** the claims: in {sweep_dir / 'study.yaml'}")
    with pytest.raises(ConfigError, match=r"differ from those in .*declared_claims.yaml, declared before its runs"):
        run_sweep(build_study({**raw, "claims": edited}), resume=sweep_dir, quiet=True)
    assert yaml.safe_load((sweep_dir / "declared_claims.yaml").read_text()) == {"claims": claims}  # kept
    # claims added to a sweep that had none are as post hoc: the record says none
    bare = run_sweep(build_study(study_raw(tmp_path)), quiet=True).sweep_dir
    assert yaml.safe_load((bare / "declared_claims.yaml").read_text()) == {"claims": None}
    (bare / "study.yaml").write_text(yaml.safe_dump({**raw, "claims": claims}))
    assert report_dir(bare, None) == 0 and not (bare / "claims.csv").exists()
    # a sweep from before the record: its study.yaml's claims, as before
    (sweep_dir / "declared_claims.yaml").unlink()
    assert report_dir(sweep_dir, None) == 0
    assert [(r["family"], r["direction"]) for r in read_csv(sweep_dir / "claims.csv")] == [("edited", "lower")]
