"""``kind: bernoulli``: online with probability p_i, independently per sync round or per time slot."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from asyncfl.sim.availability.base import (
    INF,
    AvailabilityKind,
    AvailabilityModel,
    Probability,
    Section,
    p_in_unit_interval,
)

__all__ = ["Bernoulli", "BernoulliAvailability"]


class BernoulliAvailability(Section):
    """Online with probability p_i, drawn independently per round (sync) or per slot of ``slot_s``."""

    kind: Literal["bernoulli"]
    p: Probability = Field(
        description="per-client probability, e.g. {dist: uniform, low: 0.1, high: 1} or {dist: label_correlated}"
    )
    slot_s: float | None = Field(
        default=None, gt=0, description="slot length in virtual seconds; null = one draw per sync round"
    )

    @model_validator(mode="after")
    def _check_p(self) -> BernoulliAvailability:
        p_in_unit_interval(self.p)
        return self


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


class Bernoulli(AvailabilityModel):
    """Online with probability p, independently per sync round (``slot_s`` None) or per time slot.

    In round mode the client stays online for the whole round once it is drawn online.
    """

    def __init__(self, p: float, rng: np.random.Generator, slot_s: float | None) -> None:
        self.p, self.slot_s, self.draws = p, slot_s, _LazyDraws(p, rng)
        self.round_indexed = slot_s is None

    def online_in_rounds(self, rounds: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
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


def _build(spec: BernoulliAvailability, draw):
    p, own = draw.p(spec.p), draw.client_streams()
    return lambda i: Bernoulli(p[i], own(i), spec.slot_s)


UNIFORM = {"dist": "uniform", "low": 0.2, "high": 0.9}

KIND = AvailabilityKind(
    section=BernoulliAvailability,
    build=_build,
    probabilities=lambda spec, draw: draw.p(spec.p),
    counts_rounds=lambda spec: "slot_s null" if spec.slot_s is None else None,
    k_async_error=lambda spec: (
        "population.availability.slot_s is required with server.mode k_async (there are no rounds)"
        if spec.slot_s is None
        else None
    ),
    examples=(
        ("bernoulli_rounds", {"kind": "bernoulli", "p": UNIFORM}),
        ("bernoulli_slots", {"kind": "bernoulli", "p": UNIFORM, "slot_s": 7.0}),
    ),
    unmetered_order=40,  # population.eligibility.unmetered
    order=10,
)
