"""``kind: cluster_dropout``: FL-FDMS's dropout process (fl-fdms.md section 2), one schedule shared by
every client."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from asyncfl.seeding import stream
from asyncfl.sim.availability.base import INF, AvailabilityKind, AvailabilityModel, Section

__all__ = ["ClusterDropout", "ClusterDropoutAvailability", "DropoutSchedule"]

DROPOUT_STREAM = 0xFFFF_FFF1  # FL-FDMS's per-round dropout draws (a stream id above any client id)


class ClusterDropoutAvailability(Section):
    """FL-FDMS's dropout process (fl-fdms.md section 2): every sync round round(alpha * N) clients,
    drawn uniformly at random, drop out, except that at least one client of every cluster stays
    active (the clusters of ``data.partition.kind: clusters``; with any other partition the whole
    population is one cluster, so at least one client stays).  When the clusters leave fewer
    droppable clients, fewer drop.  Marginal participation probability ~ 1 - alpha."""

    kind: Literal["cluster_dropout"]
    alpha: float = Field(ge=0, lt=1, description="dropout ratio: fraction of the clients offline each round")


class DropoutSchedule:
    """Which clients drop out in each sync round (FL-FDMS, fl-fdms.md section 2).

    round(alpha * N) clients are dropped, visited in a random order keyed by (seed, round), skipping
    any client that is the last active one of its cluster.  Only the latest round is cached; an
    earlier round is recomputed from its own stream, so answers never depend on the asking order.
    """

    def __init__(self, alpha: float, clusters: np.ndarray, rng_for_round) -> None:
        self.clusters = np.asarray(clusters)
        self.target = int(round(alpha * len(self.clusters)))
        self.rng_for_round = rng_for_round
        self._round, self._dropped = -1, frozenset()

    def dropped(self, rnd: int) -> frozenset[int]:
        if rnd != self._round:
            self._round, self._dropped = rnd, self._draw(rnd)
        return self._dropped

    def _draw(self, rnd: int) -> frozenset[int]:
        active = np.bincount(self.clusters)
        dropped: list[int] = []
        for client in self.rng_for_round(rnd).permutation(len(self.clusters)):
            if len(dropped) >= self.target:
                break
            cluster = self.clusters[client]
            if active[cluster] > 1:
                active[cluster] -= 1
                dropped.append(int(client))
        return frozenset(dropped)


class ClusterDropout(AvailabilityModel):
    """One client's view of a shared :class:`DropoutSchedule`."""

    round_indexed = True  # its offline time is measured over all clients at once (results.OfflineMeter)

    def __init__(self, schedule: DropoutSchedule, client: int) -> None:
        self.schedule, self.client = schedule, client

    def online(self, t: float, rnd: int) -> bool:
        return self.client not in self.schedule.dropped(rnd)

    def next_offline(self, t: float, rnd: int) -> float:
        return INF

    def next_online(self, t: float) -> float:
        return t


def _build(spec: ClusterDropoutAvailability, draw):
    n = draw.num_clients
    ids = np.zeros(n, dtype=np.int64) if draw.clusters is None else np.asarray(draw.clusters, dtype=np.int64)
    schedule = DropoutSchedule(spec.alpha, ids, lambda rnd: stream(draw.seed, "availability", DROPOUT_STREAM, rnd))
    return lambda i: ClusterDropout(schedule, i)


def _probabilities(spec: ClusterDropoutAvailability, draw) -> list[float]:
    """1 - alpha (the share dropped, rounded to whole clients); approximate when clusters protect clients."""
    n = draw.num_clients
    return [1.0 - round(spec.alpha * n) / n] * n


KIND = AvailabilityKind(
    section=ClusterDropoutAvailability,
    build=_build,
    probabilities=_probabilities,
    counts_rounds=lambda spec: "kind cluster_dropout",
    examples=(("cluster_dropout", {"kind": "cluster_dropout", "alpha": 0.3}),),
    order=40,
)
