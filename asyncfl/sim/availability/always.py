"""``kind: always``: every client is online at every time and round (the default)."""

from __future__ import annotations

from typing import Literal

from asyncfl.sim.availability.base import INF, AvailabilityKind, AvailabilityModel, Section

__all__ = ["Always", "AlwaysOnline"]


class AlwaysOnline(Section):
    kind: Literal["always"] = "always"


class Always(AvailabilityModel):
    round_indexed = False

    def online(self, t: float, rnd: int) -> bool:
        return True

    def offline_seconds(self, until: float) -> float:
        return 0.0

    def next_offline(self, t: float, rnd: int) -> float:
        return INF

    def next_online(self, t: float) -> float:
        return t


KIND = AvailabilityKind(
    section=AlwaysOnline,
    build=lambda spec, draw: lambda i: Always(),
    probabilities=lambda spec, draw: [1.0] * draw.num_clients,
    seeded=False,
    examples=(("always", {"kind": "always"}),),
    order=0,
)
