"""The words a claim's verdict may use beyond supported / contradicted, each from a test declared before
the runs (:mod:`asyncfl.study.claim_tests` computes the per-claim tests this module combines):

- **equivalent** (``claims[].margin: m``, in the claim's unit): two one-sided tests (TOST; Schuirmann 1987,
  *J. Pharmacokin. Biopharm.* 15:657) of the paired differences d, each the sign-flip test at ALPHA: "d + m
  is above 0" and "d − m is below 0".  Its p is the larger of the two (an intersection–union test: both must
  reject, so neither needs a correction for the other), and it rejects exactly when the claim's
  (1 − 2·ALPHA) sign-flip interval lies inside (−m, +m).  Without a declared margin, or when TOST does not
  reject, a difference that is not significant is "inconclusive": it is never read as "level".  A time to
  target is tested on its restricted times (a miss at its horizon), as its interval is.
- **at every <axis> value** (``across_axis: every``, the default for a claim on a sensitivity axis): the
  claim must hold whichever value a reviewer prefers, an intersection–union test (Berger 1982,
  *Technometrics* 24:295): supported only when every value's test rejects at ALPHA, so its p is the largest
  of the values' p, and the values need no correction among themselves; it is one test in its Holm family.
  Its other side ("fails at some value") is a union: the smallest of the values' p times their number
  (Bonferroni).  Every value's row carries the claim's verdict, the weakest over the values.
  ``across_axis: each`` tests every value as a claim of its own (each one in the family, as before issue 47).
- **depends on <axis>** (``interaction: true``): a test that the effect differs between the axis values, on
  the seeds every value has.  Two values: the sign-flip test of the per-seed differences of differences
  (d at the first value − d at the second), two-sided (twice the smaller one-sided p), exact like every
  other test here.  Three or more: Friedman's rank test (Friedman 1937) with the seeds as blocks (a seed
  shares its data split and client draws across the values, so blocking by seed removes that; ranks need
  no normality).  The study's interaction tests are Holm-corrected together.  Without a declared test,
  verdicts that differ between values say "differs by value … (dependence not tested)": a difference in
  words may be power, not dependence.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from scipy import stats

from asyncfl.study.claims import ALPHA, Claim
from asyncfl.study.sign_flip import holm, sign_flip


def tost_p(differences: Sequence[float], margin: float) -> float:
    """The TOST p of ``differences`` lying within ±``margin`` (see the module docstring); 1 without a pair."""
    if not len(differences):
        return 1.0
    above = sign_flip([d + margin for d in differences]).p_higher
    below = sign_flip([d - margin for d in differences]).p_lower
    return max(above, below)


def interaction_p(by_value: Mapping[str, Mapping[int, float]]) -> tuple[float, str, int]:
    """(p, test, seeds) of "the paired difference is the same at every axis value": ``by_value`` maps each
    value to seed -> difference; only seeds every value has count (see the module docstring)."""
    seeds = sorted(set.intersection(*(set(d) for d in by_value.values()))) if by_value else []
    columns = [np.array([d[s] for s in seeds]) for d in by_value.values()]
    if len(columns) < 2 or len(seeds) < 2:
        return 1.0, "none (fewer than 2 values or seeds)", len(seeds)
    if len(columns) == 2:
        test = sign_flip(columns[0] - columns[1])
        return min(1.0, 2 * min(test.p_higher, test.p_lower)), "sign-flip, differences of differences", len(seeds)
    return float(stats.friedmanchisquare(*columns).pvalue), "Friedman", len(seeds)


def holm_units(claims: Sequence[Claim]) -> list[list[int]]:
    """The members of Holm's correction, as lists of claim indices: a claim tested at every axis value
    (``across_axis: every``) is one member over all its values, any other claim row a member of its own."""
    units: dict[tuple, list[int]] = {}
    for i, claim in enumerate(claims):
        key = claim.declared if claim.axis and claim.across_axis == "every" else (i,)
        units.setdefault(key, []).append(i)
    return list(units.values())


def unit_p(ps: Sequence[float], claimed: bool) -> float:
    """A member's p from its rows' p-values: in the claim's direction the largest (every value must reject),
    on the other side the smallest times their number (some value rejects)."""
    return max(ps) if claimed else min(1.0, len(ps) * min(ps))


def holm_by_unit(units: Sequence[Sequence[int]], p_of, claimed: bool) -> dict[int, float]:
    """Holm over ``units`` (one family): claim index -> its member's adjusted p; ``p_of(i)`` a row's raw p."""
    raw = [unit_p([p_of(i) for i in unit], claimed) for unit in units]
    return {i: p for unit, p in zip(units, holm(raw)) for i in unit}


def across_axis(claims: Sequence[Claim], rows: list[dict], differences: Sequence[Mapping[int, float]]) -> list[dict]:
    """With a sensitivity axis: each row's verdict over the axis (``verdict_across_axis``) and, for a claim
    declaring ``interaction: true``, its interaction test (``p_interaction``: Holm-adjusted over the study's
    interaction tests); ``differences``: per row, seed -> paired difference."""
    if not any(c.axis for c in claims):
        return rows
    groups: dict[tuple, list[int]] = {}
    for i, claim in enumerate(claims):
        if claim.axis:
            groups.setdefault(claim.declared, []).append(i)
    tested = [m for m in groups.values() if claims[m[0]].interaction]
    raw = [interaction_p({rows[i]["axis_value"]: differences[i] for i in m}) for m in tested]
    adjusted = dict(zip(map(tuple, tested), holm([p for p, _, _ in raw])))
    for members in groups.values():
        claim = claims[members[0]]
        words = {rows[i]["axis_value"]: rows[i]["verdict"].split(";")[0] for i in members}
        cell = _words_cell(claim, words, claim.interaction)
        if tuple(members) in adjusted:
            p, test, seeds = raw[tested.index(members)]
            held = adjusted[tuple(members)]
            said = f"depends on {claim.axis}" if held < ALPHA else f"no dependence on {claim.axis} shown"
            cell += f"; {said} (interaction {test}, {seeds} seeds, Holm p {held:.4f})"
            for i in members:
                rows[i].update({"p_interaction": p, "p_holm_interaction": held, "interaction_test": test})
        for i in members:
            rows[i]["verdict_across_axis"] = cell
    return rows


def _words_cell(claim: Claim, words: Mapping[str, str], tested: bool) -> str:
    """The verdicts over the axis values in words: one intersection–union verdict, one word shared by every
    value, or the words by value (which alone say nothing of dependence: the interaction test, if declared,
    follows)."""
    if claim.across_axis == "every":
        return f"{next(iter(words.values()))} at every {claim.axis} value"
    if len(set(words.values())) == 1:
        return next(iter(words.values()))
    listed = "; ".join(f"{v}: {w}" for v, w in words.items())
    return f"differs by {claim.axis} value ({listed}" + (")" if tested else "; dependence not tested)")
