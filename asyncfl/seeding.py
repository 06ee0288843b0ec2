"""Every random number in asyncfl comes from a stream keyed by (scenario seed, purpose, ids...).

Keying by purpose and id (client, round, attempt) means one consumer never shifts another's
numbers: a client's minibatches do not depend on who shares its batch, and adding a new random
feature does not change the results of old scenarios.  No global generator is ever touched.
"""

from __future__ import annotations

import numpy as np

PURPOSES = {
    "profiles": 1,  # device speeds, links, battery levels
    "availability": 2,  # one stream per client
    "jitter": 3,  # per-task compute jitter, one stream per client
    "selection": 4,  # sync client sampling, one stream per round
    "dispatch": 5,  # k_async choice of the next client
    "minibatch": 6,  # local SGD sample order, per (client, attempt)
    "model_init": 7,
    "phases": 8,  # cyclic phases, plug phases
    "timezones": 9,  # per-client UTC offsets (population.timezones)
}


def stream(seed: int, purpose: str, *ids: int) -> np.random.Generator:
    # The id count is part of the key: SeedSequence ignores trailing zeros, so without it
    # (seed, purpose) and (seed, purpose, 0) would be the same stream.
    return np.random.default_rng(np.random.SeedSequence([seed, PURPOSES[purpose], len(ids), *ids]))


class LazyStream:
    """``stream(seed, purpose, *ids)``, built on first use.  Building a Generator costs tens of
    microseconds, which the many clients of a large population that never act should not pay; the
    numbers are the same as the eager stream's."""

    __slots__ = ("_key", "_rng")

    def __init__(self, seed: int, purpose: str, *ids: int) -> None:
        self._key, self._rng = (seed, purpose, *ids), None

    def __getattr__(self, name: str):  # reached only for the Generator's own attributes
        if self._rng is None:
            self._rng = stream(*self._key)
        return getattr(self._rng, name)
