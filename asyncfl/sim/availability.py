"""Availability processes over virtual time (DESIGN.md section 3).

Each model answers three questions for one client, all pure functions of (t, round) given the
client's own random stream, so the answers never depend on the order in which they are asked:

``online(t, rnd)``        is the client reachable at time t (in sync round rnd)?
``next_offline(t, rnd)``  first time >= t at which an online client drops (inf: not before the
                          round ends / never)
``next_online(t)``        first time >= t at which the client is online (for the K-async dispatcher)
"""

from __future__ import annotations

import bisect
import math

import numpy as np

INF = math.inf


class Always:
    def online(self, t: float, rnd: int) -> bool:
        return True

    def next_offline(self, t: float, rnd: int) -> float:
        return INF

    def next_online(self, t: float) -> float:
        return t


class _LazyDraws:
    """The i-th Bernoulli(p) draw of one client, generated in order and cached (order-independent)."""

    def __init__(self, p: float, rng: np.random.Generator) -> None:
        self.p, self.rng, self.draws = p, rng, bytearray()

    def __getitem__(self, i: int) -> bool:
        while len(self.draws) <= i:
            self.draws.extend((self.rng.random(256) < self.p).astype(np.uint8).tobytes())
        return bool(self.draws[i])


class Bernoulli:
    """Online with probability p, independently per sync round (``slot_s`` None) or per time slot.

    In round mode the client stays online for the whole round once it is drawn online.
    """

    def __init__(self, p: float, rng: np.random.Generator, slot_s: float | None) -> None:
        self.p, self.slot_s, self.draws = p, slot_s, _LazyDraws(p, rng)

    def _slot(self, t: float, rnd: int) -> int:
        return rnd if self.slot_s is None else int(t // self.slot_s)

    def online(self, t: float, rnd: int) -> bool:
        return self.draws[self._slot(t, rnd)]

    def next_offline(self, t: float, rnd: int) -> float:
        if self.slot_s is None:
            return INF
        slot = int(t // self.slot_s)
        while self.draws[slot]:
            slot += 1
        return slot * self.slot_s

    def next_online(self, t: float) -> float:
        if self.slot_s is None:
            return t
        slot = int(t // self.slot_s)
        if self.draws[slot]:
            return t
        if self.p <= 0:
            return INF
        while not self.draws[slot]:
            slot += 1
        return slot * self.slot_s


class Markov:
    """Two-state on/off chain in continuous time with exponential holding times.

    Stationary probability of being online is p; mean online period p*cycle, offline (1-p)*cycle.
    The initial state is drawn from the stationary law, so P(online at any t) = p.
    """

    def __init__(self, p: float, mean_cycle_s: float, rng: np.random.Generator) -> None:
        self.mean_on, self.mean_off, self.rng = p * mean_cycle_s, (1 - p) * mean_cycle_s, rng
        self.first_online = bool(rng.random() < p)
        self.switches: list[float] = [0.0]  # times at which the state flips; state i holds on [s_i, s_{i+1})

    def _extend_past(self, t: float) -> None:
        while self.switches[-1] <= t:
            online = self._state(len(self.switches) - 1)
            mean = self.mean_on if online else self.mean_off
            if mean <= 0:
                self.switches.append(INF)
            else:
                self.switches.append(self.switches[-1] + self.rng.exponential(mean))

    def _state(self, i: int) -> bool:
        return self.first_online if i % 2 == 0 else not self.first_online

    def _index(self, t: float) -> int:
        self._extend_past(t)
        return bisect.bisect_right(self.switches, t) - 1

    def online(self, t: float, rnd: int) -> bool:
        return self._state(self._index(t))

    def next_offline(self, t: float, rnd: int) -> float:
        i = self._index(t)
        if not self._state(i):
            return t
        self._extend_past(self.switches[i])
        return self.switches[i + 1]

    def next_online(self, t: float) -> float:
        i = self._index(t)
        if self._state(i):
            return t
        return self.switches[i + 1]


class Cyclic:
    """Online during the first p*period of every period, shifted by a per-client phase."""

    def __init__(self, p: float, period_s: float, phase_s: float) -> None:
        self.on_s, self.period, self.phase = p * period_s, period_s, phase_s

    def _position(self, t: float) -> float:
        return (t + self.phase) % self.period

    def online(self, t: float, rnd: int) -> bool:
        return self._position(t) < self.on_s

    def next_offline(self, t: float, rnd: int) -> float:
        if self.on_s >= self.period:
            return INF
        pos = self._position(t)
        return t + (self.on_s - pos) if pos < self.on_s else t

    def next_online(self, t: float) -> float:
        pos = self._position(t)
        return t if pos < self.on_s else t + (self.period - pos)


class Trace:
    """Online exactly during the given sorted, disjoint [start, end) intervals."""

    def __init__(self, intervals: list[tuple[float, float]]) -> None:
        self.starts = [s for s, _ in intervals]
        self.ends = [e for _, e in intervals]

    def _containing(self, t: float) -> int | None:
        i = bisect.bisect_right(self.starts, t) - 1
        return i if i >= 0 and t < self.ends[i] else None

    def online(self, t: float, rnd: int) -> bool:
        return self._containing(t) is not None

    def next_offline(self, t: float, rnd: int) -> float:
        i = self._containing(t)
        return t if i is None else self.ends[i]

    def next_online(self, t: float) -> float:
        if self._containing(t) is not None:
            return t
        i = bisect.bisect_right(self.starts, t)
        return self.starts[i] if i < len(self.starts) else INF
