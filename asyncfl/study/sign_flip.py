"""The paired sign-flip permutation test (Fisher 1935; Good, *Permutation Tests*, 2nd ed., §3.1) and its
inverted interval, and Holm's step-down correction (Holm 1979): the tests every claim verdict rests on
(:mod:`asyncfl.study.claim_tests` says how they are used)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from asyncfl.study.claims import ALPHA, EXACT_UP_TO, MONTE_CARLO_FLIPS

MONTE_CARLO_SEED = 0


def _patterns(n: int):
    """The sign patterns of the sign-flip test as 0/1 rows (1: that pair's sign flipped): all 2^n for
    n <= 16, else 100,000 draws from a fixed seed in chunks, so that many pairs need no huge matrix."""
    if n <= EXACT_UP_TO:
        yield ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(np.float64)
        return
    rng = np.random.default_rng(MONTE_CARLO_SEED)
    left = MONTE_CARLO_FLIPS
    while left:
        chunk = min(left, 10_000)
        yield (rng.choice(np.array([-1.0, 1.0]), size=(chunk, n)) < 0).astype(np.float64)
        left -= chunk


def _flip_means(d: np.ndarray) -> tuple[np.ndarray, str]:
    """For every sign pattern of :func:`_patterns`, the shift below which it counts as a hit.

    A pattern that flips the set F of pairs reaches the observed sum of d − δ when Σ_F (d_i − δ) <= 0,
    i.e. when δ >= mean of d over F (always, for F empty).  So the one-sided p of the shift δ is the share
    of patterns whose value here is <= δ: one sorted array gives p and its inverted interval together.
    A half tolerance on the sum lets a pattern that ties the observed sum count (rounding aside).
    Monte Carlo adds the observed pattern (−inf) to the draws: p = (1 + hits) / (1 + 100,000)."""
    half_tolerance = 0.5e-9 * np.abs(d).sum()
    chunks = []
    for flipped in _patterns(len(d)):
        sizes = flipped.sum(axis=1)
        sums = flipped @ d - half_tolerance
        with np.errstate(divide="ignore", invalid="ignore"):
            chunks.append(np.where(sizes > 0, sums / np.maximum(sizes, 1), -np.inf))
    exact = len(d) <= EXACT_UP_TO
    means = np.concatenate(chunks if exact else [np.array([-np.inf])] + chunks)
    return np.sort(means), "exact" if exact else "Monte Carlo"


@dataclass(frozen=True)
class SignFlip:
    """The paired sign-flip test of a mean difference in both one-sided directions, and the interval of
    every shift δ that neither one-sided test at ALPHA rejects (so its ends and the p-values always agree:
    low > 0 exactly when p_higher < ALPHA, high < 0 exactly when p_lower < ALPHA)."""

    p_higher: float
    p_lower: float
    low: float
    high: float
    method: str

    def p(self, direction: str) -> float:
        return self.p_higher if direction == "higher" else self.p_lower


def sign_flip(differences: Sequence[float]) -> SignFlip:
    """The sign-flip test of ``differences`` (see the module docstring); no pair: p = 1 both ways and an
    unbounded interval."""
    d = np.asarray(differences, dtype=np.float64)
    if not len(d):
        return SignFlip(1.0, 1.0, -math.inf, math.inf, "exact")
    up, method = _flip_means(d)
    down, _ = _flip_means(-d)
    k = math.ceil(ALPHA * len(up))  # the k-th smallest value: the least δ whose p reaches ALPHA
    return SignFlip(float(np.mean(up <= 0)), float(np.mean(down <= 0)), float(up[k - 1]), float(-down[k - 1]), method)


def sign_flip_p(differences: Sequence[float], direction: str) -> tuple[float, str]:
    """One-sided paired sign-flip p-value of ``differences`` in ``direction`` (higher: their sum is large)
    and how it was computed (``exact`` / ``Monte Carlo``).  No pair: p = 1, there is no evidence."""
    test = sign_flip(differences)
    return test.p(direction), test.method


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order (see the module docstring)."""
    m = len(p_values)
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda j: p_values[j])):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
