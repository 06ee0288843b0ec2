"""One-file extension points: every public module of a package registers one entry.

A data set, a model or a partitioner is a module of its package (``asyncfl.learn.datasets``,
``.models``, ``.partitions``) that sets one module-level constant (``DATASET``, ``MODEL``,
``PARTITIONER``) to its metadata.  Modules whose name starts with ``_`` are helpers, not entries.
Discovery imports the modules, so they must stay cheap to import (no torch at module level): the
schema is built from these registries while a scenario is validated.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import Any


def discover(package: str, path: Iterable[str], attribute: str) -> dict[str, Any]:
    """``{entry.name: entry}`` of every ``attribute`` set by a public module of ``package``, in
    ``(entry.order, entry.name)`` order (the order of allowed values in messages and the reference)."""
    entries = []
    for info in pkgutil.iter_modules(list(path)):
        if info.name.startswith("_"):
            continue
        entry = getattr(importlib.import_module(f"{package}.{info.name}"), attribute, None)
        if entry is not None:
            entries.append(entry)
    registry: dict[str, Any] = {}
    for entry in sorted(entries, key=lambda e: (e.order, e.name)):
        if entry.name in registry:
            raise ValueError(f"{package}: two modules register the name {entry.name!r}")
        registry[entry.name] = entry
    return registry


def or_list(names: Iterable[str]) -> str:
    """``a, b or c``: allowed values in an error message."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
