"""Availability processes over virtual time (docs/explanation/architecture.md section 3), one module per ``kind``.

Each model answers three questions for one client, all pure functions of (t, round) given the
client's own random stream, so the answers never depend on the order in which they are asked:

``online(t, rnd)``        is the client reachable at time t (in sync round rnd)?
``next_offline(t, rnd)``  first time >= t at which an online client drops (inf: not before the
                          round ends / never)
``next_online(t)``        first time >= t at which the client is online (for the K-async dispatcher)

Round-indexed models (Bernoulli without ``slot_s``, ``MarkovRounds``, ``CyclicRounds``,
``ClusterDropout``) decide once per sync round and hold the state for the whole round; they answer
``next_online(t) = t`` because they have no notion of time between rounds.

Every model is an :class:`~asyncfl.sim.availability.base.AvailabilityModel` and says whether it is
``round_indexed``.  The base class declares the other capabilities with defaults right for any model
(``why_not``, ``next_cut``, ``earliest_online``, ``next_online_within``, ``offline_seconds``,
``online_in_rounds``, ``schedule``); a model overrides one where it can answer faster or say more, e.g.
``offline_seconds(until)`` counted from its draws rather than walked along next_online / next_offline.

Probability p = 1 means online at every time and round (never drops: ``next_offline`` is inf);
p = 0 means never online (continuous-time models: ``next_online`` is inf).  Validation refuses
p = 0 (a client that never shows up is better left out of the population); the models define it
anyway so that they are total.  Cluster dropout with alpha = 0 drops nobody.

A kind is one module of this folder holding its YAML section, its model and its registration
``KIND = AvailabilityKind(...)`` (asyncfl/sim/availability/base.py says what each field means);
:mod:`asyncfl.sim.availability.registry` finds it.  The models' names are reachable from here
(``availability.Markov``) for convenience, collected once the kinds are found.
"""

from __future__ import annotations

import sys

from asyncfl.sim.availability import base
from asyncfl.sim.availability.base import DAY_S, HOUR_S, INF, AllOf, AvailabilityKind, AvailabilityModel, Draw
from asyncfl.sim.availability.registry import KINDS, Availability, kind_of

__all__ = [
    "DAY_S",
    "HOUR_S",
    "INF",
    "KINDS",
    "AllOf",
    "Availability",
    "AvailabilityKind",
    "AvailabilityModel",
    "Draw",
    "kind_of",
]


def _public_names() -> dict[str, object]:
    """``availability.Markov``, ``availability.hourly_probabilities`` ...: the public names (``__all__``) of
    base.py and of every registered kind's module, the first module naming one winning."""
    names: dict[str, object] = {}
    for module in [base, *(sys.modules[k.section.__module__] for k in KINDS.values())]:
        for name in getattr(module, "__all__", ()):
            names.setdefault(name, getattr(module, name))
    return names


globals().update({name: value for name, value in _public_names().items() if name not in globals()})
