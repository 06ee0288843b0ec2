"""The availability kinds: every module of this package that sets ``KIND`` (an
:class:`~asyncfl.sim.availability.base.AvailabilityKind`), found by importing them all, so that adding
a kind never edits a shared list.  The schema builds ``population.availability`` and
``population.eligibility.unmetered`` from :data:`KINDS`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import Field

from asyncfl.registry import discover
from asyncfl.sim.availability.base import AvailabilityKind

PACKAGE = __name__.rpartition(".")[0]


KINDS: dict[str, AvailabilityKind] = discover(PACKAGE, [str(Path(__file__).parent)], "KIND")
"""kind name -> its registration, in the schema's order."""

Availability = Annotated[Union[tuple(k.section for k in KINDS.values())], Field(discriminator="kind")]  # type: ignore[valid-type]
"""``population.availability``: one section per registered kind, told apart by ``kind``."""

NETWORK_KINDS = sorted((k for k in KINDS.values() if k.unmetered_order is not None), key=lambda k: k.unmetered_order)
Unmetered = Annotated[Union[tuple(k.section for k in NETWORK_KINDS)], Field(discriminator="kind")]  # type: ignore[valid-type]
"""``population.eligibility.unmetered``: the kinds whose registration says they can be a network process."""


def kind_of(spec: Any) -> AvailabilityKind:
    """The registration of a validated ``population.availability`` (or unmetered) section."""
    return KINDS[spec.kind]
