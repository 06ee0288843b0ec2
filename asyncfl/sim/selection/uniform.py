"""``server.selection.kind: uniform`` (the default): every idle client equally likely.

A sync round with ``clients_per_round: M`` draws M of the idle clients without replacement from its
own stream ``stream(seed, "selection", round)`` (all of them when M is null or at least the idle
count); K-async dispatch keeps its own rule (:mod:`asyncfl.sim.dispatch`: a uniform pick among the
idle online clients, stream ``dispatch``), so existing scenarios give byte-identical outputs.
"""

from __future__ import annotations

from typing import Literal

from asyncfl.sections import Section
from asyncfl.sim.selection.base import SelectionKind, SelectionRequest, SelectionTags


class UniformSelection(Section):
    kind: Literal["uniform"] = "uniform"


class Uniform:
    """Uniform sampling without replacement (FedAvg's client sampling, McMahan et al. 2017)."""

    def select(self, request: SelectionRequest) -> list[int]:
        candidates, count = request.candidates, request.count
        if count is None or count >= len(candidates):
            return candidates.tolist()
        chosen = request.rng.choice(len(candidates), size=count, replace=False)
        return sorted(candidates[chosen].tolist())


KIND = SelectionKind(
    section=UniformSelection,
    build=lambda spec, num_clients, seed: Uniform(),
    summary="every idle client equally likely, the default rule",
    tags=SelectionTags(modes=frozenset({"sync", "k_async"}), reads_feedback=False),
    examples=(("uniform", {"kind": "uniform"}),),
    order=0,
)
