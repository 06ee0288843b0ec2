"""Scenario configuration: schema, YAML loading and user-facing errors."""

from asyncfl.config.loading import (
    ConfigError,
    apply_override,
    load_scenario,
    read_scenario,
    read_yaml,
    validate_scenario,
)
from asyncfl.config.schema import Scenario

__all__ = [
    "ConfigError",
    "Scenario",
    "apply_override",
    "load_scenario",
    "read_scenario",
    "read_yaml",
    "validate_scenario",
]
