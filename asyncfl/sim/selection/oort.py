"""``kind: oort``: guided participant selection, Lai, Zhu, Madhyastha & Chowdhury, OSDI 2021,
"Oort: Efficient Federated Learning via Guided Participant Selection" (its Algorithm 1).

Each client i that has delivered an aggregated update (*explored*) gets a utility

    U(i) = |B_i| * sqrt(1/|B_i| * sum_{k in B_i} Loss(k)^2)                 (eq. 2: statistical utility)
         = samples_i * sqrt(loss_sq_i)                                         (ClientFeedback columns)
    Util(i) = U(i) / U_max + sqrt(0.1 * log(R) / L(i))                         (Alg. 1 line 6: staleness bonus)
    Util(i) *= (T / t_i)^alpha   if t_i > T                                    (eq. 3: system penalty)

with R the current round, L(i) the round that last aggregated one of i's updates, t_i the virtual
duration of i's last delivered task (``ClientFeedback.duration_s``) and T the preferred round
duration.  Then (Alg. 1 lines 9-14) the exploration fraction decays, eps = max(eps * decay,
eps_min); (1 - eps) * count clients are *exploited*: the pool is every explored candidate whose
Util is at least ``cut_off`` times the (1 - eps) * count-th highest, and the exploited clients are
sampled from the pool with probability proportional to Util (so the top ones when the pool is
exactly them).  A straggler - a client whose last task the deadline cut or the round's close
cancelled - counts as explored too, as FedScale's reference aggregator registers stragglers: its
statistical utility is the mean over the explored clients that delivered, its duration the seconds it
was seen to run (a lower bound; the reference knows the whole duration), its L the round it straggled
in.  The remaining slots are *explored*: never-heard-from candidates (a client that only ever failed
offline stays unheard), sampled with
probability proportional to their device speed (``profile.samples_per_s``; the paper prefers
unexplored clients with faster system speed).  Slots still free (too few unexplored candidates)
go to the next explored clients by Util.

The pacer (Alg. 1 lines 2-4): T is the ``duration_percentile`` percentile of the durations reported
so far; at every selection, if the exploited clients' summed statistical utility U over the last W
(``pacer_step``) rounds is below that of the W rounds before, the percentile grows by ``pacer_delta``
(up to 100: T is then the slowest reported duration, so nobody is penalised) and the two windows
start afresh (the reference instead compares only every W rounds).  A round's exploited
utility is the sum of U reported by the clients it exploited whose update was aggregated in that
round (``last_version`` at least the round they were asked in).

Where this differs from the paper / its reference implementation, and why:

- T as a percentile of reported durations (the reference's ``round_threshold``), since a
  duration in seconds depends on the population; ``preferred_duration_s`` fixes T instead (no
  pacer).  No duration reported yet: no penalty.  The pacer only relaxes T, as the paper's does
  (the reference also tightens it when utility changes sharply).
- U is scaled by the largest explored candidate's U (clipped at its 95th percentile first, as the
  reference clips outliers) so the staleness bonus, of order 0.1-1, is comparable; the reference
  uses min-max scaling, which gives the least useful client utility 0.
- An unknown |B_i| (``samples`` NaN) counts as 1.
- Versions count from 0 here, so R = request.version + 1 and L(i) = last_version + 1 (log 0 and 1/0 undefined).
- No blacklist of over-selected clients (the reference's optional ``blacklist_rounds``).
- Candidates are the clients that checked in (tag ``checked_in_only``), as FedScale hands Oort its
  feasible (online) clients.
- Sampling uses the request's stream, so resume and reruns select identically.

Tags: ``needs_losses`` (``loss_sq``; refused in ``timing_only`` runs).  Modes: ``sync`` only - the
exploration/exploitation split is per round of ``count`` clients.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from asyncfl.errors import ConfigError
from asyncfl.sections import Section
from asyncfl.sim.selection.base import SelectionKind, SelectionRequest, SelectionTags

__all__ = ["KIND", "Oort", "OortSelection"]

CLIP_QUANTILE = 0.95  # statistical utilities above this quantile are clipped (outliers)
STALENESS_WEIGHT = 0.1  # sqrt(0.1 * log R / L): the paper's constant


class OortSelection(Section):
    """Oort (Lai et al. 2021): exploit high statistical utility x system speed, explore unheard clients."""

    kind: Literal["oort"]
    exploration: float = Field(default=0.9, ge=0, le=1, description="initial exploration fraction eps")
    exploration_decay: float = Field(
        default=0.98, gt=0, le=1, description="eps is multiplied by this before every selection"
    )
    exploration_min: float = Field(default=0.3, ge=0, le=1, description="eps never decays below this")
    alpha: float = Field(default=2.0, ge=0, description="system penalty exponent: Util *= (T/t)^alpha when t > T")
    preferred_duration_s: float | None = Field(
        default=None,
        gt=0,
        description="preferred task duration T in virtual seconds; null: a percentile of reported durations",
    )
    duration_percentile: float = Field(
        default=30.0,
        gt=0,
        le=100,
        description="with preferred_duration_s null: T is this percentile of the reported durations",
    )
    pacer_step: int | None = Field(
        default=20, ge=1, description="pacer window W in rounds (null: T stays at duration_percentile)"
    )
    pacer_delta: float = Field(
        default=5.0, gt=0, le=100, description="percentile points the pacer adds to T's percentile when utility drops"
    )
    cut_off: float = Field(
        default=0.95, gt=0, le=1, description="exploitation pool: Util at least cut_off x the (1-eps)*count-th highest"
    )

    @model_validator(mode="after")
    def _floor_below_start(self) -> OortSelection:
        if self.exploration_min > self.exploration:
            raise ConfigError(
                f"exploration_min ({self.exploration_min}) must not exceed exploration ({self.exploration}): "
                "the exploration fraction only decays"
            )
        if (
            self.preferred_duration_s is not None
            and self.pacer_step is not None
            and "pacer_step" in self.model_fields_set
        ):
            raise ConfigError("pacer_step paces a percentile T; with preferred_duration_s T is fixed (set one of them)")
        return self


class Oort:
    """The built policy; its state: the exploration fraction, the pacer's percentile, the last
    selection's exploited clients and the recent rounds' exploited utility."""

    def __init__(self, spec: OortSelection) -> None:
        self.spec = spec
        self.exploration = spec.exploration
        self.percentile = spec.duration_percentile
        self.exploited: list[int] = []
        self.exploited_version = -1
        self.history: list[float] = []  # exploited utility of the last 2W rounds that exploited

    def utilities(self, request: SelectionRequest, ids: np.ndarray) -> np.ndarray:
        """Util(i) of explored clients ``ids`` (Alg. 1 with eqs. 2-3, scaled as the module says)."""
        fb = request.feedback
        statistical = np.nan_to_num(fb.samples[ids], nan=1.0) * np.sqrt(fb.loss_sq[ids])
        straggled = (fb.timed_out_version[ids] > fb.last_version[ids]) | ~np.isfinite(statistical)
        if straggled.any():  # the reference's "avg reward to explored, but not ran workers"
            statistical[straggled] = statistical[~straggled].mean() if (~straggled).any() else 0.0
        if len(statistical):
            ordered = np.sort(statistical)
            clip = ordered[min(int(len(ordered) * CLIP_QUANTILE), len(ordered) - 1)]
            statistical = np.minimum(statistical, clip) / clip if clip > 0 else np.zeros_like(statistical)
        last_seen = np.maximum(fb.last_version[ids], fb.timed_out_version[ids])
        bonus = np.sqrt(STALENESS_WEIGHT * math.log(request.version + 1) / (last_seen + 1))
        return (statistical + bonus) * self.penalty(request, fb.duration_s[ids])

    def preferred_duration(self, request: SelectionRequest) -> float:
        if self.spec.preferred_duration_s is not None:
            return self.spec.preferred_duration_s
        known = request.feedback.duration_s[np.isfinite(request.feedback.duration_s)]
        return float(np.percentile(known, self.percentile)) if len(known) else math.inf

    def penalty(self, request: SelectionRequest, durations: np.ndarray) -> np.ndarray:
        """(T/t)^alpha for t > T, 1 otherwise (eq. 3)."""
        T = self.preferred_duration(request)
        slow = durations > T
        out = np.ones(len(durations))
        out[slow] = (T / durations[slow]) ** self.spec.alpha
        return out

    def pace(self, request: SelectionRequest) -> None:
        """Record the last selection's exploited utility; relax T if the last W rounds' sum dropped."""
        W = self.spec.pacer_step
        if W is None or self.spec.preferred_duration_s is not None or not self.exploited:
            return
        fb, ids = request.feedback, np.asarray(self.exploited, dtype=np.int64)
        came = ids[fb.last_version[ids] >= self.exploited_version]
        utility = np.nan_to_num(fb.samples[came], nan=1.0) * np.sqrt(fb.loss_sq[came])
        self.history = (self.history + [float(np.nansum(utility))])[-2 * W :]
        self.exploited = []
        if len(self.history) == 2 * W and sum(self.history[W:]) < sum(self.history[:W]):
            self.percentile = min(100.0, self.percentile + self.spec.pacer_delta)
            self.history = []  # the next comparison is of two windows under the new T

    def select(self, request: SelectionRequest) -> list[int]:
        self.pace(request)
        candidates = np.asarray(request.candidates, dtype=np.int64)
        n = len(candidates)
        count = n if request.count is None else min(request.count, n)
        self.exploration = max(self.exploration * self.spec.exploration_decay, self.spec.exploration_min)
        if count >= n:
            return candidates.tolist()
        fb, rng = request.feedback, request.rng
        delivered = np.isfinite(fb.loss_sq[candidates]) & (fb.last_version[candidates] >= 0)
        heard = delivered | (fb.timed_out_version[candidates] >= 0)
        explored, unexplored = candidates[heard], candidates[~heard]
        util = self.utilities(request, explored)
        by_util = np.lexsort((explored, -util))  # highest Util first, then lower id
        exploit_len = min(int(count * (1.0 - self.exploration)), len(explored))
        picked: list[int] = []
        if exploit_len:
            cut = self.spec.cut_off * util[by_util[exploit_len - 1]]
            pool = by_util[util[by_util] >= cut]
            total = util[pool].sum()
            weights = util[pool] / total if total > 0 else None  # all zero (round 0, zero loss): uniform
            picked = explored[rng.choice(pool, size=exploit_len, replace=False, p=weights)].tolist()
            self.exploited, self.exploited_version = sorted(picked), request.version
        explore_len = min(len(unexplored), count - len(picked))
        if explore_len:
            speed = np.array([request.clients[i].profile.samples_per_s for i in unexplored], dtype=np.float64)
            picked += rng.choice(unexplored, size=explore_len, replace=False, p=speed / speed.sum()).tolist()
        if len(picked) < count:  # too few unexplored: the next explored clients by Util
            taken = set(picked)
            rest = [int(c) for c in explored[by_util] if int(c) not in taken]
            picked += rest[: count - len(picked)]
        return sorted(int(c) for c in picked)


def _build(spec: OortSelection, num_clients: int, seed: int) -> Oort:
    return Oort(spec)


KIND = SelectionKind(
    section=OortSelection,
    build=_build,
    summary="Oort (Lai et al. 2021): loss-based utility, slow clients penalised, unheard clients explored",
    tags=SelectionTags(needs_losses=True, checked_in_only=True),
    examples=(
        ("oort_default", {"kind": "oort"}),
        ("oort_fixed_T", {"kind": "oort", "preferred_duration_s": 5.0, "exploration": 0.5, "alpha": 1.0}),
    ),
    order=30,
)
