"""Measuring availability after a run: the offline periods of a client's availability model
(offline_periods.csv) and the seconds it spent unable to take work (clients.csv's ``offline_s``).
The models are pure functions of time and round, so they are asked at the end, not watched."""

from __future__ import annotations

import itertools
from typing import Any, Iterator, Sequence

import numpy as np

MAX_OFFLINE_PERIODS = 20_000  # per client: guards a pathological availability pattern


def offline_periods(model: Any, until: float, rounds: list[tuple[float, float, int]]) -> list[tuple[float, float]]:
    """The [from, until) periods in [0, until] during which ``model`` (an availability process) is offline."""
    if model.round_indexed:  # one state per round, held from the round's start to its close
        return [(s, min(e, until)) for s, e, rnd in rounds if s < until and not model.online(s, rnd)]
    return list(itertools.islice(_walk_offline(model, until), MAX_OFFLINE_PERIODS))


def _walk_offline(model: Any, until: float) -> Iterator[tuple[float, float]]:
    """The offline periods in [0, until] of a pure function of time, found along its on/off switches."""
    next_online_within = getattr(model, "next_online_within", None)  # eligibility: no walk past until
    t = 0.0
    while t < until:
        if model.online(t, 0):
            nxt = model.next_offline(t, 0)
            if nxt <= t:
                return
        else:
            nxt = model.next_online(t) if next_online_within is None else next_online_within(t, until)
            yield t, min(nxt, until)
        t = nxt


class OfflineMeter:
    """Seconds each client spent unable to take work (offline, or not eligible) in [0, until]:
    the ``offline_s`` column of clients.csv.  A model measures itself where it can
    (``offline_seconds``, ``online_in_rounds``: the models beside this module); any other pure function
    of time is walked along its switches.  Round-indexed models count per round span (start,
    close, round), minus the parts of offline rounds in which the client was still busy with a task
    of an earlier round (``late_spans``: such a task runs on whatever the later round's draw says)."""

    def __init__(self, until: float, rounds: list[tuple[float, float, int]]) -> None:
        self.until = until
        spans = [(s, min(e, until), r) for s, e, r in rounds if s < until]
        self.rounds = spans
        self.round_ids = np.array([r for _, _, r in spans], dtype=np.int64)
        self.lengths = np.array([e - s for s, e, _ in spans], dtype=np.float64)
        self._dropped: dict[int, float] | None = None

    def __call__(self, model: Any, late_spans: Sequence[tuple[float, float]] = ()) -> float:
        if model.round_indexed:
            return self._rounds(model) - self._busy_in_offline_rounds(model, late_spans)
        measure = getattr(model, "offline_seconds", None)
        if measure is not None:
            return measure(self.until)
        total = 0.0  # any other pure function of time: walk its periods (plain adds: sum() compensates on 3.12+)
        for start, end in _walk_offline(model, self.until):
            total += end - start
        return total

    def _rounds(self, model: Any) -> float:
        if not len(self.round_ids):
            return 0.0
        schedule = getattr(model, "schedule", None)  # cluster dropout: one schedule shared by every client
        if schedule is not None:
            if self._dropped is None:  # one pass over the rounds for every client
                self._dropped = {}
                for (_, _, rnd), length in zip(self.rounds, self.lengths.tolist()):
                    for client in schedule.dropped(rnd):
                        self._dropped[client] = self._dropped.get(client, 0.0) + length
            return self._dropped.get(model.client, 0.0)
        states = getattr(model, "online_in_rounds", None)  # its states at once where it can, else round by round
        online = states(self.round_ids) if states is not None else [model.online(s, r) for s, _, r in self.rounds]
        return float(self.lengths[np.asarray(online) == 0].sum())

    def _busy_in_offline_rounds(self, model: Any, late_spans: Sequence[tuple[float, float]]) -> float:
        busy = 0.0
        for a, b in late_spans:
            for s, e, rnd in self.rounds:
                lo, hi = max(a, s), min(b, e)
                if hi > lo and not model.online(s, rnd):
                    busy += hi - lo
        return busy
