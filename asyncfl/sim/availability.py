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

Every model says whether it is ``round_indexed``.  Round-indexed ones (except cluster dropout,
measured over all clients at once) give ``online_in_rounds(rounds)``; continuous-time ones may give
``offline_seconds(until)``, their offline time in [0, until], where they can count it faster than a
walk along next_online / next_offline (clients.csv's ``offline_s``).

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


def switch_path_offline_seconds(model, until: float) -> float:
    """Offline time in [0, until] of a model that keeps its flips in ``switches`` (state i on
    [s_i, s_{i+1}), alternating from ``first_online``): :class:`Markov` and :class:`Diurnal`."""
    model.online(until, 0)  # draws the path past ``until``
    switches, total = model.switches, 0.0
    offline = not model.first_online
    for i, start in enumerate(switches):
        if start >= until:
            break
        if offline:
            end = switches[i + 1] if i + 1 < len(switches) else until
            total += min(end, until) - start
        offline = not offline
    return total


class Always:
    round_indexed = False

    def online(self, t: float, rnd: int) -> bool:
        return True

    def offline_seconds(self, until: float) -> float:
        return 0.0

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
        self.round_indexed = slot_s is None

    def online_in_rounds(self, rounds: np.ndarray) -> np.ndarray:
        """Round mode: the state (1 online, 0 offline) in each of ``rounds``."""
        self.draws[int(rounds.max())]
        return np.frombuffer(bytes(self.draws.draws), dtype=np.uint8)[rounds]

    def offline_seconds(self, until: float) -> float:
        """Slot mode: offline time in [0, until], counted over the slots' draws (in C)."""
        slot = self.slot_s
        last = int(until // slot)
        self.draws[last]  # draws every slot up to the one holding ``until``
        states = np.frombuffer(bytes(self.draws.draws[: last + 1]), dtype=np.uint8)
        partial = until - last * slot if not states[last] else 0.0
        return float(np.count_nonzero(states[:last] == 0)) * slot + partial

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

    round_indexed = False

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

    def offline_seconds(self, until: float) -> float:
        return switch_path_offline_seconds(self, until)

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

    round_indexed = True

    def online_in_rounds(self, rounds: np.ndarray) -> np.ndarray:
        """The state (1 online, 0 offline) in each of ``rounds``."""
        self._state(int(rounds.max()))
        return np.frombuffer(bytes(self.states), dtype=np.uint8)[rounds]

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

    round_indexed = True

    def online_in_rounds(self, rounds: np.ndarray) -> np.ndarray:
        """Whether online in each of ``rounds``."""
        return (rounds + self.phase) % self.period < self.on_rounds

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

    round_indexed = True  # its offline time is measured over all clients at once (results.OfflineMeter)

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

    round_indexed = False

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

    round_indexed = False

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


HOUR_S = 3600.0
DAY_S = 86400.0


def hourly_probabilities(p: float, weights: list[float]) -> list[float]:
    """The 24 hourly online probabilities pi_h = min(1, c * w_h) whose mean is exactly p.

    ``weights`` (24 non-negative numbers, mean 1) give the shape of the day.  Without clipping c = p;
    when p * max(w) > 1 the busiest hours saturate at 1 and c is raised until the mean is p again
    (water filling: with the j largest weights saturated, c = (24 p - j) / sum of the others).  A p
    larger than the share of hours with a positive weight cannot be reached; the caller refuses it."""
    if p <= 0:
        return [0.0] * len(weights)
    if p >= 1:
        return [1.0 if w > 0 else 0.0 for w in weights]
    n = len(weights)
    if p * max(weights) <= 1:
        return [p * w for w in weights]
    ranked = sorted(weights, reverse=True)
    rest = sum(ranked)
    for saturated in range(n):
        rest -= ranked[saturated]  # the ``saturated + 1`` largest weights sit at 1
        c = (n * p - (saturated + 1)) / rest if rest > 0 else math.inf
        nxt = ranked[saturated + 1] if saturated + 1 < n else 0.0
        if c * nxt <= 1:
            return [min(1.0, c * w) for w in weights]
    return [1.0 if w > 0 else 0.0 for w in weights]  # unreachable for p < share of positive hours


class Diurnal:
    """Online with a probability that follows the hour of the client's *local* day.

    The process is a chain of one-hour segments aligned to local clock hours.  Within local hour h
    the client is a two-state on/off Markov chain in continuous time whose stationary online
    probability is pi_h (mean online period pi_h * C, offline (1 - pi_h) * C, C = ``mean_cycle_s``);
    at every hour boundary the state moves from the law Bernoulli(pi_h) to Bernoulli(pi_{h+1}) by
    the *maximal coupling*: an online client stays online with probability min(1, pi_{h+1}/pi_h), an
    offline one comes online with probability max(0, (pi_{h+1} - pi_h) / (1 - pi_h)).  The first
    state is drawn from Bernoulli(pi) of the starting hour.

    Why this construction: it is exactly solvable.  Every segment starts in its stationary law, so
    P(online at t) = pi_{hour(t)} at *every* t, and the long-run online fraction is the mean of the
    24 pi_h, which :func:`hourly_probabilities` makes exactly p_i.  A Markov chain with smoothly
    varying rates would lag behind its target profile (its mean would not be p_i), and redrawing the
    state independently at each hour would add artificial flips on every boundary; the coupling
    flips a client only as often as the change of pi_h demands.  Holding times within a segment are
    exponential, so cutting one at the boundary and drawing afresh is exact (memorylessness).

    ``local0_s``: the client's local time of day (seconds after local midnight) at virtual time 0.
    Answers are exact switch times (no discretisation); the path is drawn lazily, in time order, from
    the client's own stream (uniforms and exponentials taken in blocks), so answers never depend on
    the order of the questions.
    """

    round_indexed = False

    def __init__(self, p: float, pis: list[float], mean_cycle_s: float, local0_s: float, rng) -> None:
        self.p, self.pis, self.cycle, self.rng = p, pis, mean_cycle_s, rng
        self.hour0 = int(local0_s // HOUR_S) % 24
        self.first_boundary = HOUR_S - (local0_s % HOUR_S)  # virtual time of the first local hour change
        self.never_off = min(pis) >= 1.0
        self.never_on = max(pis) <= 0.0
        self._first_online: bool | None = None
        self.switches: list[float] = [0.0]  # state i holds on [s_i, s_{i+1}); state 0 = first_online
        self.segment = 0  # segments [0, b_1), [b_1, b_2), ... known so far: the path is drawn up to b_segment
        self.state = False  # state at the end of the drawn path
        self._u: list[float] = []  # uniforms and standard exponentials drawn ahead, BLOCK at a time: a
        self._e: list[float] = []  # day of one client takes ~75 numbers, one Generator call each costs more
        self._next_u = self._next_e = 0

    BLOCK = 32

    def _uniform(self) -> float:
        if self._next_u >= len(self._u):
            self._u, self._next_u = self.rng.random(self.BLOCK).tolist(), 0
        self._next_u += 1
        return self._u[self._next_u - 1]

    def _exponential(self, mean: float) -> float:
        if self._next_e >= len(self._e):
            self._e, self._next_e = self.rng.standard_exponential(self.BLOCK).tolist(), 0
        self._next_e += 1
        return mean * self._e[self._next_e - 1]

    @property
    def first_online(self) -> bool:
        if self._first_online is None:
            self._first_online = bool(self._uniform() < self.pis[self.hour0])
            self.state = self._first_online
        return self._first_online

    def _boundary(self, n: int) -> float:
        """Start of segment n (n >= 1), computed from n so that boundaries never drift."""
        return 0.0 if n == 0 else self.first_boundary + (n - 1) * HOUR_S

    def _draw_segment(self) -> None:
        """Draw segment ``self.segment`` (flips inside it and the coupling at its end)."""
        self.first_online  # noqa: B018  (the initial state comes first from the stream)
        n = self.segment
        start, end = self._boundary(n), self._boundary(n + 1)
        pi = self.pis[(self.hour0 + n) % 24]
        state, t = self.state, start
        if 0.0 < pi < 1.0:
            on, off = pi * self.cycle, (1.0 - pi) * self.cycle
            while True:
                t += self._exponential(on if state else off)
                if t >= end:
                    break
                state = not state
                self.switches.append(t)
        nxt = self.pis[(self.hour0 + n + 1) % 24]
        u = self._uniform()
        if state:
            stay = 1.0 if pi <= 0 else min(1.0, nxt / pi)
            new = u < stay
        else:
            new = u < (0.0 if pi >= 1 else max(0.0, (nxt - pi) / (1.0 - pi)))
        if new != state:
            self.switches.append(end)
        self.state, self.segment = new, n + 1

    def _known_past(self, t: float) -> None:
        while self._boundary(self.segment) <= t:
            self._draw_segment()

    def _state(self, i: int) -> bool:
        return self.first_online if i % 2 == 0 else not self.first_online

    def _index(self, t: float) -> int:
        self._known_past(t)
        return bisect.bisect_right(self.switches, t) - 1

    def online(self, t: float, rnd: int) -> bool:
        return self._state(self._index(t))

    def offline_seconds(self, until: float) -> float:
        return switch_path_offline_seconds(self, until)

    def _next_switch(self, i: int) -> float:
        while len(self.switches) <= i + 1:  # the state persists to the end of the drawn path
            self._draw_segment()
        return self.switches[i + 1]

    def next_offline(self, t: float, rnd: int) -> float:
        i = self._index(t)
        if not self._state(i):
            return t
        return INF if self.never_off else self._next_switch(i)

    def next_online(self, t: float) -> float:
        i = self._index(t)
        if self._state(i):
            return t
        return INF if self.never_on else self._next_switch(i)


class AllOf:
    """Eligibility as production FL defines it (Bonawitz et al. 2019): the client takes work only
    while every condition holds (available/idle, charging, on an unmetered network).  Each condition
    is an availability-like process; ``reasons`` names the failure recorded when one ends mid-task
    (the first component is the client's availability, reason ``offline``)."""

    round_indexed = False

    def __init__(self, parts: list, reasons: list[str]) -> None:
        self.parts, self.reasons = parts, reasons

    def online(self, t: float, rnd: int) -> bool:
        return all(m.online(t, rnd) for m in self.parts)

    def why_not(self, t: float, rnd: int) -> str | None:
        """The first condition that fails at t (its reason), None when eligible."""
        for m, reason in zip(self.parts, self.reasons):
            if not m.online(t, rnd):
                return reason
        return None

    def next_cut(self, t: float, rnd: int) -> tuple[float, str]:
        """(time, reason) of the first condition to end at or after t; ties go to the earlier part."""
        best, why = INF, self.reasons[0]
        for m, reason in zip(self.parts, self.reasons):
            cut = m.next_offline(t, rnd)
            if cut < best:
                best, why = cut, reason
        return best, why

    def next_offline(self, t: float, rnd: int) -> float:
        return self.next_cut(t, rnd)[0]

    def next_online(self, t: float) -> float:
        """The first time >= t at which every condition holds: move to the latest of the parts'
        next online times until all of them hold there.  Conditions that never hold together within
        ``JOINT_HORIZON_S`` of t (disjoint windows) count as never: inf."""
        give_up = t + JOINT_HORIZON_S
        while t <= give_up:
            later = max(m.next_online(t) for m in self.parts)
            if later == INF:
                return INF
            if all(m.online(later, 0) for m in self.parts):
                return later
            t = later if later > t else math.nextafter(t, INF)
        return INF


JOINT_HORIZON_S = 400 * DAY_S
