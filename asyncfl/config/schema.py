"""The scenario schema: one frozen, validated object per YAML file.

The user-facing keys (``data.dataset``, ``server.mode``, ``stop.rounds`` ...) are a stable
contract: docs, tests and scenario files rely on them.  ``python -m asyncfl reference`` prints the
whole tree with defaults and allowed values (the README's reference is generated from it).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import Field, ValidationError, create_model, field_validator, model_validator

from asyncfl.algorithms import PARAMS, algorithms_for
from asyncfl.config.clock import Clock
from asyncfl.config.population import Population
from asyncfl.config.problems import problems_message
from asyncfl.config.yaml_files import apply_override, read_scenario
from asyncfl.errors import ConfigError
from asyncfl.learn.datasets import REGISTRY as DATASET_REGISTRY
from asyncfl.learn.models import REGISTRY as MODEL_REGISTRY
from asyncfl.learn.partition import REGISTRY as PARTITIONERS
from asyncfl.learn.partition import Partition
from asyncfl.learn.partition.iid import IidPartition
from asyncfl.learn.training import Trainer, Training
from asyncfl.registry import or_list
from asyncfl.sections import Section
from asyncfl.sim.availability import kind_of
from asyncfl.sim.servers import SERVER_MODES

# The data sets, models and partitioners are registries (one module each, under asyncfl/learn): the
# allowed values, the data.<name> sections, the data.partition union and the model/data check come from them.
DATASETS = tuple(DATASET_REGISTRY)
MODELS = tuple(MODEL_REGISTRY)
INPUT_WORDS = {"signals": "one-dimensional signals", "images": "images"}  # DataSet.inputs, in messages


class _DataKeys(Section):
    dataset: Literal[DATASETS] = "digits"  # type: ignore[valid-type]
    clients: int = Field(default=20, ge=1, description="population size N")
    partition: Partition = IidPartition()
    test_fraction: float = Field(default=0.2, ge=0, lt=1, description="per-client local test split")
    data_dir: Path = Field(default=Path("data"), description="where torchvision data sets live")
    download: bool = Field(default=True, description="download torchvision data sets when missing")


def _with_own_sections(name: str, shared: type[Section], registry: dict, where: str) -> type[Section]:
    """``shared`` plus one ``<entry>`` key per registered entry that brings a section of its own keys
    (``data.synthetic``, ``model.<name>``), after the shared keys."""
    own = {key: (entry.params, entry.params()) for key, entry in registry.items() if entry.params is not None}
    clash = sorted(set(own) & set(shared.model_fields))
    if clash:  # a module's name would hide a shared key
        raise ValueError(f"{where} {clash[0]!r} brings its own section, but {where.split('.')[0]}.{clash[0]} is taken")
    return create_model(name, __base__=shared, __module__=__name__, **own)  # type: ignore[call-overload]


Data = _with_own_sections("Data", _DataKeys, DATASET_REGISTRY, "data.dataset")


class _ModelKeys(Section):
    name: Literal[MODELS] = "mlp"  # type: ignore[valid-type]
    hidden: int = Field(default=200, ge=1, description="hidden units of the mlp (per hidden layer)")
    layers: int = Field(default=1, ge=1, description="hidden layers of the mlp (MNIST-1D paper's MLP: 2 of 100)")


Model = _with_own_sections("Model", _ModelKeys, MODEL_REGISTRY, "model.name")


def model_data_mismatch(model: str, dataset: str) -> str | None:
    """The error for a model that cannot take the data set's inputs (cnn1d on images), or None."""
    spec, inputs = MODEL_REGISTRY[model], DATASET_REGISTRY[dataset].inputs
    if inputs in spec.inputs:
        return None
    fitting_data = sorted(name for name, entry in DATASET_REGISTRY.items() if entry.inputs in spec.inputs)
    fitting_models = [name for name, entry in MODEL_REGISTRY.items() if inputs in entry.inputs]
    return (
        f"model.name {model} {spec.needs or 'cannot take these inputs'}; data.dataset {dataset!r} holds "
        f"{INPUT_WORDS.get(inputs, inputs)}: use it with data.dataset {or_list(fitting_data)}, or choose model.name "
        f"{or_list(fitting_models)}"
    )


class ServerKeys(Section):
    """Base of the flat ``server`` section: ``mode`` plus every mode's own keys (asyncfl.sim.servers)."""

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, raw: object) -> object:
        """null stands for the default of a mode's key, as for the nullable keys: a study variant that
        switches server.mode clears the other mode's keys with null (a mapping is merged key by key)."""
        if not isinstance(raw, dict):
            return raw
        fields = cls.model_fields
        return {k: fields[k].default if v is None and k in fields and k != "mode" else v for k, v in raw.items()}


# keys that only one server mode reads: set in another mode they would be silently ignored
MODE_KEYS: dict[str, tuple[str, ...]] = {name: tuple(mode.keys.model_fields) for name, mode in SERVER_MODES.items()}

Server = create_model(  # type: ignore[call-overload]
    "Server",
    __base__=ServerKeys,
    __module__=__name__,
    mode=(
        Literal[tuple(SERVER_MODES)],
        Field(
            default=next(iter(SERVER_MODES)),
            description=or_list([mode.summary for mode in SERVER_MODES.values()]),
        ),
    ),
    **{
        key: (field.annotation, field)
        for mode in SERVER_MODES.values()
        for key, field in mode.keys.model_fields.items()
    },
)

Algorithm = Annotated[Union[tuple(PARAMS.values())], Field(discriminator="name")]  # type: ignore[valid-type]
DEFAULT_ALGORITHMS = {name: mode.default_algorithm for name, mode in SERVER_MODES.items()}


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
            raise ValueError("set stop.rounds or stop.virtual_time_s so the run ends")
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


class Checkpoint(Section):
    """When to save what ``--resume`` needs (model, strategy memory, pending training jobs, progress,
    file offsets).  The clock world is not saved: it is replayed, cheaply and exactly, on resume."""

    every_rounds: int | None = Field(default=10, ge=1, description="save every N aggregations (null: never)")
    every_virtual_s: float | None = Field(default=None, gt=0, description="also save every N virtual seconds")


# a run (or a study's variant) is written to <output.dir>/<name>/: the name must be one plain directory
# name, so that no run escapes its directory ('..', '/') or lands in its parent ('.')
DIRECTORY_NAME = re.compile(r"[A-Za-z0-9_.-]+")
NAME_RULE = "a plain directory name: letters, digits, '_', '.', '-' only, and not '.' or '..'"


def directory_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a directory of its own (None if it can)."""
    if isinstance(name, str) and DIRECTORY_NAME.fullmatch(name) and name not in (".", ".."):
        return None
    return f"must be {NAME_RULE}"


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
    algorithm: Algorithm = Field(
        default=None,
        description="defaults to " + or_list([f"{name} ({mode})" for mode, name in DEFAULT_ALGORITHMS.items()]),
    )
    stop: Stop = Stop(rounds=50)
    eval: Eval = Eval()
    output: Output = Output()
    checkpoint: Checkpoint = Checkpoint()

    @field_validator("name")
    @classmethod
    def _plain_directory_name(cls, name: str) -> str:
        problem = directory_name_problem(name)
        if problem:
            raise ValueError(problem)
        return name

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], overrides: Iterable[str] = (), source: str = "<dict>") -> Scenario:
        """A validated scenario from its keys (``overrides``: ``--set`` items such as ``server.k=5``); one
        :class:`ConfigError` names every bad YAML path and what is allowed there."""
        raw = copy.deepcopy(dict(data))
        for item in overrides:
            apply_override(raw, item)
        if "compare" in raw or "seeds" in raw:  # the study keys: not one scenario
            raise ConfigError(f"{source}: this is a study (compare: / seeds:); run it with asyncfl.run_study.")
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(problems_message(exc, cls, source)) from None

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
                raw = {**raw, "algorithm": {"name": DEFAULT_ALGORITHMS[mode or first]}}
            elif mode is not None and isinstance(algorithm, dict) and isinstance(algorithm.get("name"), str):
                # before the algorithm's own keys are checked: those of the other mode's algorithm
                # (fedbuff's staleness for fedavg) would be reported instead of the real problem
                mismatch = _mode_mismatch(mode, algorithm["name"])
                if mismatch:
                    raise ValueError(mismatch)
        return raw

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        mode, name = self.server.mode, self.algorithm.name
        mismatch = _mode_mismatch(mode, name)
        if mismatch:
            raise ValueError(mismatch)
        _no_other_mode_keys(self.server)
        SERVER_MODES[mode].check(self)
        availability = self.population.availability
        problem = kind_of(availability).k_async_problem(availability) if not SERVER_MODES[mode].rounds else None
        if problem:  # the kind says why (e.g. it counts sync rounds): asyncfl/sim/availability/
            raise ValueError(problem)
        self.algorithm.check(self)
        mismatch = model_data_mismatch(self.model.name, self.data.dataset)
        if mismatch:
            raise ValueError(mismatch)
        if not self.timing_only:  # a timing-only run loads no data (its data set only sizes the model)
            problems = data_problems(self.data)
            if problems:
                raise ValueError("; ".join(problems))
        return self


def data_problems(data: Data) -> list[str]:
    """What loading and partitioning ``data`` would fail on, found from the registrations alone
    (asyncfl/learn/datasets, asyncfl/learn/partition): nothing is loaded."""
    entry = DATASET_REGISTRY[data.dataset]
    problems = [entry.check(data)] if entry.check is not None else []
    pool = entry.pool_size(data)
    if pool is not None:  # the partition deals a pool (else every client has data of its own)
        if data.clients > pool:
            problems.append(
                f"data.clients ({data.clients}) is larger than the training pool of data.dataset {data.dataset} "
                f"({pool} samples): every client needs at least one sample; allowed: 1 to {pool}"
            )
        classes = entry.shape_and_classes(data)[1]
        problems.append(PARTITIONERS[data.partition.kind].problem(data.partition, data.clients, classes))
    return [problem for problem in problems if problem]


def _mode_mismatch(mode: object, name: object) -> str | None:
    """The error for an algorithm that does not run under ``server.mode`` ``mode``, or None."""
    if mode not in SERVER_MODES or name not in PARAMS or mode in PARAMS[name].modes:
        return None
    needs = or_list([m for m in SERVER_MODES if m in PARAMS[name].modes])
    return f"algorithm.name {name!r} needs server.mode {needs}; {mode} algorithms are {', '.join(algorithms_for(mode))}"


def _no_other_mode_keys(server: Section) -> None:
    """Refuse a key of another server mode set to anything but its default: it would be ignored."""
    mine = MODE_KEYS[server.mode]
    ignored = {
        key: [m for m, keys in MODE_KEYS.items() if key in keys]
        for keys in MODE_KEYS.values()
        for key in keys
        if key not in mine and getattr(server, key) != Server.model_fields[key].default
    }
    if ignored:
        listed = ", ".join(f"server.{key} ({getattr(server, key)!r})" for key in ignored)
        users = or_list(list(dict.fromkeys(m for modes in ignored.values() for m in modes)))
        raise ValueError(
            f"{listed}: used only with server.mode {users}, but server.mode is {server.mode}, where it "
            "would be ignored; remove it (or set it to null, or its default)"
        )
