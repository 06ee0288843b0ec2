"""``isolated_class``: every sample of one class goes to clients ``0 .. clients-1`` only (dealt
evenly); the other classes are partitioned over all clients by ``base``.  FedHist's fairness
experiment (fedhist.txt, Fig. 5: "the tenth class ... only in a small fraction of slow clients")."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from asyncfl.errors import ConfigError
from asyncfl.learn.partition._base import Partitioner
from asyncfl.learn.partition.iid import IidPartition
from asyncfl.sections import Section


class IsolatedClassPartition(Section):
    """Every sample of class ``label`` goes to clients 0 .. clients-1 only (split evenly among them); the
    other classes are spread over all clients by ``base`` (FedHist's fairness experiment, Fig. 5).
    Pair it with a device trace that makes those lowest-numbered clients slow."""

    kind: Literal["isolated_class"]
    label: int = Field(ge=0, description="the isolated class")
    clients: int = Field(ge=1, description="how many clients (ids 0 .. clients-1) hold that class")
    # BasePartition (every partitioner with nests=True) is filled in by the package once all are registered
    base: BasePartition = Field(default=IidPartition(), description="partition of the other classes")  # noqa: F821


def split(labels: np.ndarray, n: int, spec: IsolatedClassPartition, rng: np.random.Generator) -> list[np.ndarray]:
    """Class ``spec.label`` dealt evenly to clients 0 .. spec.clients-1; the rest by ``spec.base``.

    The base partition fills every client itself, so the final empty-client repair never moves an
    isolated sample to another client.
    """
    from asyncfl.learn.partition import partition  # the registry, complete by the time anything is split

    check(spec, n, len(np.unique(labels)))
    isolated = np.flatnonzero(labels == spec.label)
    if len(isolated) < spec.clients:
        raise ConfigError(
            f"data.partition.label {spec.label} has {len(isolated)} training samples, fewer than "
            f"data.partition.clients ({spec.clients}): every isolated client must hold some"
        )
    rest = np.flatnonzero(labels != spec.label)
    parts = [rest[p] for p in partition(labels[rest], n, spec.base, rng)]
    for k, chunk in enumerate(np.array_split(rng.permutation(isolated), spec.clients)):
        parts[k] = np.concatenate([parts[k], chunk])
    return parts


def check(spec: IsolatedClassPartition, clients: int, classes: int) -> None:
    """The isolated clients exist, the label is a class of the data set, and the base can split the rest."""
    from asyncfl.learn.partition import REGISTRY  # the registry, complete by the time anything is checked

    if spec.clients > clients:
        raise ConfigError(f"data.partition.clients ({spec.clients}) is larger than data.clients ({clients})")
    if spec.label >= classes:
        raise ConfigError(
            f"data.partition.label ({spec.label}) is not a class of the data set: allowed 0 to {classes - 1}"
        )
    try:
        REGISTRY[spec.base.kind].check_split(spec.base, clients, classes - 1)
    except ConfigError as exc:  # the base's rule, at the base's key
        raise ConfigError(str(exc).replace("data.partition.", "data.partition.base.")) from None


PARTITIONER = Partitioner(IsolatedClassPartition, split, order=50, nests=False, check=check)
