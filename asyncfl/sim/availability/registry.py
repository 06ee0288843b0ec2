"""The availability kinds: every module of this package that sets ``KIND`` (an
:class:`~asyncfl.sim.availability.base.AvailabilityKind`), found by importing them all, so that adding
a kind never edits a shared list.  The schema builds ``population.availability`` from :data:`KINDS`."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import Field

from asyncfl.sim.availability.base import AvailabilityKind

PACKAGE = __name__.rpartition(".")[0]


def _discover() -> dict[str, AvailabilityKind]:
    kinds = []
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if info.name in ("base", "registry"):
            continue
        kind = getattr(importlib.import_module(f"{PACKAGE}.{info.name}"), "KIND", None)
        if kind is not None:
            kinds.append(kind)
    kinds.sort(key=lambda k: (k.order, k.name))
    registry: dict[str, AvailabilityKind] = {}
    for kind in kinds:
        if kind.name in registry:
            raise ValueError(f"availability kind {kind.name!r} is registered twice")
        registry[kind.name] = kind
    return registry


KINDS: dict[str, AvailabilityKind] = _discover()
"""kind name -> its registration, in the schema's order."""

Availability = Annotated[Union[tuple(k.section for k in KINDS.values())], Field(discriminator="kind")]  # type: ignore[valid-type]
"""``population.availability``: one section per registered kind, told apart by ``kind``."""


def kind_of(spec: Any) -> AvailabilityKind:
    """The registration of a validated ``population.availability`` (or unmetered) section."""
    return KINDS[spec.kind]
