"""The scenario schema: one frozen, validated object per YAML file.

The user-facing keys (``data.dataset``, ``server.mode``, ``stop.rounds`` ...) are a stable
contract: docs, tests and scenario files rely on them.  ``python -m asyncfl reference`` prints the
whole tree with defaults and allowed values (docs/reference/scenario-keys.md is generated from it).
"""

from __future__ import annotations

import copy
import importlib.util
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, create_model, field_validator, model_validator

from asyncfl.config.axes import (
    algorithm_field,
    algorithm_union,
    data_section,
    default_algorithms,
    model_section,
    server_section,
)
from asyncfl.config.clock import Clock
from asyncfl.config.cross_checks import check_algorithm_mode, run_cross_checks
from asyncfl.config.flower import Flower
from asyncfl.config.population import Population, population_model
from asyncfl.config.problems import problems_message
from asyncfl.config.yaml_files import apply_override, override_list, read_scenario, scenario_keys
from asyncfl.errors import ConfigError
from asyncfl.learn.datasets import REGISTRY as DATASET_REGISTRY
from asyncfl.learn.training import Trainer, Training
from asyncfl.registry import ALL, load_plugins, state
from asyncfl.sections import OPT_IN, Section
from asyncfl.sim.servers import SERVER_MODES

# the sections of the built-in registries: the types of annotations, tests and the reference
Data = data_section()
Model = model_section()
Server = server_section()
Algorithm = algorithm_union()


class Stop(Section):
    """The run ends at whichever limit comes first."""

    rounds: int | None = Field(default=None, ge=1, description="aggregations (sync rounds or async versions)")
    virtual_time_s: float | None = Field(default=None, gt=0, description="virtual seconds")
    target_accuracy: float | None = Field(default=None, gt=0, le=1, description="global test accuracy")
    at_target: bool = Field(
        default=True, description="stop once target_accuracy is reached (false: run on, still record time to target)"
    )

    @model_validator(mode="after")
    def _bounded(self) -> Stop:
        if self.rounds is None and self.virtual_time_s is None:
            raise ConfigError("set stop.rounds or stop.virtual_time_s so the run ends")
        return self


class Eval(Section):
    every_rounds: int = Field(default=1, ge=1, description="evaluate the global model every N aggregations")
    per_client: bool = Field(default=True, description="evaluate every client's local test split at the end")
    per_class: bool = Field(default=False, description="add accuracy_class_<c> columns to metrics.csv")


class Output(Section):
    dir: Path = Field(default=Path("runs"), description="runs go to DIR/<name>/<timestamp>/")
    events: Literal["all", "none", "sample"] = Field(
        default="all", description="events.jsonl: every client, none, or the first event_sample clients"
    )
    event_sample: int = Field(default=100, ge=1, description="clients logged when events: sample")
    plot: bool = True
    format: Literal["csv", "parquet"] = Field(
        default="csv",
        description="file format of the population-scale tables (clients, updates, rounds, metrics, weights): "
        "csv, or parquet (columnar, needs pyarrow: pip install 'asyncfl[parquet]'; the logs are CSV while the "
        "run can still resume and become .parquet files when it ends)",
        json_schema_extra=OPT_IN,
    )

    @field_validator("format")
    @classmethod
    def _parquet_needs_pyarrow(cls, value: str) -> str:
        if value == "parquet" and importlib.util.find_spec("pyarrow") is None:
            raise ConfigError(
                "parquet needs pyarrow, which is not installed: pip install 'asyncfl[parquet]' or use csv"
            )
        return value


class Checkpoint(Section):
    """When to save what ``--resume`` needs (model, strategy memory, pending training jobs, progress,
    file offsets).  The clock world is not saved: it is replayed, cheaply and exactly, on resume."""

    every_rounds: int | None = Field(default=10, ge=1, description="save every N aggregations (null: never)")
    every_virtual_s: float | None = Field(default=None, gt=0, description="also save every N virtual seconds")
    min_wall_s: float = Field(
        default=30.0,
        ge=0,
        description="skip a due save until N wall-clock seconds have passed since the last one (a kill loses at "
        "most about that much work; 0: every due save); the save at the run's stop is never skipped",
    )


# a run (or a study's variant) is written to <output.dir>/<name>/: the name must be one plain directory
# name, so that no run escapes its directory ('..', '/') or lands in its parent ('.')
DIRECTORY_NAME = re.compile(r"[A-Za-z0-9_.-]+")
NAME_RULE = "a plain directory name: letters, digits, '_', '.', '-' only, and not '.' or '..'"
# a file name takes at most 255 bytes (NAME_MAX on Linux, macOS, Windows); the longest one asyncfl makes from a
# name is advise's "<name>_advice" (the run directory's timestamp is a directory of its own, below the name's)
NAME_MAX_BYTES = 255 - len("_advice")


def directory_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a directory of its own (None if it can)."""
    if not (isinstance(name, str) and DIRECTORY_NAME.fullmatch(name) and name not in (".", "..")):
        return f"must be {NAME_RULE}"
    if len(name) > NAME_MAX_BYTES:  # (ASCII only: one byte a character)
        return (
            f"is {len(name)} characters long, too long for a directory name; allowed: at most {NAME_MAX_BYTES} "
            "(255 bytes a file name may take, less the '_advice' asyncfl may add)"
        )
    return None


class Scenario(Section):
    name: str = Field(default="scenario", description="names the run directory")
    seed: int = Field(default=0, ge=0, description="every random stream is keyed by it")
    device: Literal["auto", "cpu", "cuda"] = Field(default="auto", description="auto: cuda when available")
    data: Data = Data()
    model: Model = Model()
    training: Training = Training()
    trainer: Trainer = Trainer()
    timing_only: bool = Field(default=False, description="simulate the clock world only, no training")
    clock: Clock = Clock()
    population: Population = Population()
    server: Server = Server()
    algorithm: Algorithm = algorithm_field()
    stop: Stop = Stop(rounds=50)
    eval: Eval = Eval()
    output: Output = Output()
    checkpoint: Checkpoint = Checkpoint()
    flower: Flower | None = Field(
        default=None,
        description="a Flower ServerApp/ClientApp pair on the virtual clock (python -m asyncfl flower)",
        json_schema_extra=OPT_IN,
    )

    @field_validator("name")
    @classmethod
    def _plain_directory_name(cls, name: str) -> str:
        problem = directory_name_problem(name)
        if problem:
            raise ConfigError(problem)
        return name

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], overrides: Iterable[str] = (), source: str = "<dict>") -> Scenario:
        """A validated scenario from its keys (``overrides``: ``--set`` items such as ``server.k=5``); one
        :class:`ConfigError` names every bad YAML path and what is allowed there."""
        raw = copy.deepcopy(scenario_keys(data, source))
        for item in override_list(overrides):
            apply_override(raw, item)
        if "compare" in raw or "seeds" in raw:  # the study keys: not one scenario
            raise ConfigError(f"{source}: this is a study (compare: / seeds:); run it with asyncfl.run_study.")
        model = scenario_model()
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(problems_message(exc, model, source)) from None

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: Iterable[str] = ()) -> Scenario:
        """A validated scenario from a YAML file (trace files named in it are relative to it)."""
        return cls.from_dict(read_scenario(path), overrides, source=str(path))

    @model_validator(mode="before")
    @classmethod
    def _default_algorithm(cls, raw: object) -> object:
        if isinstance(raw, dict):
            server = raw.get("server")
            first = next(iter(SERVER_MODES))
            mode = server.get("mode", first) if isinstance(server, dict) else first
            mode = (
                mode if isinstance(mode, str) and mode in SERVER_MODES else None
            )  # (else the server section says why)
            algorithm = raw.get("algorithm")
            if algorithm is None:
                raw = {**raw, "algorithm": {"name": default_algorithms()[mode or first]}}
            elif mode is not None and isinstance(algorithm, dict) and isinstance(algorithm.get("name"), str):
                # before the algorithm's own keys are checked: those of the other mode's algorithm
                # (fedbuff's staleness for fedavg) would be reported instead of the real problem
                check_algorithm_mode(mode, algorithm["name"])
        return raw

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        """The checks across sections, each registered by the keys it reads (asyncfl/config/cross_checks.py)."""
        run_cross_checks(self)
        return self


BUILT_IN = state()  # what the registries hold before user code or a plug-in registers anything
_ASSEMBLED: dict[tuple, tuple[type[Scenario], list]] = {}  # state -> (model, the entries: their ids stay theirs)


def scenario_model() -> type[Scenario]:
    """The scenario model of the registries as they are now (the installed plug-ins loaded first):
    :class:`Scenario` itself for the built-ins, else a subclass of it (so ``isinstance(s, Scenario)``
    holds for every scenario) whose registry-built sections state the registered entries; one per state."""
    load_plugins()
    now = state()
    if now == BUILT_IN:
        return Scenario
    if now not in _ASSEMBLED:
        population = population_model()
        data, model, server = data_section(), model_section(), server_section()
        assembled = create_model(  # type: ignore[call-overload]
            "Scenario",
            __base__=Scenario,
            __module__=__name__,
            data=(data, data()),
            model=(model, model()),
            population=(population, population()),
            server=(server, server()),
            algorithm=(algorithm_union(), algorithm_field()),
        )
        _ASSEMBLED[now] = assembled, [list(registry.values()) for registry in ALL]
    return _ASSEMBLED[now][0]


def dataset_classes(data: Data) -> int:
    """The number of classes of ``data.dataset`` for the ``data`` section, from its registration (nothing is
    loaded): what the analysis needs to know a run's per-class columns."""
    return DATASET_REGISTRY[data.dataset].shape_and_classes(data)[1]
