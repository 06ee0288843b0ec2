"""The claims of a study (:mod:`asyncfl.study.claims`), tested after its runs with a multiplicity correction.

A study's ``claims:`` list says which variant beats which, on which measure, and (optionally) by how much
the paper says it does.  ``report`` tests each claim on the differences variant − versus paired by seed:

- the pairs: for an accuracy measure, the seeds where both runs have it.  For a time to a target, every
  seed where each run reached the target or ended: a run that never reached it, diverged or not, is
  censored at its horizon (:mod:`asyncfl.study.censoring`: its end, or for a run that diverged the horizon
  it was given, not the moment it diverged), a lower bound of its time to target.  This keeps the slow
  variant's misses in the comparison instead of dropping them (which once turned +12.3 into −1.0 s at a
  shorter horizon); the row says on how many of its seeds each variant reached the target;
- for a time to a target the test is censoring-aware, a paired rank test on the restricted times (a miss
  at its horizon): each pair's sign is Gehan's (+1 when the variant's time is known to be the larger, −1
  when the other's is, 0 when both missed or it cannot be told) and its score that sign times the rank of
  the restricted difference's size (Wilcoxon's signed rank, midranks for ties); the sign-flip test below
  runs on the scores, so a run that diverged early weighs one rank, not the distance from its horizon.
  The effect, the interval and each variant's cell are of the restricted times: the restricted mean time
  to target (RMST) of each variant over the pairs, and their difference, the mean paired difference.
  Rank test and interval are then two tests and may disagree, since a few far-off misses move the RMST and
  not the ranks (the verdict is the rank test's);
- a paired sign-flip permutation test (Fisher 1935; Good, *Permutation Tests*, 2nd ed., §3.1), one-sided,
  in the claim's direction and in the other one: under "no difference" each paired difference is as likely
  to have either sign, so p is the share of the 2^n sign patterns whose sum is at least as far in that
  direction as the observed one.  For n <= 16 every pattern is enumerated (exact; the smallest p it can
  give is 2^-n, so 5 seeds cannot go below 0.031 and, ranked first in a family of 2, not below 0.0625 after
  Holm).  Above 16 pairs, 100,000 random patterns from a fixed seed give p = (1 + hits) / (1 + 100,000)
  (Monte Carlo; the +1 counts the observed pattern, so p is never 0);
- the interval (of the paired differences; for times, of the restricted times): the same test inverted
  (Hartigan 1969, "Using subsample values as typical values"; Lehmann & Romano, *Testing Statistical
  Hypotheses*, §3.5): every shift δ such that neither one-sided test of d − δ rejects at 0.05.  A pattern
  flipping the set F of pairs reaches the observed sum of d − δ exactly when δ >= the mean of d over F, so
  the bounds are order statistics of those subset means.  Its lower end is above 0 exactly when the raw p
  in the "higher" direction is below 0.05 (and the upper end below 0 exactly when the raw "lower" p is), so
  for accuracy interval and p cannot disagree; each end is a one-sided 95 % bound, together a 90 %
  interval; too few pairs to reject any shift leave it unbounded (±∞);
- Holm's step-down adjustment within each ``family`` (Holm 1979), over each claim's p in its own
  direction, and apart over each claim's p on its other side (a claim without a family is in the study's
  one family; a claim on a sensitivity axis is one member of its family, or with ``across_axis: each`` one
  per axis value, each per-value verdict then corrected for the others as well): with the m p-values of a
  family sorted ascending, p_(i) becomes max_{j <= i} min(1, (m − j + 1) · p_(j)).  The families are
  declared (``family:``, ``families:``); beside each, the same adjustment over every claim of the study and
  the verdict it gives, so that a reader sees where a verdict rests on how the families were drawn;
- the verdict at alpha = 0.05, symmetric: ``supported`` when the Holm p in the claim's direction is below
  0.05, ``contradicted`` when the Holm p in the other direction is, ``inconclusive`` otherwise (with
  "effect larger / smaller than the paper's" added when the interval leaves out the paper's effect).
  Holm p >= raw p, so a supported or contradicted accuracy claim always has its interval on that side of 0; an
  interval off 0 with a Holm p >= 0.05 is inconclusive: significant alone, not in its family;
- the paper's effect is compared with the interval only when the paper measured it on the runs' data set
  (``paper_data:`` equal to both variants' data.dataset); otherwise it is shown as context, not tested;
- with a sensitivity axis (:mod:`asyncfl.study.sensitivity`) each claim is tested at every axis value: by
  default as an intersection–union test (it must hold at every value: each value at 0.05, one member of
  its Holm family, the weakest verdict), "depends on <axis>" only from a declared interaction test, and
  "equivalent" only from a declared margin's TOST (:mod:`asyncfl.study.axis_verdicts`);
- the seeds a study needs to resolve the effect at stake (the paper's effect, else the observed mean
  difference) with 80 % power in a two-sided 5 % test, normal approximation:
  n = ceil(((z_0.975 + z_0.8) · s / effect)²), s the observed paired standard deviation (at least 2).

Units: accuracy claims are read in points (percent), times to target in virtual seconds; ``paper_effect``
is the size of the effect in the claim's direction, in those units (positive).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy import stats

from asyncfl.study.axis_verdicts import across_axis, holm_by_unit, holm_units, tost_p
from asyncfl.study.censoring import pair_score, restricted, signed_ranks
from asyncfl.study.claims import (
    ALPHA,
    Claim,
    smallest_holm_p,
    smallest_p,
)
from asyncfl.study.seed_statistics import t_interval
from asyncfl.study.sign_flip import SignFlip, holm, sign_flip, sign_flip_p  # noqa: F401 (re-exported)

POWER = 0.8


def seeds_needed(sd: float, effect: float, power: float = POWER, alpha: float = ALPHA) -> int | None:
    """Pairs for a two-sided level-``alpha`` test to detect ``effect`` with ``power`` when the paired
    differences have standard deviation ``sd`` (normal approximation; at least 2, a t interval needs
    them).  None when either is unknown or the effect is 0."""
    if not (math.isfinite(sd) and math.isfinite(effect)) or effect == 0:
        return None
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return max(2, math.ceil((z * sd / abs(effect)) ** 2))


def verdict(p_claimed: float, p_other: float) -> str:
    """supported / contradicted / inconclusive from the Holm-adjusted one-sided p-values in the claim's
    direction and in the other one: the same test decides both ways."""
    if p_claimed < ALPHA:
        return "supported"
    return "contradicted" if p_other < ALPHA else "inconclusive"


def beside_paper(low: float, high: float, sign: int, paper_effect: float) -> str:
    """Which side of the paper's effect an interval that leaves it out lies on, in the claim's direction:
    [low, high] is the interval of variant − versus, ``paper_effect`` > 0 the paper's size in the direction
    ``sign``."""
    nearest = min(sign * low, sign * high)  # the interval's end nearest to no effect, in the claim's direction
    return "effect larger than the paper's" if nearest > paper_effect else "effect smaller than the paper's"


@dataclass(frozen=True)
class Pair:
    """One seed of a claim: both variants' values in the claim's unit; a time to a target one of them
    never reached is its run's end (``censored`` says whose)."""

    seed: int
    own: float
    other: float
    censored: str = ""

    @property
    def difference(self) -> float:
        return self.own - self.other

    @property
    def sign(self) -> int:
        """The pair's Gehan sign (:func:`asyncfl.study.censoring.pair_score`): +1 when the variant's time is
        known to be the larger, −1 when the other's is, 0 when it cannot be told (both censored: a tie)."""
        return pair_score(self.own, self.other, "variant" in self.censored, "versus" in self.censored)


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def claim_pairs(
    claim: Claim, table: Mapping[str, Mapping[str, Mapping[int, float]]], horizons: Mapping[str, Mapping[int, float]]
) -> list[Pair]:
    """The seeds a claim is tested on.  Accuracy: the seeds where both runs have the measure.  Time to a
    target: every seed where each run either reached it or ended, a miss taking the run's end (``horizons``:
    variant -> seed -> its last virtual time), so that a miss counts as later than any reach in that run
    (a lower bound of the true time: the censored-pair rule of the module docstring)."""
    scale = 1.0 if claim.unit == "virtual s" else 100.0
    own, other = (table.get(v, {}).get(claim.column, {}) for v in (claim.variant, claim.versus))
    pairs = []
    for seed in sorted(own.keys() & other.keys()):
        a, b = own[seed], other[seed]
        censored = [side for side, x in (("variant", a), ("versus", b)) if claim.unit == "virtual s" and not _finite(x)]
        if censored:  # a miss: restricted at its run's horizon
            a = restricted(a, horizons.get(claim.variant, {}).get(seed))
            b = restricted(b, horizons.get(claim.versus, {}).get(seed))
        if _finite(a) and _finite(b):
            pairs.append(Pair(seed, scale * a, scale * b, " and ".join(censored)))
    return pairs


def reached(claim: Claim, pairs: Sequence[Pair]) -> tuple[str, str]:
    """The seeds (of the pairs) where the variant and versus each reached a time-to target, as "k/n"."""
    if claim.unit != "virtual s":
        return "", ""
    n = len(pairs)
    return tuple(f"{sum(side not in p.censored for p in pairs)}/{n}" for side in ("variant", "versus"))  # type: ignore[return-value]


def claim_rows(
    claims: Sequence[Claim],
    table: Mapping[str, Mapping[str, Mapping[int, float]]],
    horizons: Mapping[str, Mapping[int, float]] | None = None,
    datasets: Mapping[str, str] | None = None,
) -> list[dict]:
    """claims.csv: one row per claim (and sensitivity-axis value), in the study file's order; ``table`` is
    variant -> measure -> seed -> value (:func:`asyncfl.study.report.measure_table`), ``horizons`` each
    run's end (for censored times to target), ``datasets`` each variant's data.dataset (the paper's effect
    is tested only against runs on the paper's data)."""
    tested = [(c, claim_pairs(c, table, horizons or {})) for c in claims]
    tests = [claim_test(c, pairs) for c, pairs in tested]
    tost = [tost_p([p.difference for p in pairs], c.margin) if c.margin else 1.0 for c, pairs in tested]
    units = holm_units(claims)  # a claim tested at every axis value is one member of its family
    groups: dict[str, list[list[int]]] = {}
    for unit in units:
        groups.setdefault(claims[unit[0]].family, []).append(unit)
    family = _holm_over(claims, tests, tost, groups.values())  # the declared families': the verdict's
    study = _holm_over(claims, tests, tost, [units])  # every claim of the study: beside it
    rows = []
    for i, (claim, pairs) in enumerate(tested):
        rows.append(_row(claim, pairs, tests[i], family[i], study[i], len(groups[claim.family]), datasets or {}))
        if any(c.margin for c in claims):  # the equivalence test's columns, where a claim declares a margin
            rows[-1].update({"margin": claim.margin, "p_tost": tost[i] if claim.margin else None,
                             "p_holm_tost": family[i].get("equivalent")})  # fmt: skip
    return across_axis(claims, rows, [{p.seed: p.difference for p in pairs} for _, pairs in tested])


def _holm_over(claims: Sequence[Claim], tests: Sequence[SignFlip], tost: Sequence[float], families) -> list[dict]:
    """Per claim, its Holm p in each direction ("higher" / "lower") and, with a margin, of its equivalence
    test ("equivalent"): each Holm-adjusted over the members of its family (``families``: per family, its
    members as lists of claim indices, :func:`~asyncfl.study.axis_verdicts.holm_units`); the claim's own
    direction, its other side and the equivalence tests apart."""
    held: list[dict[str, float]] = [{} for _ in claims]
    for units in families:
        for claimed in (True, False):

            def p_of(i: int, claimed: bool = claimed) -> float:
                return tests[i].p(_side(claims[i].direction, claimed))

            for i, p in holm_by_unit(units, p_of, claimed).items():
                held[i][_side(claims[i].direction, claimed)] = p
        with_margin = [unit for unit in units if claims[unit[0]].margin]
        for i, p in holm_by_unit(with_margin, tost.__getitem__, True).items():
            held[i]["equivalent"] = p
    return held


def claim_test(claim: Claim, pairs: Sequence[Pair]) -> SignFlip:
    """The claim's test.  Accuracy: the sign-flip test of the paired differences.  Time to target: the
    p-values of the sign-flip test of the pairs' signed ranks (censoring-aware: a tie where both missed, the
    missed one the later where one did), the interval that of the differences of the restricted times (the
    RMST difference, a miss at its horizon): two tests, which may disagree (far-off misses move the RMST, not
    the ranks)."""
    differences = sign_flip([p.difference for p in pairs])
    if claim.unit != "virtual s":
        return differences
    scores = sign_flip(signed_ranks([p.sign for p in pairs], [p.difference for p in pairs]))
    return SignFlip(scores.p_higher, scores.p_lower, differences.low, differences.high, scores.method)


def _side(direction: str, claimed: bool) -> str:
    return direction if claimed else _opposite(direction)


def _opposite(direction: str) -> str:
    return "lower" if direction == "higher" else "higher"


def paper_comparison(claim: Claim, datasets: Mapping[str, str]) -> str:
    """Whether the paper's effect is tested: "tested" when it was measured on the data of both variants'
    runs, else why it is context only."""
    if claim.paper_effect is None:
        return ""
    ours = sorted({str(datasets.get(v, "unknown")) for v in (claim.variant, claim.versus)})
    if claim.paper_data is None:
        return "context only: the paper's data set is not declared (paper_data:)"
    if ours != [claim.paper_data]:
        return f"context only: the paper's data is {claim.paper_data}, the runs' {', '.join(ours)}"
    return "tested"


def _row(claim: Claim, pairs: Sequence[Pair], test: SignFlip, held: Mapping[str, float],
         study: Mapping[str, float], size: int, datasets: Mapping[str, str]) -> dict:  # fmt: skip
    differences = [p.difference for p in pairs]
    n = len(differences)
    mean = float(np.mean(differences)) if n else math.nan
    paper = claim.sign * claim.paper_effect if claim.paper_effect is not None else None
    comparison = paper_comparison(claim, datasets)
    inside = ""
    if comparison == "tested" and paper is not None and n >= 2:
        inside = "yes" if test.low <= paper <= test.high else "no"
    word, study_word = (_verdict_words(claim, test, p, inside) for p in (held, study))
    sd = float(np.std(differences, ddof=1)) if n >= 2 else math.nan
    variant_reached, versus_reached = reached(claim, pairs)
    own, other = t_interval([p.own for p in pairs]), t_interval([p.other for p in pairs])  # RMSTs for times
    return {
        "family": claim.family, "group": claim.group or "", "variant": claim.variant, "versus": claim.versus,
        "measure": claim.measure, "direction": claim.direction, "unit": claim.unit, "axis": claim.axis or "",
        "axis_value": claim.axis_value or "", "pairs": n, "variant_reached": variant_reached,
        "versus_reached": versus_reached,
        "variant_mean": own.mean, "variant_ci_half_width": own.half_width, "versus_mean": other.mean,
        "versus_ci_half_width": other.half_width, "diff_mean": mean, "diff_ci_low": test.low,
        "diff_ci_high": test.high, "diff_sd": sd,
        "p_sign_flip": test.p(claim.direction), "p_other_side": test.p(_opposite(claim.direction)),
        "p_method": test.method, "family_size": size, "p_holm": held[claim.direction],
        "p_holm_other_side": held[_opposite(claim.direction)], "verdict": word,
        "family_declared": family_declared(claim, size), "p_holm_study": study[claim.direction],
        "p_holm_study_other_side": study[_opposite(claim.direction)], "verdict_study": study_word,
        "paper_effect": paper,
        "paper_data": claim.paper_data or "", "paper_comparison": comparison, "paper_effect_inside": inside,
        "seeds_needed": seeds_needed(sd, paper if paper is not None else mean),
        "smallest_p": smallest_p(n), "smallest_p_holm": smallest_holm_p(n, size),
        "source": claim.source or "", "paper_numbers": claim.paper_numbers or "",
    }  # fmt: skip


def _verdict_words(claim: Claim, test: SignFlip, held: Mapping[str, float], inside: str) -> str:
    """The verdict from one set of Holm p-values (``held``: direction -> p), with the paper's side where the
    interval leaves its effect out."""
    word = verdict(held[claim.direction], held[_opposite(claim.direction)])
    if word == "inconclusive" and held.get("equivalent", 1.0) < ALPHA:  # TOST: inside ±margin
        return f"equivalent (within ±{claim.margin:g} {claim.unit})"
    if word == "inconclusive" and inside == "no" and claim.paper_effect is not None:
        word += "; " + beside_paper(test.low, test.high, claim.sign, claim.paper_effect)
    return word


def family_declared(claim: Claim, size: int) -> str:
    """How the claim's Holm family came about: ``default`` (the study file named none: all its claims),
    ``declared`` (family: or families:), ``declared singleton`` (one test alone: no correction)."""
    if not claim.family_declared:
        return "default"
    return "declared singleton" if size == 1 else "declared"


def seed_rows(
    claims: Sequence[Claim],
    table: Mapping[str, Mapping[str, Mapping[int, float]]],
    horizons: Mapping[str, Mapping[int, float]] | None = None,
) -> list[dict]:
    """claims_seeds.csv: one row per claim and seed it was tested on, with both variants' values (in the
    claim's unit) and their difference, so that every p-value and interval can be recomputed by hand."""
    rows = []
    for claim in claims:
        for pair in claim_pairs(claim, table, horizons or {}):
            rows.append({
                "family": claim.family, "variant": claim.variant, "versus": claim.versus,
                "measure": claim.measure, "unit": claim.unit, "axis_value": claim.axis_value or "",
                "seed": pair.seed, "variant_value": pair.own, "versus_value": pair.other,
                "difference": pair.difference, "censored": pair.censored,
            })  # fmt: skip
    return rows


def seed_markdown(rows: Sequence[Mapping]) -> list[dict[str, str]]:
    """The Markdown cells of :func:`seed_rows`."""
    return [{
        "family": r["family"], "claim": f"{r['variant']} vs {r['versus']}", "measure": f"{r['measure']} ({r['unit']})",
        "seed": str(r["seed"]), "variant": f"{r['variant_value']:.2f}", "versus": f"{r['versus_value']:.2f}",
        "difference": f"{r['difference']:+.2f}", "censored (run end, not reached)": r["censored"] or "—",
    } for r in rows]  # fmt: skip


def _bound(x: float) -> str:
    return f"{x:+.2f}" if math.isfinite(x) else ("−∞" if x < 0 else "+∞")


def family_cell(row: Mapping) -> str:
    """A claim's family in claims.md: its name, the tests in it and how it was declared (the claim's own
    family: label where a families: entry merged it)."""
    how = {"default": ", default: the study", "declared singleton": ", singleton: uncorrected"}
    group = f"; {row['group']}" if row.get("group") else ""
    return f"{row['family']} ({row['family_size']}{how.get(row['family_declared'], '')}){group}"


def claim_markdown(rows: Sequence[Mapping]) -> list[dict[str, str]]:
    """The Markdown cells of :func:`claim_rows`: the same columns in every row (a table mixing accuracy and
    time claims shows "—" for what a claim does not have, e.g. an accuracy claim's "reached")."""
    any_reached = any(r["variant_reached"] for r in rows)
    out = []
    for r in rows:
        symbol = ">" if r["direction"] == "higher" else "<"
        interval = "—" if not math.isfinite(r["diff_mean"]) else f"{r['diff_mean']:+.2f}"
        interval += f" [{_bound(r['diff_ci_low'])}, {_bound(r['diff_ci_high'])}]"
        mc = " (MC)" if r["p_method"] == "Monte Carlo" else ""
        cells = {
            "family (tests)": family_cell(r), "claim": f"{r['variant']} {symbol} {r['versus']}",
            "measure": f"{r['measure']} ({r['unit']})", "pairs": str(r["pairs"]),
        }  # fmt: skip
        if any_reached:
            reached = f"{r['variant_reached']}, {r['versus_reached']}" if r["variant_reached"] else "—"
            cells["reached (variant, versus)"] = reached
        cells.update({
            f"difference [{1 - 2 * ALPHA:.0%} sign-flip interval]": interval,
            "sign-flip p (other side)": f"{r['p_sign_flip']:.4f} ({r['p_other_side']:.4f}){mc}",
            "Holm p (other side)": f"{r['p_holm']:.4f} ({r['p_holm_other_side']:.4f})",
            "verdict": r["verdict"] + (f" (partial study: {r['partial']})" if r.get("partial") else ""),
            "study-wide Holm p (other side)": f"{r['p_holm_study']:.4f} ({r['p_holm_study_other_side']:.4f})",
            "verdict, study-wide Holm": r["verdict_study"],
        })  # fmt: skip
        if "verdict_across_axis" in r:
            cells["verdict across the axis"] = r["verdict_across_axis"]
        cells.update({
            "paper's numbers": r["paper_numbers"] or "—",
            "paper's effect": "—" if r["paper_effect"] is None else f"{r['paper_effect']:+g}",
            "inside interval": r["paper_effect_inside"] or ("—" if r["paper_effect"] is None else "context only"),
            "seeds needed": "—" if r["seeds_needed"] is None else str(r["seeds_needed"]),
            "smallest p (Holm)": f"{r['smallest_p']:.4g} ({r['smallest_p_holm']:.4g})",
            "source": r["source"],
        })  # fmt: skip
        out.append(cells)
    return out


CLAIMS_INTRO = (
    "Claims declared in study.yaml before the runs. Difference = variant − versus paired by seed (accuracy in"
    " points, times in virtual s; 'reached' says on how many seeds each got there). A time to a target a run"
    " never reached is censored at its horizon (its end; for a run that diverged, the horizon it was given),"
    " and the means and difference are restricted means (RMST: a miss counts as its horizon); its test is a"
    " paired rank test: each pair's sign (+1 when the variant was known to be later, −1 earlier, 0 when both"
    " missed or it cannot be told) times the rank of the restricted difference's size, sign-flip tested."
    " Sign-flip p: paired permutation test, one-sided, in the claim's direction and (other side) in the opposite"
    " one, exact over all 2^n sign patterns for n <= 16 pairs, else 100,000 random patterns from a fixed seed"
    " (MC). Holm p: Holm's step-down correction within the claim's family, over the claims' own directions and"
    " apart over their other sides. Family (tests): the family the verdict is corrected in, as declared (family:"
    " or families:, after ';' the claim's own family: label where families: merged it), 'default: the study'"
    " where the study file declares none (all its claims), 'singleton: uncorrected' where one test is a family"
    " alone. Verdict at 0.05 after the declared family's Holm: supported (Holm p < 0.05), contradicted"
    " (Holm p on the other side < 0.05), else inconclusive (and, when the interval leaves out the paper's"
    " effect, whether ours is larger or smaller). Beside it, the same Holm correction over every claim of the"
    " study (study-wide) and the verdict it would give: where the two differ, the verdict rests on the"
    " families. Interval: every shift that neither one-sided sign-flip test at"
    " 5 % rejects (the test inverted, so for accuracy it excludes 0 exactly when a raw one-sided p is below"
    " 0.05; ±∞ when there are too few pairs to reject any shift). The paper's effect is tested only when the"
    " runs use the data set it was measured on (paper_data:), else shown as context. Seeds needed: pairs for"
    " 80 % power at two-sided 5 % to detect the paper's effect (else the observed one) given the observed paired"
    " SD (normal approximation). Smallest p: the least a sign-flip test with these pairs can give (2^-n; 1/100,001 for"
    " MC), and after Holm when the claim ranks first in its family. Every pair: claims_seeds.csv."
)
