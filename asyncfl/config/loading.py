"""A validated :class:`Scenario` from a file or from data (one :class:`ConfigError` naming every bad YAML
path), and the trace files a scenario names read as a run would read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from asyncfl.config.schema import Scenario
from asyncfl.sim.availability import kind_of
from asyncfl.sim.profiles import read_device_trace


def load_scenario(path: str | Path, overrides: Iterable[str] = ()) -> Scenario:
    """Read ``path``, apply ``--set key=value`` overrides and validate (:meth:`Scenario.from_yaml`)."""
    return Scenario.from_yaml(path, overrides)


def validate_scenario(raw: Mapping[str, Any], source: str = "<scenario>") -> Scenario:
    """Validate scenario data (:meth:`Scenario.from_dict`); ``source`` starts the error message."""
    return Scenario.from_dict(raw, source=source)


def check_trace_files(scenario: Scenario) -> None:
    """Read the scenario's trace files as a run would, so that ``validate`` reports a missing file,
    a wrong header or a bad interval (with file and line) instead of the run failing later."""
    population = scenario.population
    if population.device_trace is not None:
        read_device_trace(population.device_trace, scenario.data.clients, population.compute.jitter_sigma)
    availability = population.availability
    check = kind_of(availability).check_files  # kinds that read files (trace) say how
    if check is not None:
        check(availability, scenario.data.clients)
