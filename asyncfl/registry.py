"""One-file extension points: every public module of a package registers one entry.

An availability kind, a data set, a model, a partitioner, a server mode or an algorithm is a module
of its package that sets one module-level constant to its registration (``KIND``, ``DATASET``,
``MODEL``, ``PARTITIONER``, ``MODE``, ``PARAMS``).  Modules whose name starts with ``_`` are helpers,
not entries.  Discovery imports the modules, so they must stay cheap to import (no torch at module
level): the schema is built from these registries while a scenario is validated.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from operator import attrgetter
from types import ModuleType
from typing import Any


def public_modules(package: str, path: Iterable[str]) -> list[ModuleType]:
    """Every module of ``package`` (found on ``path``) whose name does not start with ``_``, imported."""
    names = sorted(info.name for info in pkgutil.iter_modules(list(path)) if not info.name.startswith("_"))
    return [importlib.import_module(f"{package}.{name}") for name in names]


def discover(
    package: str,
    path: Iterable[str],
    attribute: str,
    name: Callable[[Any], str] = attrgetter("name"),
    order: Callable[[Any], int] = attrgetter("order"),
) -> dict[str, Any]:
    """``{name(entry): entry}`` of every ``attribute`` set by a public module of ``package``, in
    ``(order(entry), name(entry))`` order (the order of allowed values in messages and the reference:
    the built-ins state theirs, a new entry goes last).  A name registered twice is an error."""
    entries = [getattr(m, attribute) for m in public_modules(package, path) if getattr(m, attribute, None) is not None]
    registry: dict[str, Any] = {}
    for entry in sorted(entries, key=lambda e: (order(e), name(e))):
        if name(entry) in registry:
            raise ValueError(f"{package}: two modules register the name {name(entry)!r}")
        registry[name(entry)] = entry
    return registry


def or_list(names: Iterable[str]) -> str:
    """``a, b or c``: allowed values in an error message."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
