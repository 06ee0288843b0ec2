"""Measuring availability after a run: the offline periods of a client's availability model
(offline_periods.csv) and the seconds it spent unable to take work (clients.csv's ``offline_s``).
The models are pure functions of time and round, so they are asked at the end, not watched."""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from asyncfl.sim.availability.base import AvailabilityModel, walk_offline

MAX_OFFLINE_PERIODS = 20_000  # per client: guards a pathological availability pattern


def offline_periods(
    model: AvailabilityModel, until: float, rounds: list[tuple[float, float, int]]
) -> list[tuple[float, float]]:
    """The [from, until) periods in [0, until] during which ``model`` (an availability process) is offline."""
    if model.round_indexed:  # one state per round, held from the round's start to its close
        return [(s, min(e, until)) for s, e, rnd in rounds if s < until and not model.online(s, rnd)]
    return list(itertools.islice(walk_offline(model, until), MAX_OFFLINE_PERIODS))


class OfflineMeter:
    """Seconds each client spent unable to take work (offline, or not eligible) in [0, until]:
    the ``offline_s`` column of clients.csv.  A continuous-time model measures itself (``offline_seconds``,
    by default a walk along its switches); a round-indexed one gives its states (``online_in_rounds``) or
    shares a ``schedule`` (:class:`~asyncfl.sim.availability.base.AvailabilityModel`), and counts per round span (start,
    close, round), minus the parts of offline rounds in which the client was still busy with a task
    of an earlier round (``late_spans``: such a task runs on whatever the later round's draw says)."""

    def __init__(self, until: float, rounds: list[tuple[float, float, int]]) -> None:
        self.until = until
        spans = [(s, min(e, until), r) for s, e, r in rounds if s < until]
        self.rounds = spans
        self.round_ids = np.array([r for _, _, r in spans], dtype=np.int64)
        self.starts = np.array([s for s, _, _ in spans], dtype=np.float64)
        self.lengths = np.array([e - s for s, e, _ in spans], dtype=np.float64)
        self._dropped: dict[int, float] | None = None

    def __call__(self, model: AvailabilityModel, late_spans: Sequence[tuple[float, float]] = ()) -> float:
        if model.round_indexed:
            return self._rounds(model) - self._busy_in_offline_rounds(model, late_spans)
        return model.offline_seconds(self.until)

    def _rounds(self, model: AvailabilityModel) -> float:
        if not len(self.round_ids):
            return 0.0
        schedule = model.schedule  # cluster dropout: one schedule shared by every client
        if schedule is not None:
            if self._dropped is None:  # one pass over the rounds for every client
                self._dropped = {}
                for (_, _, rnd), length in zip(self.rounds, self.lengths.tolist()):
                    for client in schedule.dropped(rnd):
                        self._dropped[client] = self._dropped.get(client, 0.0) + length
            return self._dropped.get(model.client, 0.0)
        online = model.online_in_rounds(self.round_ids, self.starts)  # at once where it can, else round by round
        return float(self.lengths[np.asarray(online) == 0].sum())

    def _busy_in_offline_rounds(self, model: AvailabilityModel, late_spans: Sequence[tuple[float, float]]) -> float:
        busy = 0.0
        for a, b in late_spans:
            for s, e, rnd in self.rounds:
                lo, hi = max(a, s), min(b, e)
                if hi > lo and not model.online(s, rnd):
                    busy += hi - lo
        return busy
