"""The global random generators a user's Flower apps draw from (Python's ``random``: Flower's ``sample_nodes``;
numpy's and torch's: the apps' own code), seeded from the scenario's ``seed`` while the apps run and restored
afterwards, so that the same seed gives the same run.  User code draws from them, so this is the one place asyncfl
seeds a global generator."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from asyncfl.seeding import stream


def flower_seeds(seed: int) -> tuple[int, int]:
    """(the Flower run id, the apps' generator seed) of a run with scenario seed ``seed``."""
    draws = stream(seed, "flower")
    return int(draws.integers(1, 2**62)), int(draws.integers(2**32))


@contextmanager
def apps_seeded(seed: int) -> Iterator[None]:
    """``random``, numpy's and torch's (CPU) global generators seeded with ``seed``; the caller's states restored."""
    saved_random, saved_numpy = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            yield
    finally:
        random.setstate(saved_random)
        np.random.set_state(saved_numpy)
