"""Issue 47, item 4: every word of a verdict comes from a test declared before the runs.  "equivalent" only
from two one-sided tests inside a declared margin (TOST), "at every <axis> value" from an intersection–union
test (each value at 0.05, no correction among the values), "depends on <axis>" only from a declared
interaction test; all on hand-counted sign patterns (6 pairs: 64 patterns)."""

from __future__ import annotations

import math

import pytest

from asyncfl.config import ConfigError
from asyncfl.study import build_study
from asyncfl.study.axis_verdicts import interaction_p, tost_p
from asyncfl.study.claim_tests import claim_rows
from asyncfl.study.claims import Claim, study_claims
from tests.study.test_verdicts import axis_study

SMALL = [0.1, 0.2, -0.1, 0.3, -0.2, 0.1]  # points


def claim(**fields) -> Claim:
    return Claim(**{"variant": "a", "versus": "b", "measure": "final_accuracy", "direction": "higher", **fields})


def paired(diffs: list[float]) -> dict:
    """a = b + diffs (points) seed by seed, b at 50 %."""
    return {"a": {"final accuracy": {s: 0.5 + d / 100 for s, d in enumerate(diffs)}},
            "b": {"final accuracy": dict.fromkeys(range(len(diffs)), 0.5)}}  # fmt: skip


def test_tost_p_counts_the_sign_patterns_of_both_shifted_tests():
    """margin 0.25: d + 0.25 is positive on every seed, so only the observed pattern reaches its sum (1/64);
    d − 0.25 = (−0.15, −0.05, −0.35, +0.05, −0.45, −0.15) sums to −1.1, and flipping a set F reaches it when
    Σ_F ≥ 0: {}, {+0.05}, {+0.05, −0.05}, so p = 3/64 and TOST p = max(1/64, 3/64).  margin 0.2: d − 0.2 =
    (−0.1, 0, −0.3, +0.1, −0.4, −0.1): Σ_F ≥ 0 for the 8 sets built from {0, +0.1} and at most one −0.1 with
    +0.1 ({}, {0}, {+.1}, {0, +.1}, {+.1, −.1}×2, {0, +.1, −.1}×2): 8/64."""
    assert tost_p(SMALL, 0.25) == pytest.approx(3 / 64)
    assert tost_p(SMALL, 0.2) == pytest.approx(8 / 64)
    assert tost_p([], 1.0) == 1.0


def test_equivalent_only_within_a_declared_margin_and_otherwise_inconclusive():
    """The same differences: with margin 0.25 equivalent (3/64 < 0.05, and the 90 % interval lies inside
    ±0.25), with 0.2 inconclusive (8/64), and without a margin inconclusive however small the mean."""
    table = paired(SMALL)
    wide, narrow, bare = (claim_rows([claim(**m)], table)[0] for m in ({"margin": 0.25}, {"margin": 0.2}, {}))
    assert wide["verdict"] == "equivalent (within ±0.25 points)"
    assert wide["p_tost"] == pytest.approx(3 / 64) and wide["p_holm_tost"] == pytest.approx(3 / 64)
    assert -0.25 < wide["diff_ci_low"] and wide["diff_ci_high"] < 0.25
    assert narrow["verdict"] == "inconclusive" and narrow["p_tost"] == pytest.approx(8 / 64)
    assert bare["verdict"] == "inconclusive" and "p_tost" not in bare  # no margin in the study: no column


def test_a_significant_difference_is_never_called_equivalent():
    rows = claim_rows([claim(margin=100.0)], paired([1, 2, 3, 4, 5, 6]))
    assert rows[0]["verdict"] == "supported" and rows[0]["p_holm"] == pytest.approx(1 / 64)


def rows_on_axis(tmp_path, h1: list[float], h2: list[float], **fields) -> list[dict]:
    """The claim fast > slow at history h1 and h2 (fast − slow in points per seed)."""
    raw = axis_study(tmp_path)
    raw["claims"] = [{**raw["claims"][0], **fields}]
    claims = study_claims(raw, "study.yaml")
    table = {"slow": {"final accuracy": dict.fromkeys(range(len(h1)), 0.5)},
             "fast.h1": {"final accuracy": {s: 0.5 + d / 100 for s, d in enumerate(h1)}},
             "fast.h2": {"final accuracy": {s: 0.5 + d / 100 for s, d in enumerate(h2)}}}  # fmt: skip
    return claim_rows(claims, table)


H1 = [-1, 1, 3, 4, 5, 6]  # Σ_F ≤ 0 for {}, {−1}, {−1, +1}: p = 3/64 = 0.047
H2 = [-1, 2, 3, 4, 5, 6]  # {}, {−1}: p = 2/64 = 0.031


def test_a_claim_at_every_axis_value_is_an_intersection_union_test(tmp_path):
    """The default (across_axis: every): supported when each value's own p is below 0.05; the claim is one
    test, p = max(3/64, 2/64) = 3/64.  Corrected among the values (across_axis: each, Holm over 2) the
    smaller becomes 2 × 2/64 = 0.0625 and neither value is supported."""
    rows = rows_on_axis(tmp_path, H1, H2)
    assert [(r["p_sign_flip"], r["p_holm"], r["family_size"]) for r in rows] == [
        (pytest.approx(3 / 64), pytest.approx(3 / 64), 1), (pytest.approx(2 / 64), pytest.approx(3 / 64), 1)
    ]  # fmt: skip
    assert {(r["verdict"], r["verdict_across_axis"]) for r in rows} == {
        ("supported", "supported at every history value")
    }
    each = rows_on_axis(tmp_path, H1, H2, across_axis="each")
    assert [r["verdict"] for r in each] == ["inconclusive", "inconclusive"]
    assert [r["p_holm"] for r in each] == [pytest.approx(4 / 64), pytest.approx(4 / 64)]


def test_the_weakest_value_decides_the_claim_at_every_value(tmp_path):
    """h1 +1 .. +6 (1/64), h2 0 everywhere (p 1): not supported at every value (max p = 1), and not
    contradicted (h2's other side is 1).  h2 −1 .. −6: its other side 1/64 times 2 values = 2/64 < 0.05, so
    the claim fails at some value: contradicted at every value's row."""
    level = rows_on_axis(tmp_path, [1, 2, 3, 4, 5, 6], [0] * 6)
    assert {r["verdict_across_axis"] for r in level} == {"inconclusive at every history value"}
    against = rows_on_axis(tmp_path, [1, 2, 3, 4, 5, 6], [-1, -2, -3, -4, -5, -6])
    assert [r["p_holm_other_side"] for r in against] == [pytest.approx(2 / 64)] * 2
    assert {r["verdict"] for r in against} == {"contradicted"}


def test_depends_on_the_axis_only_from_the_declared_interaction_test(tmp_path):
    """h1 +1 .. +6, h2 0: the differences of differences are +1 .. +6, one-sided p 1/64, two-sided 2/64 <
    0.05: depends on history.  Undeclared, the same rows only say the words differ.  h2 equal to h1 seed by
    seed: differences of differences all 0, p = 1: no dependence shown."""
    rows = rows_on_axis(tmp_path, [1, 2, 3, 4, 5, 6], [0] * 6, across_axis="each", interaction=True)
    assert rows[0]["p_interaction"] == pytest.approx(2 / 64)
    assert rows[0]["verdict_across_axis"] == (
        "differs by history value (h1: supported; h2: inconclusive); depends on history (interaction sign-flip, "
        "differences of differences, 6 seeds, Holm p 0.0312)"
    )
    plain = rows_on_axis(tmp_path, [1, 2, 3, 4, 5, 6], [0] * 6, across_axis="each")
    assert "depends on" not in plain[0]["verdict_across_axis"] and "p_interaction" not in plain[0]
    same = rows_on_axis(tmp_path, [1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6], interaction=True)
    assert same[0]["verdict_across_axis"].endswith("; no dependence on history shown (interaction sign-flip, "
                                                   "differences of differences, 6 seeds, Holm p 1.0000)")  # fmt: skip


def test_three_axis_values_use_friedmans_test_blocked_by_seed():
    """Differences (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6) on 4 seeds: each seed ranks the values 1, 2, 3,
    rank sums 4, 8, 12; χ² = 12 / (n k (k + 1)) · Σ R² − 3 n (k + 1) = 12 / 48 · 224 − 48 = 8 with 2 degrees
    of freedom, p = exp(−8 / 2) = e^−4.  A seed only one value has is left out."""
    by_value = {"a": {0: 1, 1: 2, 2: 3, 3: 4, 9: 7}, "b": {0: 2, 1: 3, 2: 4, 3: 5}, "c": {0: 3, 1: 4, 2: 5, 3: 6}}
    p, test, seeds = interaction_p(by_value)
    assert (p, test, seeds) == (pytest.approx(math.exp(-4)), "Friedman", 4)


def test_an_interaction_needs_a_claim_on_the_axis(tmp_path):
    raw = axis_study(tmp_path)
    raw["claims"] = [{**raw["claims"][0], "interaction": True}]
    raw["sensitivity"] = {**raw["sensitivity"], "variants": ["slow"]}
    raw["compare"] = raw["compare"] + [{"name": "other"}]
    raw["claims"][0].update(variant="fast", versus="other")
    with pytest.raises(ConfigError) as err:
        build_study(raw)
    assert "claims[0].interaction: tests the effect across a sensitivity axis, but neither variant nor versus " \
        "is on one (variants on the axis: slow)" in str(err.value)  # fmt: skip
    with pytest.raises(ConfigError, match=r"claims\[0\].margin: Input should be greater than 0"):
        build_study({**axis_study(tmp_path), "claims": [{**axis_study(tmp_path)["claims"][0], "margin": -1}]})
