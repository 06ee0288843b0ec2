"""``kind: tifl``: tier-based selection, Chai, Ali, Zawad, Truex, Anwar, Baracaldo, Zhou, Ludwig, Yan &
Cheng, HPDC 2020, "TiFL: A Tier-based Federated Learning System" (its Algorithm 2, adaptive tier selection).

**Tiering** (section 4.2 of the paper: profile every client's task latency, group into ``tiers``
tiers of similar latency).  Each round the server's candidates are sorted by their task time
(ties by id) and cut into ``tiers`` groups of equal size up to one (``numpy.array_split``; these
are the quantile tiers, tier 0 the fastest).  A client's task time is the duration of its last
delivered task (``ClientFeedback.duration_s``: the profiled latency, refreshed by every update,
where the paper re-profiles periodically).  Before a client has delivered anything the time is
estimated from its device profile: the compute time of one sample, 1 / ``profile.samples_per_s``,
times the median of duration_s * samples_per_s over the candidates that have a duration (1 when
none has).  So the estimate assumes task time proportional to per-sample compute time (transfers
scale along); it only orders unprofiled clients among the profiled ones.

**Adaptive tier selection** (Algorithm 2).  Every tier starts with probability 1/tiers and
``credits`` credits.  Every ``interval`` selections the probabilities are recomputed from the
tiers' accuracies A_t (mean ``ClientFeedback.accuracy`` over the tier's candidates that have one):
of the n tiers with credits left, ranked by A_t ascending, the r-th (r = 0, 1, ...) gets
probability (n - r) / D with D = n (n + 1) / 2 (ChangeProbs: the least accurate tier is picked
most); tiers without credits get 0.  A tier without any accuracy value ranks as the least
accurate; when no tier has one (no evaluation yet) the stand-in is uniform over the tiers with
credits.  Each round one tier is drawn with these probabilities among the tiers that have credits
and candidates, its credits drop by one (a tier with no credits is never drawn), and ``count``
clients are drawn uniformly within it.

Where this differs from the paper, and why:

- A tier with fewer candidates than ``count`` gives them all: the round asks fewer clients
  (TiFL never mixes tiers in a round).  When even a full tier, ceil(clients / tiers), is smaller than
  ``count`` (the default 5 tiers over 20 clients: 4 < 10), every round is short, and ``validate``, the
  run and summary.json say so (:func:`small_tiers`).  ``count`` null (``clients_per_round: null``: ask
  everyone) asks every candidate; there is no tier to choose, and no credit is spent.
- Tiers are cut from the current candidates, so in a round where some clients are still busy
  (``late_updates: next_round``) the tiers are those of the idle ones; without carried-over tasks
  the candidates are the whole population, as in the paper.
- The paper sets the credits from the total rounds; the run length is not known here, so when no
  tier with candidates has credits left every tier gets ``credits`` again and the probabilities
  restart uniform (the run goes on instead of stopping).

Tags: ``needs_losses`` (it reads ``accuracy``; refused in ``timing_only`` runs).  Modes: ``sync``
only - a tier is chosen per round of ``count`` clients.

Candidates are the clients that checked in at the round's start (tag ``checked_in_only``; ours: the
paper assumes every selected client answers), so a ranking never keeps asking offline clients.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from asyncfl.sections import Section
from asyncfl.sim.selection.base import SelectionKind, SelectionRequest, SelectionTags

__all__ = ["KIND", "TiFL", "TiFLSelection", "change_probabilities", "small_tiers", "task_times"]


class TiFLSelection(Section):
    """TiFL (Chai et al. 2020): tiers by task time, one tier per round by the adaptive credit rule."""

    kind: Literal["tifl"]
    tiers: int = Field(
        default=5,
        ge=1,
        description="number of tiers the candidates are cut into by task time; a round asks one tier, so with "
        "fewer than clients_per_round clients in a tier (ceil(data.clients / tiers)) rounds are short: validate warns",
    )
    interval: int = Field(
        default=10, ge=1, description="rounds between updates of the tier probabilities from tier accuracy (paper: I)"
    )
    credits: int = Field(
        default=100, ge=1, description="rounds each tier may be chosen before it is exhausted (refilled when all are)"
    )


class TiFL:
    """The built policy; its state is the tier probabilities, credits and selection count."""

    def __init__(self, spec: TiFLSelection) -> None:
        self.spec = spec
        self.probabilities = [1.0 / spec.tiers] * spec.tiers
        self.credits = [spec.credits] * spec.tiers
        self.selections = 0

    def tiers_of(self, request: SelectionRequest) -> list[np.ndarray]:
        """The candidates cut into ``tiers`` groups by task time, fastest first."""
        candidates = np.asarray(request.candidates, dtype=np.int64)
        order = np.lexsort((candidates, task_times(request, candidates)))
        return np.array_split(candidates[order], self.spec.tiers)

    def select(self, request: SelectionRequest) -> list[int]:
        if request.count is None:  # ask everyone: no tier to choose, nothing spent
            return np.asarray(request.candidates, dtype=np.int64).tolist()
        groups = self.tiers_of(request)
        if self.selections and self.selections % self.spec.interval == 0:
            accuracy = [_mean_accuracy(request, group) for group in groups]
            self.probabilities = change_probabilities(accuracy, self.credits)
        self.selections += 1
        eligible = [t for t, group in enumerate(groups) if self.credits[t] > 0 and len(group)]
        if not eligible:
            if not any(len(group) for group in groups):
                return []
            self.credits = [self.spec.credits] * self.spec.tiers
            self.probabilities = [1.0 / self.spec.tiers] * self.spec.tiers
            eligible = [t for t, group in enumerate(groups) if len(group)]
        weights = np.array([self.probabilities[t] for t in eligible])
        p = weights / weights.sum() if weights.sum() > 0 else None
        tier = eligible[int(request.rng.choice(len(eligible), p=p))]
        self.credits[tier] -= 1
        members = groups[tier]
        take = min(request.count, len(members))
        return sorted(request.rng.choice(members, size=take, replace=False).tolist())


def task_times(request: SelectionRequest, ids: np.ndarray) -> np.ndarray:
    """Last delivered task duration; unprofiled clients: 1/samples_per_s x the median measured ratio."""
    measured = request.feedback.duration_s[ids]
    known = np.isfinite(measured)
    if known.all():
        return measured
    speed = np.array([request.clients[i].profile.samples_per_s for i in ids], dtype=np.float64)
    scale = float(np.median(measured[known] * speed[known])) if known.any() else 1.0
    return np.where(known, measured, scale / speed)


def change_probabilities(accuracy: list[float], credits: list[int]) -> list[float]:
    """ChangeProbs of Algorithm 2: rank the tiers with credits by accuracy ascending (missing first,
    then by tier), the r-th gets (n - r) / D, D = n (n + 1) / 2; no accuracy at all: uniform."""
    alive = [t for t, c in enumerate(credits) if c > 0]
    out = [0.0] * len(credits)
    n = len(alive)
    if not n:
        return out
    if all(np.isnan(accuracy[t]) for t in alive):
        for t in alive:
            out[t] = 1.0 / n
        return out
    ranked = sorted(alive, key=lambda t: (not np.isnan(accuracy[t]), 0.0 if np.isnan(accuracy[t]) else accuracy[t], t))
    D = n * (n + 1) / 2
    for r, t in enumerate(ranked):
        out[t] = (n - r) / D
    return out


def _mean_accuracy(request: SelectionRequest, group: np.ndarray) -> float:
    values = request.feedback.accuracy[group]
    values = values[np.isfinite(values)]
    return float(values.mean()) if len(values) else float("nan")


def small_tiers(spec: TiFLSelection, clients: int, count: int | None) -> str | None:
    """The warning when even the largest tier, ceil(clients / tiers), holds fewer clients than a round asks:
    every round then asks fewer than ``count`` (the default 5 tiers over 20 clients: at most 4 of 10)."""
    largest = -(-clients // spec.tiers)
    if count is None or largest >= count:
        return None
    return (
        f"server.selection.tiers ({spec.tiers}) cuts the {clients:,} clients into tiers of at most {largest:,}, fewer "
        f"than the {count:,} a round asks (server.clients_per_round): TiFL asks one tier a round, so its rounds ask at "
        f"most {largest:,} clients (fewer when some have not checked in), and a comparison with another policy "
        f"compares smaller rounds; tiers: {max(1, clients // count)} or fewer lets a round fill when everyone is online"
    )


def _build(spec: TiFLSelection, num_clients: int, seed: int) -> TiFL:
    return TiFL(spec)


KIND = SelectionKind(
    section=TiFLSelection,
    build=_build,
    summary="TiFL (Chai et al. 2020): one tier of similar task time per round, by accuracy and credits",
    tags=SelectionTags(needs_losses=True, checked_in_only=True, reads_accuracy=True, fills_count=False),
    warning=small_tiers,
    examples=(
        ("tifl_default", {"kind": "tifl"}),
        ("tifl_small", {"kind": "tifl", "tiers": 2, "interval": 2, "credits": 3}),
    ),
    order=50,
)
