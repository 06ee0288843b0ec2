"""``kind: cyclic``: online for a fraction p_i of every period, in virtual time (``period_s``) or in
sync rounds (``period_rounds``, FedAU's cyclic participation)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from asyncfl.errors import ConfigError
from asyncfl.sim.availability.base import (
    INF,
    AvailabilityKind,
    AvailabilityModel,
    Probability,
    Section,
    p_in_unit_interval,
)

__all__ = ["Cyclic", "CyclicAvailability", "CyclicRounds", "cyclic_on_rounds"]


class CyclicAvailability(Section):
    """Online for a fraction p_i of every period with a uniformly random per-client phase.

    Set exactly one of ``period_s`` (diurnal windows in virtual time) or ``period_rounds`` (FedAU's
    cyclic pattern: online in max(1, round(p_i * period_rounds)) consecutive sync rounds of every
    period)."""

    kind: Literal["cyclic"]
    period_s: float | None = Field(default=None, gt=0, description="period in virtual seconds")
    period_rounds: int | None = Field(default=None, ge=1, description="period in sync rounds")
    p: Probability = Field(default=0.5, description="fraction of each period spent online")

    @model_validator(mode="after")
    def _check(self) -> CyclicAvailability:
        p_in_unit_interval(self.p)
        if (self.period_s is None) == (self.period_rounds is None):
            raise ConfigError("set exactly one of period_s (virtual time) or period_rounds (sync rounds)")
        return self


def cyclic_on_rounds(p: float, period: int) -> int:
    """Online rounds per period of :class:`CyclicRounds`: max(1, round(p * period)) for p > 0, 0 for
    p = 0.  The realised participation rate is this over ``period``, not p itself."""
    return min(period, max(1, round(p * period))) if p > 0 else 0


class CyclicRounds(AvailabilityModel):
    """FedAU's cyclic participation: online in ``on_rounds`` consecutive rounds of every ``period``
    rounds, shifted by a per-client integer phase.  ``on_rounds`` = max(1, round(p * period)) for p > 0
    (FedAU's rule: every client shows up at least once per period), 0 for p = 0."""

    def __init__(self, p: float, period: int, phase: int) -> None:
        self.period, self.phase = period, phase
        self.on_rounds = cyclic_on_rounds(p, period)

    round_indexed = True

    def online_in_rounds(self, rounds: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
        """Whether online in each of ``rounds``."""
        return (rounds + self.phase) % self.period < self.on_rounds

    def online(self, t: float, rnd: int) -> bool:
        return (rnd + self.phase) % self.period < self.on_rounds

    def next_offline(self, t: float, rnd: int) -> float:
        return INF

    def next_online(self, t: float) -> float:
        return t


class Cyclic(AvailabilityModel):
    """Online during the first p*period of every period, shifted by a per-client phase.

    Window k is [k*period - phase, k*period - phase + p*period).  Every answer compares t with
    window edges computed by that one formula, so ``online`` and the next switch times agree to the
    last bit: with ``(t + phase) % period`` a client could be online at t while its window's end,
    rounded, was t itself (a zero-length online stretch that never ended; found by
    tests/testing/test_availability_contract.py)."""

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


def _probabilities(spec: CyclicAvailability, draw) -> list[float]:
    """Over whole rounds, the rate it realises, on-rounds / period (a client with p * period < 1 still
    shows up once a period); building its model from that rate gives the same on-rounds (the rule is
    idempotent)."""
    p = draw.p(spec.p)
    if spec.period_rounds is not None:
        return [cyclic_on_rounds(x, spec.period_rounds) / spec.period_rounds for x in p]
    return p


def _build(spec: CyclicAvailability, draw):
    p = _probabilities(spec, draw)
    if spec.period_rounds is not None:
        phases = draw.stream("phases").integers(0, spec.period_rounds, size=draw.num_clients).tolist()
        return lambda i: CyclicRounds(p[i], spec.period_rounds, phases[i])
    cyclic_phases = draw.stream("phases").uniform(0, spec.period_s, size=draw.num_clients).tolist()
    return lambda i: Cyclic(p[i], spec.period_s, cyclic_phases[i])


UNIFORM = {"dist": "uniform", "low": 0.2, "high": 0.9}

KIND = AvailabilityKind(
    section=CyclicAvailability,
    build=_build,
    probabilities=_probabilities,
    counts_rounds=lambda spec: "period_rounds" if spec.period_rounds is not None else None,
    examples=(
        ("cyclic_time", {"kind": "cyclic", "p": UNIFORM, "period_s": 50.0}),
        ("cyclic_rounds", {"kind": "cyclic", "p": UNIFORM, "period_rounds": 8}),
    ),
    unmetered_order=20,  # population.eligibility.unmetered
    order=30,
)
