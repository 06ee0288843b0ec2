"""``kind: markov``: a two-state on/off chain, in continuous time (``mean_cycle_s``) or over sync rounds
(``mean_cycle_rounds``, FedAU's Markovian participation)."""

from __future__ import annotations

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
    SwitchPath,
    p_in_unit_interval,
)

__all__ = ["Markov", "MarkovAvailability", "MarkovRounds"]


class MarkovAvailability(Section):
    """Two-state on/off process with stationary online probability p_i; the initial state is drawn
    from the stationary law, so P(online) = p_i at every time.

    Set exactly one of ``mean_cycle_s`` (continuous time, exponential holding times; mean online
    period p_i * mean_cycle_s) or ``mean_cycle_rounds`` (FedAU's per-round chain: each sync round
    the client leaves the online state with probability 1/(p_i C) and the offline state with
    probability 1/((1 - p_i) C), C = the cycle, lengthened to at least 1/min(p_i, 1 - p_i) rounds
    so both are probabilities)."""

    kind: Literal["markov"]
    p: Probability = Field(default=0.5, description="stationary probability of being online")
    mean_cycle_s: float | None = Field(
        default=None, gt=0, description="mean length of one online+offline cycle, seconds (continuous time)"
    )
    mean_cycle_rounds: float | None = Field(
        default=None, gt=0, description="mean length of one online+offline cycle in sync rounds (per-round chain)"
    )

    @model_validator(mode="after")
    def _check(self) -> MarkovAvailability:
        p_in_unit_interval(self.p)
        if (self.mean_cycle_s is None) == (self.mean_cycle_rounds is None):
            raise ConfigError("set exactly one of mean_cycle_s (continuous time) or mean_cycle_rounds (per sync round)")
        return self


class Markov(SwitchPath):
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


class MarkovRounds(AvailabilityModel):
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

    def online_in_rounds(self, rounds: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
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


def _build(spec: MarkovAvailability, draw):
    p, own = draw.p(spec.p), draw.client_streams()
    if spec.mean_cycle_rounds is not None:
        return lambda i: MarkovRounds(p[i], spec.mean_cycle_rounds, own(i))
    return lambda i: Markov(p[i], spec.mean_cycle_s, own(i))


UNIFORM = {"dist": "uniform", "low": 0.2, "high": 0.9}

KIND = AvailabilityKind(
    section=MarkovAvailability,
    build=_build,
    probabilities=lambda spec, draw: draw.p(spec.p),
    counts_rounds=lambda spec: "mean_cycle_rounds" if spec.mean_cycle_rounds is not None else None,
    examples=(
        ("markov_time", {"kind": "markov", "p": UNIFORM, "mean_cycle_s": 30.0}),
        ("markov_rounds", {"kind": "markov", "p": UNIFORM, "mean_cycle_rounds": 6.0}),
    ),
    unmetered_order=10,  # population.eligibility.unmetered
    order=20,
)
