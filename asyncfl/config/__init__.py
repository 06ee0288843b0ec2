"""The scenario: the schema assembled from the registries below it, YAML loading and user-facing errors."""

from __future__ import annotations

from asyncfl.config.loading import load_scenario, validate_scenario
from asyncfl.config.schema import Scenario
from asyncfl.config.yaml_files import apply_override, read_scenario, read_yaml
from asyncfl.errors import ConfigError

__all__ = [
    "ConfigError",
    "Scenario",
    "apply_override",
    "load_scenario",
    "read_scenario",
    "read_yaml",
    "validate_scenario",
]
