"""Scenario configuration: schema, YAML loading and user-facing errors.

The names below are resolved on first use (PEP 562): the schema imports the algorithm and server-mode
modules for their parameter sections, and those import :mod:`asyncfl.config` submodules, so this package
must not import the schema while it is itself being imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asyncfl.config.errors import ConfigError
    from asyncfl.config.loading import apply_override, load_scenario, read_scenario, read_yaml, validate_scenario
    from asyncfl.config.schema import Scenario

_WHERE = {
    "ConfigError": "errors",
    "Scenario": "schema",
    "apply_override": "loading",
    "load_scenario": "loading",
    "read_scenario": "loading",
    "read_yaml": "loading",
    "validate_scenario": "loading",
}


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ConfigError",
    "Scenario",
    "apply_override",
    "load_scenario",
    "read_scenario",
    "read_yaml",
    "validate_scenario",
]
