"""``isolated_class``: every sample of one class goes to clients ``0 .. clients-1`` only (dealt
evenly); the other classes are partitioned over all clients by ``base``.  FedHist's fairness
experiment (fedhist.txt, Fig. 5: "the tenth class ... only in a small fraction of slow clients").

The split of the isolated class between training and test.  By default it is the data set's own: for
``digits`` a stratified 20 % hold-out drawn with the seed, 36 of class 9's 180 images, so its accuracy moves
in steps of 2.8 points (issue 47, item 9).  With ``test_share: s`` the global test set holds round(s x n) of
the class's n images: the data set's own test images of the class, and as many more of its training-pool
images as that takes, moved from the pool (the other classes and the test images are as before).  The moved
images are drawn by a generator of fixed seed (:data:`TAG_ISOLATED_TEST`) over the class's pool images in
pool order; the pool is already the seed's (the complement of the seeded hold-out), so each scenario seed
gets its own test images.  ``digits`` with ``test_share: 0.4``: 72 test images (1.4 points each) and 108 for
training on the isolated clients, where the default leaves 144.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import numpy as np
from pydantic import Field

from asyncfl.errors import ConfigError
from asyncfl.learn.partition._base import Partitioner
from asyncfl.learn.partition.iid import IidPartition
from asyncfl.sections import Section

TAG_ISOLATED_TEST = 31  # the fixed seed of the draw that moves pool images to the test set; never change it


class IsolatedClassPartition(Section):
    """Every sample of class ``label`` goes to clients 0 .. clients-1 only (split evenly among them); the
    other classes are spread over all clients by ``base`` (FedHist's fairness experiment, Fig. 5).
    Pair it with a device trace that makes those lowest-numbered clients slow.  ``test_share``: the share of
    the class's images held out for the global test set (default: the data set's own split)."""

    kind: Literal["isolated_class"]
    label: int = Field(ge=0, description="the isolated class")
    clients: int = Field(ge=1, description="how many clients (ids 0 .. clients-1) hold that class")
    # BasePartition (every partitioner with nests=True) is filled in by the package once all are registered
    base: BasePartition = Field(default=IidPartition(), description="partition of the other classes")  # noqa: F821
    test_share: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="share of the isolated class's images (training pool and test split together) that the global "
        "test set holds, at least the data set's own; the rest stay for training (default: the data set's split)",
    )


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


def regroup(raw: Any, spec: IsolatedClassPartition) -> Any:
    """``raw`` (a RawData) with round(test_share x n) of the isolated class's n images in its test set: its own
    test images of the class and pool images moved there (see the module docstring); unchanged without
    ``test_share``."""
    if spec.test_share is None:
        return raw
    pool = np.flatnonzero(raw.y_train == spec.label)
    held = int(np.sum(raw.y_test == spec.label))
    total = len(pool) + held
    wanted = round(spec.test_share * total)
    if wanted < held:
        raise ConfigError(
            f"data.partition.test_share ({spec.test_share:g}) would give class {spec.label} {wanted} test images, "
            f"fewer than the {held} of the data set's own test split: allowed from {held / total:.3g} to below 1"
        )
    moved = np.sort(np.random.default_rng(TAG_ISOLATED_TEST).permutation(pool)[: wanted - held])
    keep = np.setdiff1d(np.arange(len(raw.y_train)), moved)
    n = len(raw.y_train) + len(raw.y_test)
    order = raw.source_order if raw.source_order is not None else np.arange(n)
    return dataclasses.replace(
        raw,
        x_train=raw.x_train[keep],
        y_train=raw.y_train[keep],
        x_test=np.concatenate([raw.x_test, raw.x_train[moved]]),
        y_test=np.concatenate([raw.y_test, raw.y_train[moved]]),
        source_order=np.concatenate([order[keep], order[len(raw.y_train) :], order[moved]]),
    )


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


PARTITIONER = Partitioner(IsolatedClassPartition, split, order=50, nests=False, check=check, regroup=regroup)
