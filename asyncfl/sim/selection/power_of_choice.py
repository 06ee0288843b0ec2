"""``kind: power_of_choice``: biased selection towards high local loss, Cho, Wang & Joshi, AISTATS 2022,
"Towards understanding biased client selection in federated learning" (pow-d).

pow-d (Algorithm 1 of the paper) each round

1. samples a candidate set A of ``d`` clients without replacement, client k with probability
   p_k = |B_k| / sum_j |B_j| (its fraction of the data; here over the server's current candidates);
2. ranks A by local loss F_k(w) and asks the ``count`` (m) clients with the highest loss.

Step 2 needs every candidate's loss at the *current* global model, which the timing world never
sees (it holds no model; the learning world only reports losses of aggregated updates).  This
module is therefore the paper's computation-free variant **rpow-d** (section 5 of the paper): the
loss used for ranking is the one each client reported with its last aggregated update
(``ClientFeedback.loss``, the mean training loss of that update's local steps).  A client that has
reported nothing yet ranks as +inf (first), so every client is heard from before its stale loss
matters; ties (e.g. several never-heard-from clients) go to the lower client id.

Where this differs from the paper, and why:

- d is clamped to [count, len(candidates)]: the paper requires m <= d <= K, and the scenario's
  ``clients_per_round`` is only known to the server, so a ``d`` below it asks for ``count`` by loss
  from a set of ``count`` (= plain data-weighted sampling) instead of failing.
- Without known sample counts (``ClientFeedback.samples`` NaN or all zero) the candidate set is
  drawn uniformly.

Tags: ``needs_losses`` (refused in ``timing_only`` runs).  Modes: ``sync`` only - a K-async server
dispatches one idle client at a time, where "the m highest of d" degenerates to a single argmax
over a sample and the paper's analysis (rounds of m) does not apply.

Candidates are the clients that checked in at the round's start (tag ``checked_in_only``; ours: the
paper assumes every selected client answers), so a ranking never keeps asking offline clients.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from asyncfl.sections import Section
from asyncfl.sim.selection.base import SelectionKind, SelectionRequest, SelectionTags

__all__ = ["KIND", "PowerOfChoice", "PowerOfChoiceSelection"]


class PowerOfChoiceSelection(Section):
    """rpow-d (Cho et al. 2022): sample d clients by data fraction, ask those with the highest last reported loss."""

    kind: Literal["power_of_choice"]
    d: int = Field(
        default=10,
        ge=1,
        description="size of the candidate set sampled each round (paper: d, with count <= d); "
        "clamped to [count, number of candidates]",
    )


class PowerOfChoice:
    """The built policy; stateless (every draw comes from the request's own stream)."""

    def __init__(self, d: int) -> None:
        self.d = d

    def select(self, request: SelectionRequest) -> list[int]:
        candidates = np.asarray(request.candidates, dtype=np.int64)
        n = len(candidates)
        count = n if request.count is None else min(request.count, n)
        if count >= n:
            return candidates.tolist()
        d = min(max(self.d, count), n)
        sampled = request.rng.choice(candidates, size=d, replace=False, p=data_fractions(request))
        loss = request.feedback.loss[sampled]
        rank_loss = np.where(np.isnan(loss), np.inf, loss)
        order = np.lexsort((sampled, -rank_loss))  # highest loss first, then lower id
        return sorted(sampled[order[:count]].tolist())


def data_fractions(request: SelectionRequest) -> np.ndarray | None:
    """p_k = |B_k| / sum |B_j| over the candidates; None (uniform) where the sizes are unknown."""
    samples = request.feedback.samples[request.candidates]
    total = samples.sum()
    if not np.isfinite(total) or total <= 0:
        return None
    return samples / total


def _build(spec: PowerOfChoiceSelection, num_clients: int, seed: int) -> PowerOfChoice:
    return PowerOfChoice(spec.d)


KIND = SelectionKind(
    section=PowerOfChoiceSelection,
    build=_build,
    summary="rpow-d (Cho et al. 2022): the highest last reported losses among d sampled clients",
    tags=SelectionTags(needs_losses=True, checked_in_only=True),
    examples=(
        ("power_of_choice_d4", {"kind": "power_of_choice", "d": 4}),
        ("power_of_choice_default", {"kind": "power_of_choice"}),
    ),
    order=40,
)
