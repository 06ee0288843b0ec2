"""Scenario configuration: schema, YAML loading and user-facing errors.

The names are loaded on first use (PEP 562): the registries the schema is built from (availability
kinds, data sets, models, partitioners, server modes, algorithms) import ``asyncfl.config.base`` and
``asyncfl.config.errors``, which must not pull in the schema while it is being built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asyncfl.config.errors import ConfigError
    from asyncfl.config.loading import apply_override, load_scenario, read_scenario, read_yaml, validate_scenario
    from asyncfl.config.schema import Scenario

_HOME = {
    "ConfigError": "asyncfl.config.errors",
    "Scenario": "asyncfl.config.schema",
    "apply_override": "asyncfl.config.loading",
    "load_scenario": "asyncfl.config.loading",
    "read_scenario": "asyncfl.config.loading",
    "read_yaml": "asyncfl.config.loading",
    "validate_scenario": "asyncfl.config.loading",
}


def __getattr__(name: str) -> object:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)


__all__ = [
    "ConfigError",
    "Scenario",
    "apply_override",
    "load_scenario",
    "read_scenario",
    "read_yaml",
    "validate_scenario",
]
