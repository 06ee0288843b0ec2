"""What a partitioner module registers (see :mod:`asyncfl.learn.partition`)."""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

# split(labels, num_clients, section, rng) -> one int index array per client (empty ones are repaired)
Split = Callable[[np.ndarray, int, Any, np.random.Generator], list[np.ndarray]]


@dataclass(frozen=True)
class Partitioner:
    """A ``data.partition.kind``: its section (whose ``kind: Literal["<name>"]`` names it) and its function.

    ``order`` places it among the allowed values; ``nests`` says whether it may serve as another
    partitioner's ``base`` (isolated_class's; False for a partitioner that itself takes a base).
    ``check(section, clients, classes)``: raises :class:`~asyncfl.errors.ConfigError` (naming the YAML key)
    if the section cannot split a pool of ``classes`` classes across ``clients`` clients; ``validate`` asks
    it with the data set's registered classes,
    and ``split`` with the labels it was given.  ``regroup(raw, section)``: the data set with the
    training pool and test set the partition brings itself (``file`` with a test list), before ``split``.
    ``check_samples(section, pool, samples)``: raises ConfigError if the section names samples outside a
    training pool of ``pool`` (or, ``samples`` not None, a data set of ``samples`` in all); ``validate`` asks it
    with the data set's registered sizes, the run with the loaded ones.
    """

    section: type
    split: Split
    order: int = 1000
    nests: bool = True
    check: Callable[[Any, int, int], None] | None = None
    # (RawData, section) -> RawData; typed Any: the data sets import this package (synthetic splits with it)
    regroup: Callable[[Any, Any], Any] | None = None
    check_samples: Callable[[Any, int, int | None], None] | None = None

    def check_split(self, section: Any, clients: int, classes: int) -> None:
        """Raise ConfigError if ``section`` cannot split ``classes`` classes across ``clients`` clients."""
        if self.check is not None:
            self.check(section, clients, classes)

    def check_indices(self, section: Any, pool: int, samples: int | None) -> None:
        """Raise ConfigError if ``section`` names samples outside the data set's sizes (``check_samples``)."""
        if self.check_samples is not None:
            self.check_samples(section, pool, samples)

    @property
    def name(self) -> str:
        return typing.get_args(self.section.model_fields["kind"].annotation)[0]
