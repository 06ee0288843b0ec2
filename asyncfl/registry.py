"""Open extension points: every axis (availability kinds, data sets, models, partitioners, server
modes, selection policies, algorithms, compressors, server optimizers, a run's figures) is a :class:`Registry`.

The built-ins are the public modules of the axis' package, each setting one module-level constant
to its registration (``KIND``, ``DATASET``, ``MODEL``, ``PARTITIONER``, ``MODE``, ``KIND`` of
asyncfl/sim/selection, ``PARAMS``); modules
whose name starts with ``_`` are helpers, not entries.  Discovery imports the modules, so they must
stay cheap to import (no torch at module level).  User code adds entries with
:meth:`Registry.register` (from a module or a notebook), and installed plug-ins through the
entry-point group ``asyncfl.plugins`` (:func:`load_plugins`, run once before the first scenario is
validated; a plug-in that cannot load is a :class:`ConfigError` naming its distribution and entry
point, raised again at every later validation in the same process).  The schema is built from the
registries as they are when a scenario is validated (:func:`asyncfl.config.schema.scenario_model`,
cached per :func:`state`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
from collections.abc import Callable, Iterable
from operator import attrgetter
from types import ModuleType
from typing import Any

from asyncfl.errors import ConfigError

PLUGIN_GROUP = "asyncfl.plugins"

ALL: list[Registry] = []  # every registry, in the order their packages were imported
_plugins_loaded = False
_plugin_problems: list[str] = []  # what went wrong loading each broken plug-in (repeated until fixed)


class NameTaken(ValueError):
    """A registration under a name its registry already holds."""


class Registry(dict):
    """``{name: entry}`` of one axis, in ``(order, name)`` order (the order of allowed values in messages
    and the reference: the built-ins state theirs, a new entry goes last).  A name registered twice is
    an error naming it.  ``entry_type``: what :func:`register_object` routes here (None: nothing).
    ``schema``: the scenario schema is built from this registry (False: an axis no scenario key names, such
    as the run's figures, which leaves the schema and its cache alone)."""

    def __init__(
        self,
        axis: str,
        entry_type: type | None = None,
        name: Callable[[Any], str] = attrgetter("name"),
        order: Callable[[Any], int] = attrgetter("order"),
        schema: bool = True,
    ) -> None:
        super().__init__()
        self.axis, self.entry_type, self._name, self._order = axis, entry_type, name, order
        self.schema = schema
        ALL.append(self)

    def register(self, entry: Any) -> Any:
        """Add ``entry`` under its name (and return it, so that it can decorate); a taken name is refused."""
        key = self._name(entry)
        if key in self:
            raise NameTaken(f"{self.axis}: the name {key!r} is already registered")
        entries = [*self.values(), entry]
        self.clear()
        self.update({self._name(e): e for e in sorted(entries, key=lambda e: (self._order(e), self._name(e)))})
        return entry

    def unregister(self, name: str) -> Any:
        """Remove the entry ``name`` (a test's teardown, a notebook redefining its plug-in)."""
        if name not in self:
            raise KeyError(f"{self.axis}: no entry named {name!r}")
        return self.pop(name)

    def accepts(self, entry: Any) -> bool:
        return self.entry_type is not None and isinstance(entry, self.entry_type)


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
    entry_type: type | None = None,
    axis: str | None = None,
    schema: bool = True,
) -> Registry:
    """The :class:`Registry` of every ``attribute`` set by a public module of ``package``."""
    registry = Registry(axis or package, entry_type, name, order, schema)
    for module in public_modules(package, path):
        entry = getattr(module, attribute, None)
        if entry is not None:
            if name(entry) in registry:
                raise NameTaken(f"{package}: two modules register the name {name(entry)!r}")
            registry.register(entry)
    return registry


def state() -> tuple:
    """What the schema's registries hold now (names and entries' identities): the schema is cached per state."""
    return tuple((r.axis, tuple((key, id(entry)) for key, entry in r.items())) for r in ALL if r.schema)


def register_object(entry: Any) -> None:
    """Register ``entry`` in the one registry whose ``entry_type`` it is (an entry point naming an object)."""
    fitting = [r for r in ALL if r.accepts(entry)]
    if len(fitting) != 1:
        raise TypeError(
            f"{entry!r}: not a registration of one asyncfl registry (an AvailabilityKind, DataSet, SelectionKind, ...)"
        )
    fitting[0].register(entry)


def load_plugins(group: str = PLUGIN_GROUP) -> None:
    """Load the installed plug-ins once: each entry point of ``group`` names a module, whose import
    registers its entries, a callable with no arguments that registers them, or a registration object.
    Every entry point is tried; those that fail (an import that raises, a module that is not there, a
    name already taken, ...) are one :class:`ConfigError` naming each distribution and entry point."""
    global _plugins_loaded
    if not _plugins_loaded:
        _plugins_loaded = True
        _plugin_problems.clear()
        broken: dict[str, None] = {}  # the distributions at fault, in order
        for point in importlib.metadata.entry_points(group=group):
            dist = getattr(point, "dist", None)
            name = dist.name if dist is not None else "an unnamed distribution"
            problem = _load_entry_point(point)
            if problem is not None:
                _plugin_problems.append(f"{name} (entry point {point.name} = {point.value}): {problem}")
                broken[name] = None
        if _plugin_problems:
            _plugin_problems.append(f"Fix the plug-in, or uninstall it (pip uninstall {' '.join(broken)}).")
    if _plugin_problems:
        raise ConfigError(
            f"{len(_plugin_problems) - 1} installed plug-in(s) (entry-point group {group}) could not be loaded:\n  "
            + "\n  ".join(_plugin_problems[:-1])
            + f"\n{_plugin_problems[-1]}"
        )


def _load_entry_point(point: importlib.metadata.EntryPoint) -> str | None:
    """Load one plug-in; what went wrong, in a sentence, or None."""
    stage = "importing it"
    try:
        loaded = point.load()
        stage = "registering it"
        if isinstance(loaded, ModuleType):
            return None  # importing it registered its entries
        if callable(loaded) and not isinstance(loaded, type) and not any(r.accepts(loaded) for r in ALL):
            loaded()
        else:
            register_object(loaded)
    except NameTaken as exc:
        return f"{stage} registers a name already taken ({exc}); the plug-in must choose another name"
    except ModuleNotFoundError as exc:
        if exc.name is not None and (point.module == exc.name or point.module.startswith(exc.name + ".")):
            return f"its module {point.module} is not installed ({exc})"
        return f"{stage} needs a module that is not installed ({exc})"
    except Exception as exc:  # noqa: BLE001 - a plug-in's own error: named, never a traceback
        return f"{stage} raised {type(exc).__name__}: {exc}"
    return None


def or_list(names: Iterable[str]) -> str:
    """``a, b or c``: allowed values in an error message."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
