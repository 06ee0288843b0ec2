"""``kind: diurnal``: online with a probability that follows each client's local hour of the day."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from asyncfl.errors import ConfigError
from asyncfl.sim.availability.base import (
    DAY_S,
    HOUR_S,
    INF,
    AvailabilityKind,
    Probability,
    Section,
    SwitchPath,
    p_in_unit_interval,
)

__all__ = ["Diurnal", "DiurnalAvailability", "hourly_probabilities"]


class DiurnalAvailability(Section):
    """Online with a probability that follows each client's *local* time of day (``clock.start_time``,
    default midnight UTC at virtual time 0, shifted by the client's ``population.timezones`` offset).

    The day's shape is a sinusoid w(h) = 1 + amplitude * cos(2 pi (h + 0.5 - peak_hour) / 24) over the
    24 local hours, or the 24 relative weights of ``hourly``.  Hour h's online probability is
    pi_h = min(1, c_i w(h)) with c_i chosen so that the mean of the 24 pi_h is exactly p_i, the
    client's long-run fraction of time online.  Within an hour the client follows a two-state on/off
    chain (mean on+off cycle ``mean_cycle_s``) started in its stationary law, coupled maximally
    across hour boundaries (asyncfl/sim/availability/diurnal.py, class Diurnal): P(online at t) = pi_h(t)
    at every t, with exact switch times."""

    kind: Literal["diurnal"]
    p: Probability = Field(default=0.5, description="long-run fraction of time online (mean over the day)")
    amplitude: float = Field(default=0.8, ge=0, le=1, description="relative swing of the sinusoid (0: flat)")
    peak_hour: float = Field(default=20.0, ge=0, lt=24, description="local hour of the highest online probability")
    hourly: list[float] | None = Field(
        default=None,
        description="24 relative weights for local hours 0..23 (replaces amplitude and peak_hour)",
    )
    mean_cycle_s: float = Field(default=1800.0, gt=0, description="mean on+off cycle within an hour, seconds")

    @model_validator(mode="after")
    def _check(self) -> DiurnalAvailability:
        p_in_unit_interval(self.p)
        if self.hourly is not None:
            if len(self.hourly) != 24:
                raise ConfigError(f"hourly needs 24 weights (local hours 0..23), got {len(self.hourly)}")
            if min(self.hourly) < 0 or sum(self.hourly) <= 0:
                raise ConfigError("hourly weights must be non-negative and not all zero")
            changed = [k for k in ("amplitude", "peak_hour") if getattr(self, k) != type(self).model_fields[k].default]
            if changed:
                raise ConfigError(
                    f"set either hourly or {' and '.join(changed)}, not both (hourly replaces the sinusoid)"
                )
        return self

    def weights(self) -> list[float]:
        """The 24 hourly weights, scaled to mean 1."""
        if self.hourly is not None:
            raw = list(self.hourly)
        else:
            raw = [1 + self.amplitude * math.cos(2 * math.pi * (h + 0.5 - self.peak_hour) / 24) for h in range(24)]
        mean = sum(raw) / 24
        return [w / mean for w in raw]


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


class Diurnal(SwitchPath):
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

    def _extend_past(self, t: float) -> None:
        while self._boundary(self.segment) <= t:
            self._draw_segment()

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


def _build(spec: DiurnalAvailability, draw):
    p, own = draw.p(spec.p), draw.client_streams()
    weights = spec.weights()
    reachable = sum(1 for w in weights if w > 0) / 24
    if max(p) > reachable + 1e-12:
        raise ConfigError(
            f"{draw.where}.p: values up to {max(p):g} cannot be reached when only {reachable:g} of the "
            "day's hours have a positive weight in hourly; lower p or give more hours a weight."
        )
    starts = draw.local0 if draw.local0 is not None else [draw.start_s_of_day % DAY_S] * draw.num_clients
    return lambda i: Diurnal(p[i], hourly_probabilities(p[i], weights), spec.mean_cycle_s, starts[i], own(i))


UNIFORM = {"dist": "uniform", "low": 0.2, "high": 0.9}

KIND = AvailabilityKind(
    section=DiurnalAvailability,
    build=_build,
    probabilities=lambda spec, draw: draw.p(spec.p),
    local_time=True,
    examples=(
        ("diurnal_sinusoid", {"kind": "diurnal", "p": UNIFORM, "amplitude": 0.6, "mean_cycle_s": 600.0}),
        ("diurnal_hourly", {"kind": "diurnal", "p": 0.4, "hourly": [0.2] * 8 + [1.0] * 16, "mean_cycle_s": 900.0}),
    ),
    unmetered_order=30,  # population.eligibility.unmetered
    order=60,
)
