"""Times to a target as survival data (issue 47, item 2): a miss, diverged runs included, is censored at the
run's horizon; the paired test gives each pair a sign (Gehan: +1 / −1 / 0) times the rank of its restricted
difference and flips their signs; the effect and each variant's cell are restricted mean times (RMST), so the
cells subtract to the difference."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from asyncfl.output.reading import read_csv
from asyncfl.study import censoring
from asyncfl.study.censoring import pair_score, run_horizons, signed_ranks
from asyncfl.study.claim_tests import claim_pairs, claim_rows
from asyncfl.study.claims import Claim
from asyncfl.study.report import write_report
from asyncfl.study.seed_statistics import RunRecord

TIME = "time to 0.8 (virtual s)"
MISS = math.nan


def time_claim(direction: str = "lower") -> Claim:
    return Claim(variant="a", versus="b", measure="time_to:0.8", direction=direction)


def times(a: list[float], b: list[float]) -> dict:
    return {"a": {TIME: dict(enumerate(a))}, "b": {TIME: dict(enumerate(b))}}


def horizons(n: int, horizon: float) -> dict:
    return {v: dict.fromkeys(range(n), horizon) for v in "ab"}


def test_five_seeds_by_hand_scores_rmst_and_the_exact_p():
    """Horizon 240 s.  a = 100, 120, miss, 90, miss; b = 110, miss, miss, 80, 200.  Pair by pair (a − b):
    100 < 110: −1; 120 against b's miss (later than 240): −1; both missed: a tie, 0; 90 > 80: +1; a's miss
    (later than 240) against 200: +1.  Signs −1, −1, 0, +1, +1; the restricted differences −10, −120, 0, +10,
    +40 rank by size among the signed pairs 1.5, 4, —, 1.5, 3: scores −1.5, −4, 0, +1.5, +3, sum −1.  A sign
    pattern gives 10 − 2 · (ranks made negative), the tie changing nothing (so counts double over 2^5).  "a
    faster" (lower), sum <= −1: negative ranks summing to >= 5.5: {4, 1.5} twice, {4, 3}, {1.5, 1.5, 3},
    {4, 1.5, 1.5}, {4, 1.5, 3} twice, all four: 8 of 16, p = 1/2.  The other side, sum >= −1: negative
    ranks <= 5.5: 16 − 6 = 10 of 16 (the six sets above over 5.5), p = 5/8.
    RMST a = (100 + 120 + 240 + 90 + 240) / 5 = 158, b = (110 + 240 + 240 + 80 + 200) / 5 = 174: −16 s,
    the mean of the restricted differences."""
    table = times([100, 120, MISS, 90, MISS], [110, MISS, MISS, 80, 200])
    pairs = claim_pairs(time_claim(), table, horizons(5, 240.0))
    assert [p.sign for p in pairs] == [-1, -1, 0, 1, 1]
    assert [p.difference for p in pairs] == [-10, -120, 0, 10, 40]
    assert signed_ranks([-1, -1, 0, 1, 1], [-10, -120, 0, 10, 40]) == [-1.5, -4, 0, 1.5, 3]
    (row,) = claim_rows([time_claim()], table, horizons(5, 240.0))
    assert (row["p_sign_flip"], row["p_other_side"], row["verdict"]) == (1 / 2, 5 / 8, "inconclusive")
    assert (row["variant_mean"], row["versus_mean"], row["diff_mean"]) == pytest.approx((158.0, 174.0, -16.0))
    assert row["variant_mean"] - row["versus_mean"] == pytest.approx(row["diff_mean"])  # the columns subtract
    assert (row["variant_reached"], row["versus_reached"]) == ("3/5", "3/5")


def test_three_seeds_exact_p_over_the_eight_patterns():
    """Horizon 100 s.  a = 50, 60, miss; b = 70, miss, miss: restricted differences −20, −40, 0 (a censored
    tie), scores −1, −2, 0, sum −3.  Of the 2³ = 8 sign patterns only those keeping both negative reach a sum
    <= −3: 2 of 8 (the tie flipped or not), p = 1/4; the other side (sum >= −3): every pattern, p = 1.
    RMST a = (50 + 60 + 100) / 3 = 70, b = (70 + 100 + 100) / 3 = 90."""
    (row,) = claim_rows([time_claim()], times([50, 60, MISS], [70, MISS, MISS]), horizons(3, 100.0))
    assert (row["p_sign_flip"], row["p_other_side"]) == (1 / 4, 1.0)
    assert (row["variant_mean"], row["versus_mean"], row["diff_mean"]) == pytest.approx((70.0, 90.0, -20.0))


def test_pair_scores_censored_ties_and_undetermined_pairs():
    """Both censored: a tie whatever their horizons; one censored at its horizon is later than a time reached
    by then, but not known to be later than a time reached after it (another horizon): 0."""
    assert pair_score(240.0, 240.0, True, True) == 0 and pair_score(300.0, 240.0, True, True) == 0
    assert pair_score(240.0, 240.0, True, False) == 1  # reached exactly at the other's horizon: still earlier
    assert pair_score(250.0, 240.0, False, True) == 0  # reached at 250, the other unseen after 240
    assert pair_score(80.0, 80.0, False, False) == 0 and pair_score(79.0, 80.0, False, False) == -1


def test_a_censored_seed_weighs_one_rank_not_its_distance_from_the_horizon():
    """a is slower than b by 10 s on 6 of 7 seeds; on seed 6 b misses (censored at 240) where a reached it at
    30 s.  The restricted differences +10 × 6, −210 have a mean of −150 / 7 = −21.4 s: the one censored seed
    turns the mean around.  Ranked, it weighs 7 against 6 × 3.5 (the midrank of 1 … 6): sum +14.  A pattern
    gives 28 − 2 · (ranks made negative); "a slower" (higher), sum >= 14: negative ranks <= 7: none, one 3.5
    (6), two 3.5 (15), the 7 alone: 23 of 128.  "a faster" (lower), sum <= 14: negative ranks >= 7: all but
    none and one 3.5: 121 of 128."""
    a = [110, 120, 130, 140, 150, 160, 30]
    b = [100, 110, 120, 130, 140, 150, MISS]
    (row,) = claim_rows([time_claim("higher")], times(a, b), horizons(7, 240.0))
    assert (row["p_sign_flip"], row["p_other_side"]) == (23 / 128, 121 / 128)
    assert row["diff_mean"] == pytest.approx(-150 / 7)


def run(path: Path, reached_at: float | None, end: float, status: str = "finished", stop: dict | None = None) -> Path:
    """A run evaluated every 10 s up to ``end``, at 0.9 from ``reached_at`` on (never when None)."""
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump({"data": {"dataset": "digits"}, "stop": stop or {"rounds": 10}}))
    rows = ["time,round,test_accuracy"]
    for i, t in enumerate(range(10, int(end) + 1, 10), start=1):
        rows.append(f"{t},{i},{0.9 if reached_at is not None and t >= reached_at else 0.1}")
    (path / "metrics.csv").write_text("\n".join(rows) + "\n")
    (path / "summary.json").write_text(json.dumps({"status": status, "virtual_time_s": end, "final_accuracy": 0.1}))
    return path


def test_a_diverged_run_is_censored_at_the_horizon_not_where_it_diverged(tmp_path):
    """a's seeds 0–2 end (stop.rounds) at 240, 250, 260 s; its seed 3 diverged at 60 s before reaching the
    target: censored at the median end of a's runs that did not diverge, 250 s, not at 60.  b reached it at
    100 s on seed 3: the pair is 250 − 100 = +150 (a later, score +1), where censoring at the divergence
    made it −40 (a "faster").  A diverged run with stop.virtual_time_s: 300 is censored at 300."""
    records = [RunRecord("a", s, run(tmp_path / "a" / f"seed{s}", 50, end)) for s, end in enumerate((240, 250, 260))]
    records.append(RunRecord("a", 3, run(tmp_path / "a" / "seed3", None, 60, "diverged")))
    records += [RunRecord("b", s, run(tmp_path / "b" / f"seed{s}", 100, 240)) for s in range(4)]
    assert run_horizons(records) == {"a": {0: 240, 1: 250, 2: 260, 3: 250}, "b": dict.fromkeys(range(4), 240)}
    write_report(tmp_path, records, None, [0.8], [time_claim()])
    seeds = read_csv(tmp_path / "claims_seeds.csv")
    assert [(r["variant_value"], r["difference"], r["censored"]) for r in seeds][3] == ("250.0", "150.0", "variant")
    (row,) = read_csv(tmp_path / "claims.csv")
    assert float(row["variant_mean"]) == pytest.approx((50 * 3 + 250) / 4)  # RMST over all 4 seeds
    declared = run(tmp_path / "c" / "seed0", None, 60, "diverged", {"virtual_time_s": 300})
    assert run_horizons([RunRecord("c", 0, declared)]) == {"c": {0: 300.0}}


def test_the_half_horizon_check_cuts_a_diverged_run_with_the_same_rule():
    """One rule for where a diverged run would have stopped: the paper tables import it."""
    from tests.study.test_report import _reproduce_papers

    assert _reproduce_papers().planned_horizon is censoring.planned_horizon


def test_a_family_mixing_higher_and_lower_adjusts_each_claims_other_side():
    """Family f: a > b (higher), differences +1 … +5 points: p higher 1/32, other side (lower) 1.  c < b
    (lower), differences +5, +4, +3, +1, −1: other side (higher) 3/32 (the flipped set sums to <= 0: none,
    {−1}, {+1, −1}), claimed side (lower) 31/32 (all but flipping {−1} alone).  Holm over the claimed sides
    {1/32, 31/32}: a 2/32, c 31/32; over the other sides {1, 3/32}: c 2 · 3/32 = 3/16, a 1.  Grouped by
    absolute direction (the old column) c's other side was Holm over {1/32, 3/32}: 3/32, and its claimed side
    Holm over {1, 31/32}: 1."""
    table = {
        "a": {"final accuracy": {s: 0.5 + d / 100 for s, d in enumerate([1, 2, 3, 4, 5])}},
        "b": {"final accuracy": dict.fromkeys(range(5), 0.5)},
        "c": {"final accuracy": {s: 0.5 + d / 100 for s, d in enumerate([5, 4, 3, 1, -1])}},
    }
    higher = Claim(family="f", variant="a", versus="b", measure="final_accuracy", direction="higher")
    lower = Claim(family="f", variant="c", versus="b", measure="final_accuracy", direction="lower")
    a, c = claim_rows([higher, lower], table)
    assert (a["p_sign_flip"], a["p_other_side"], c["p_sign_flip"], c["p_other_side"]) == (1 / 32, 1, 31 / 32, 3 / 32)
    assert (a["p_holm"], a["p_holm_other_side"]) == (2 / 32, 1.0)
    assert (c["p_holm"], c["p_holm_other_side"]) == (31 / 32, 3 / 16)
    assert a["verdict"] == c["verdict"] == "inconclusive"


def test_a_published_reports_claims_section_is_replaced_up_to_the_next_section():
    """A study read from its archive keeps its report, but its claims section is rewritten with the claims."""
    from tests.study.test_report import _reproduce_papers

    rp = _reproduce_papers()
    text = "# r\n\ntable\n\n## Declared claims\n\nold claims\n\n## Tuning\n\nkept\n"
    new = rp.with_section(text, "## Declared claims", "new claims\n")
    assert new == "# r\n\ntable\n\n## Declared claims\n\nnew claims\n\n## Tuning\n\nkept\n"
    assert rp.with_section("no claims\n", "## Declared claims", "x") == "no claims\n"
    last = rp.with_section("## Declared claims\n\nold\n", "## Declared claims", "new\n")
    assert last == "## Declared claims\n\nnew\n"
