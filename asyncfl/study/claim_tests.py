"""The claims of a study (:mod:`asyncfl.study.claims`), tested after its runs with a multiplicity correction.

A study's ``claims:`` list says which variant beats which, on which measure, and (optionally) by how much
the paper says it does.  ``report`` tests each claim on the differences variant − versus paired by seed
(the seeds where both have the measure; for a time to target: where both reached it):

- the mean paired difference with its Student-t 95 % interval (the report's own interval);
- a paired sign-flip permutation p-value, one-sided in the claim's direction: under "no difference" each
  paired difference is as likely to have either sign, so p is the share of the 2^n sign patterns whose
  sum is at least as far in the claimed direction as the observed one.  For n <= 16 every pattern is
  enumerated (exact; the smallest p it can give is 2^-n, so 5 seeds cannot go below 0.031 and, ranked
  first in a family of 2, not below 0.0625 after Holm).  Above 16 pairs, 100,000 random patterns from a
  fixed seed give p = (1 + hits) / (1 + 100,000) (Monte Carlo; the +1 counts the observed pattern, so p
  is never 0);
- Holm's step-down adjustment within each ``family`` (Holm 1979): with the m p-values of a family sorted
  ascending, p_(i) becomes max_{j <= i} min(1, (m − j + 1) · p_(j));
- the verdict at alpha = 0.05: ``supported`` when the adjusted p < 0.05 and the t interval lies on the
  claimed side of 0; ``contradicted`` when the t interval lies on the other side of 0 (whatever p says);
  ``not shown`` otherwise, with "effect larger than the paper's" or "effect smaller than the paper's"
  added when the interval leaves out the paper's effect size (which side, in the claim's direction);
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

from asyncfl.study.claims import ALPHA, EXACT_UP_TO, MONTE_CARLO_FLIPS, Claim, smallest_holm_p, smallest_p
from asyncfl.study.seed_statistics import CONFIDENCE, paired_values, t_interval

POWER = 0.8
MONTE_CARLO_SEED = 0


def sign_flip_p(differences: Sequence[float], direction: str) -> tuple[float, str]:
    """One-sided paired sign-flip p-value of ``differences`` in ``direction`` (higher: their sum is large)
    and how it was computed (``exact`` / ``Monte Carlo``).  No pair: p = 1, there is no evidence."""
    d = np.asarray(differences, dtype=np.float64) * (1 if direction == "higher" else -1)
    n = len(d)
    if n == 0:
        return 1.0, "exact"
    observed = d.sum()
    tolerance = 1e-9 * np.abs(d).sum()  # a pattern that ties the observed sum counts (rounding aside)
    if n <= EXACT_UP_TO:
        signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        return float(np.mean(signs @ d >= observed - tolerance)), "exact"
    rng = np.random.default_rng(MONTE_CARLO_SEED)
    hits, left = 0, MONTE_CARLO_FLIPS
    while left:  # in chunks, so that many pairs do not need one huge matrix
        chunk = min(left, 10_000)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(chunk, n))
        hits += int(np.sum(signs @ d >= observed - tolerance))
        left -= chunk
    return (1 + hits) / (1 + MONTE_CARLO_FLIPS), "Monte Carlo"


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order (see the module docstring)."""
    m = len(p_values)
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda j: p_values[j])):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def seeds_needed(sd: float, effect: float, power: float = POWER, alpha: float = ALPHA) -> int | None:
    """Pairs for a two-sided level-``alpha`` test to detect ``effect`` with ``power`` when the paired
    differences have standard deviation ``sd`` (normal approximation; at least 2, a t interval needs
    them).  None when either is unknown or the effect is 0."""
    if not (math.isfinite(sd) and math.isfinite(effect)) or effect == 0:
        return None
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return max(2, math.ceil((z * sd / abs(effect)) ** 2))


def verdict(adjusted_p: float, low: float, high: float, sign: int) -> str:
    """supported / contradicted / not shown for a claim that variant − versus has ``sign``."""
    claimed_side = low > 0 if sign > 0 else high < 0
    other_side = high < 0 if sign > 0 else low > 0
    if adjusted_p < ALPHA and claimed_side:
        return "supported"
    return "contradicted" if other_side else "not shown"


def beside_paper(low: float, high: float, sign: int, paper_effect: float) -> str:
    """Which side of the paper's effect an interval that leaves it out lies on, in the claim's direction:
    [low, high] is the interval of variant − versus, ``paper_effect`` > 0 the paper's size in the direction
    ``sign``."""
    nearest = min(sign * low, sign * high)  # the interval's end nearest to no effect, in the claim's direction
    return "effect larger than the paper's" if nearest > paper_effect else "effect smaller than the paper's"


@dataclass(frozen=True)
class Tested:
    """One claim with its paired differences (in the claim's unit) and p-value before correction."""

    claim: Claim
    differences: list[float]
    p: float
    method: str


def claim_rows(claims: Sequence[Claim], table: Mapping[str, Mapping[str, Mapping[int, float]]]) -> list[dict]:
    """claims.csv: one row per claim, in the study file's order; ``table`` is variant -> measure -> seed ->
    value (:func:`asyncfl.study.report.measure_table`)."""
    tested = []
    for claim in claims:
        scale = 1.0 if claim.unit == "virtual s" else 100.0
        own, other = (table.get(v, {}).get(claim.column, {}) for v in (claim.variant, claim.versus))
        differences = [scale * d for d in paired_values(own, other)]
        tested.append(Tested(claim, differences, *sign_flip_p(differences, claim.direction)))
    families: dict[str, list[int]] = {}
    for i, t in enumerate(tested):
        families.setdefault(t.claim.family, []).append(i)
    adjusted = [0.0] * len(tested)
    for members in families.values():
        for i, p in zip(members, holm([tested[i].p for i in members])):
            adjusted[i] = p
    return [_row(t, adjusted[i], len(families[t.claim.family])) for i, t in enumerate(tested)]


def _row(t: Tested, adjusted: float, family_size: int) -> dict:
    claim, n = t.claim, len(t.differences)
    interval = t_interval(t.differences)
    paper = claim.sign * claim.paper_effect if claim.paper_effect is not None else None
    known = n >= 2 and math.isfinite(interval.half_width)
    word = verdict(adjusted, interval.low, interval.high, claim.sign) if known else "not shown"
    inside = "" if paper is None or not known else ("yes" if interval.low <= paper <= interval.high else "no")
    if word == "not shown" and inside == "no":
        word += "; " + beside_paper(interval.low, interval.high, claim.sign, claim.paper_effect)
    sd = float(np.std(t.differences, ddof=1)) if n >= 2 else math.nan
    return {
        "family": claim.family, "variant": claim.variant, "versus": claim.versus, "measure": claim.measure,
        "direction": claim.direction, "unit": claim.unit, "pairs": n, "diff_mean": interval.mean,
        "diff_ci_low": interval.low, "diff_ci_high": interval.high, "diff_sd": sd, "p_sign_flip": t.p,
        "p_method": t.method, "family_size": family_size, "p_holm": adjusted, "verdict": word,
        "paper_effect": paper, "paper_effect_inside": inside,
        "seeds_needed": seeds_needed(sd, paper if paper is not None else interval.mean),
        "smallest_p": smallest_p(n), "smallest_p_holm": smallest_holm_p(n, family_size),
        "source": claim.source or "", "paper_numbers": claim.paper_numbers or "",
    }  # fmt: skip


def claim_markdown(rows: Sequence[Mapping]) -> list[dict[str, str]]:
    """The Markdown cells of :func:`claim_rows`."""
    out = []
    for r in rows:
        symbol = ">" if r["direction"] == "higher" else "<"
        interval = "—" if not math.isfinite(r["diff_mean"]) else f"{r['diff_mean']:+.2f}"
        if math.isfinite(r["diff_ci_low"]):
            interval += f" [{r['diff_ci_low']:+.2f}, {r['diff_ci_high']:+.2f}]"
        out.append({
            "family": r["family"], "claim": f"{r['variant']} {symbol} {r['versus']}",
            "measure": f"{r['measure']} ({r['unit']})", "pairs": str(r["pairs"]),
            f"difference [{CONFIDENCE:.0%} CI]": interval,
            "sign-flip p": f"{r['p_sign_flip']:.4f}" + (" (MC)" if r["p_method"] == "Monte Carlo" else ""),
            "Holm p": f"{r['p_holm']:.4f}", "verdict": r["verdict"],
            "paper's numbers": r["paper_numbers"] or "—",
            "paper's effect": "—" if r["paper_effect"] is None else f"{r['paper_effect']:+g}",
            "inside CI": r["paper_effect_inside"] or "—",
            "seeds needed": "—" if r["seeds_needed"] is None else str(r["seeds_needed"]),
            "smallest p (Holm)": f"{r['smallest_p']:.4g} ({r['smallest_p_holm']:.4g})",
            "source": r["source"],
        })  # fmt: skip
    return out


CLAIMS_INTRO = (
    "Claims declared in study.yaml before the runs. Difference = variant − versus paired by seed (accuracy in"
    " points, times in virtual s), mean with its 95 % Student-t interval. Sign-flip p: paired permutation test,"
    " one-sided in the claim's direction, exact over all 2^n sign patterns for n <= 16 pairs, else 100,000"
    " random patterns from a fixed seed (MC). Holm p: Holm's step-down correction within the family. Verdict at"
    " 0.05 after Holm: supported (Holm p < 0.05 and the interval on the claimed side), contradicted (the"
    " interval on the other side), else not shown (and, when the interval leaves out the paper's effect, whether"
    " ours is larger or smaller). Seeds needed: pairs for 80 % power at two-sided 5 % to"
    " detect the paper's effect (else the observed one) given the observed paired SD (normal approximation)."
    " Smallest p: the least a sign-flip test with these pairs can give (2^-n; 1/100,001 for MC), and after Holm"
    " when the claim ranks first in its family."
)
