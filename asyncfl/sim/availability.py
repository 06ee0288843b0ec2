"""Availability processes over virtual time (DESIGN.md section 3).

Each model answers three questions for one client, all pure functions of (t, round) given the
client's own random stream, so the answers never depend on the order in which they are asked:

``online(t, rnd)``        is the client reachable at time t (in sync round rnd)?
``next_offline(t, rnd)``  first time >= t at which an online client drops (inf: not before the
                          round ends / never)
``next_online(t)``        first time >= t at which the client is online (for the K-async dispatcher)

Round-indexed models (Bernoulli without ``slot_s``, ``MarkovRounds``, ``CyclicRounds``,
``ClusterDropout``) decide once per sync round and hold the state for the whole round; they answer
``next_online(t) = t`` because they have no notion of time between rounds.

Probability p = 1 means online at every time and round (never drops: ``next_offline`` is inf);
p = 0 means never online (continuous-time models: ``next_online`` is inf).  Validation refuses
p = 0 (a client that never shows up is better left out of the population); the models define it
anyway so that they are total.  Cluster dropout with alpha = 0 drops nobody.
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

    def _extend(self) -> None:
        self.draws.extend((self.rng.random(256) < self.p).astype(np.uint8).tobytes())

    def __getitem__(self, i: int) -> bool:
        while len(self.draws) <= i:
            self._extend()
        return bool(self.draws[i])

    def first(self, value: bool, i: int) -> int:
        """The first index >= i whose draw is ``value`` (searched in C, not draw by draw); the
        caller makes sure one exists (p < 1 for False, p > 0 for True)."""
        byte = b"\x01" if value else b"\x00"
        while True:
            found = self.draws.find(byte, i)
            if found >= 0:
                return found
            i = max(i, len(self.draws))
            self._extend()


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
        if self.slot_s is None or self.p >= 1:  # p = 1: every slot is online, the search would never end
            return INF
        slot = self.draws.first(False, int(t // self.slot_s))
        return max(t, slot * self.slot_s)  # offline already at t: t (not the start of t's slot)

    def next_online(self, t: float) -> float:
        if self.slot_s is None:
            return t
        slot = int(t // self.slot_s)
        if self.draws[slot]:
            return t
        if self.p <= 0:
            return INF
        return self.draws.first(True, slot) * self.slot_s


class Markov:
    """Two-state on/off chain in continuous time with exponential holding times.

    Stationary probability of being online is p; mean online period p*cycle, offline (1-p)*cycle.
    The initial state is drawn from the stationary law, so P(online at any t) = p.
    """

    def __init__(self, p: float, mean_cycle_s: float, rng: np.random.Generator) -> None:
        self.p, self.mean_on, self.mean_off, self.rng = p, p * mean_cycle_s, (1 - p) * mean_cycle_s, rng
        self._first_online: bool | None = None  # drawn on the first question (the stream may be lazy)
        self.switches: list[float] = [0.0]  # times at which the state flips; state i holds on [s_i, s_{i+1})

    @property
    def first_online(self) -> bool:
        if self._first_online is None:
            self._first_online = bool(self.rng.random() < self.p)
        return self._first_online

    def _extend_past(self, t: float) -> None:
        while self.switches[-1] <= t:
            online = self._state(len(self.switches) - 1)
            mean, other = (self.mean_on, self.mean_off) if online else (self.mean_off, self.mean_on)
            if other <= 0:  # p = 1 (or 0): the other state would last zero time, so this one never ends
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


class MarkovRounds:
    """FedAU's Markovian participation: a two-state chain over sync rounds.

    Stationary online probability p: from online the client leaves with probability 1/(p C), from
    offline with 1/((1 - p) C), C = the mean cycle in rounds, lengthened to 1/min(p, 1 - p) when
    shorter so both are probabilities.  Round 0's state ~ Bernoulli(p) (the stationary law).
    """

    def __init__(self, p: float, mean_cycle_rounds: float, rng: np.random.Generator) -> None:
        if p >= 1.0:
            self.leave_on, self.leave_off = 0.0, 1.0
        elif p <= 0.0:
            self.leave_on, self.leave_off = 1.0, 0.0
        else:
            cycle = max(mean_cycle_rounds, 1.0 / p, 1.0 / (1.0 - p))
            self.leave_on, self.leave_off = 1.0 / (p * cycle), 1.0 / ((1.0 - p) * cycle)
        self.p, self.rng = p, rng
        self.states = bytearray()  # round 0's state is drawn on the first question (the stream may be lazy)

    def _state(self, rnd: int) -> bool:
        if not self.states:
            self.states.append(self.rng.random() < self.p)
        while len(self.states) <= rnd:
            u = self.rng.random(256)
            for x in u:
                online = self.states[-1]
                self.states.append(not (x < self.leave_on) if online else bool(x < self.leave_off))
        return bool(self.states[rnd])

    def online(self, t: float, rnd: int) -> bool:
        return self._state(rnd)

    def next_offline(self, t: float, rnd: int) -> float:
        return INF

    def next_online(self, t: float) -> float:
        return t


def cyclic_on_rounds(p: float, period: int) -> int:
    """Online rounds per period of :class:`CyclicRounds`: max(1, round(p * period)) for p > 0, 0 for
    p = 0.  The realised participation rate is this over ``period``, not p itself."""
    return min(period, max(1, round(p * period))) if p > 0 else 0


class CyclicRounds:
    """FedAU's cyclic participation: online in ``on_rounds`` consecutive rounds of every ``period``
    rounds, shifted by a per-client integer phase.  ``on_rounds`` = max(1, round(p * period)) for p > 0
    (FedAU's rule: every client shows up at least once per period), 0 for p = 0."""

    def __init__(self, p: float, period: int, phase: int) -> None:
        self.period, self.phase = period, phase
        self.on_rounds = cyclic_on_rounds(p, period)

    def online(self, t: float, rnd: int) -> bool:
        return (rnd + self.phase) % self.period < self.on_rounds

    def next_offline(self, t: float, rnd: int) -> float:
        return INF

    def next_online(self, t: float) -> float:
        return t


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


class ClusterDropout:
    """One client's view of a shared :class:`DropoutSchedule`."""

    def __init__(self, schedule: DropoutSchedule, client: int) -> None:
        self.schedule, self.client = schedule, client

    def online(self, t: float, rnd: int) -> bool:
        return self.client not in self.schedule.dropped(rnd)

    def next_offline(self, t: float, rnd: int) -> float:
        return INF

    def next_online(self, t: float) -> float:
        return t


class Cyclic:
    """Online during the first p*period of every period, shifted by a per-client phase.

    Window k is [k*period - phase, k*period - phase + p*period).  Every answer compares t with
    window edges computed by that one formula, so ``online`` and the next switch times agree to the
    last bit: with ``(t + phase) % period`` a client could be online at t while its window's end,
    rounded, was t itself (a zero-length online stretch that never ended; found by
    tests/test_availability_contract.py)."""

    def __init__(self, p: float, period_s: float, phase_s: float) -> None:
        self.on_s, self.period, self.phase = p * period_s, period_s, phase_s

    def _start(self, k: int) -> float:
        return k * self.period - self.phase

    def _window(self, t: float) -> int:
        """The k with start(k) <= t < start(k + 1) (floor's rounding corrected at the edges)."""
        k = math.floor((t + self.phase) / self.period)
        if t < self._start(k):
            k -= 1
        elif t >= self._start(k + 1):
            k += 1
        return k

    def online(self, t: float, rnd: int) -> bool:
        return t < self._start(self._window(t)) + self.on_s

    def next_offline(self, t: float, rnd: int) -> float:
        if self.on_s >= self.period:
            return INF
        end = self._start(self._window(t)) + self.on_s
        return end if t < end else t

    def next_online(self, t: float) -> float:
        if self.on_s <= 0:
            return INF
        k = self._window(t)
        return t if t < self._start(k) + self.on_s else self._start(k + 1)


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
