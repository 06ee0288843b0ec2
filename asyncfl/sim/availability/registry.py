"""The availability kinds: every module of this package that sets ``KIND`` (an
:class:`~asyncfl.sim.availability.base.AvailabilityKind`), found by importing them all, plus the kinds
user code registers (``KINDS.register(kind)``), so that adding a kind never edits a shared list.  The
schema builds ``population.availability`` and ``population.eligibility.unmetered`` from :data:`KINDS`
when a scenario is validated (:func:`availability_union`, :func:`unmetered_union`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import Field

from asyncfl.registry import Registry, discover
from asyncfl.sim.availability.base import AvailabilityKind

PACKAGE = __name__.rpartition(".")[0]


KINDS: Registry = discover(
    PACKAGE, [str(Path(__file__).parent)], "KIND", entry_type=AvailabilityKind, axis="population.availability.kind"
)
"""kind name -> its registration, in the schema's order."""


def availability_union() -> Any:
    """``population.availability``: one section per registered kind, told apart by ``kind``."""
    return Annotated[Union[tuple(k.section for k in KINDS.values())], Field(discriminator="kind")]  # type: ignore[valid-type]


def unmetered_union() -> Any:
    """``population.eligibility.unmetered``: the kinds whose registration says they can be a network process."""
    kinds = sorted((k for k in KINDS.values() if k.unmetered_order is not None), key=lambda k: k.unmetered_order)
    return Annotated[Union[tuple(k.section for k in kinds)], Field(discriminator="kind")]  # type: ignore[valid-type]


Availability = availability_union()  # the built-in kinds' union (the type of annotations and of the reference)
Unmetered = unmetered_union()


def kind_of(spec: Any) -> AvailabilityKind:
    """The registration of a validated ``population.availability`` (or unmetered) section."""
    return KINDS[spec.kind]
