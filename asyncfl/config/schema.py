"""The scenario schema: one frozen, validated object per YAML file.

The user-facing keys (``data.dataset``, ``server.mode``, ``stop.rounds`` ...) are a stable
contract: docs, tests and scenario files rely on them.  ``python -m asyncfl reference`` prints the
whole tree with defaults and allowed values (the README's reference is generated from it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import Field, create_model, field_validator, model_validator

from asyncfl.config.async_algorithms import ASYNC_ALGORITHMS
from asyncfl.config.base import Section
from asyncfl.config.population import Population
from asyncfl.config.sync_algorithms import SYNC_ALGORITHMS
from asyncfl.learn.datasets import REGISTRY as DATASET_REGISTRY
from asyncfl.learn.models import REGISTRY as MODEL_REGISTRY
from asyncfl.learn.partition import Partition
from asyncfl.learn.partition.iid import IidPartition
from asyncfl.learn.registry import or_list
from asyncfl.sim.availability import kind_of

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


# data.<name>: the section of every data set that has one (data.synthetic, data.mnist1d), after the shared keys
Data = create_model(  # type: ignore[call-overload]
    "Data",
    __base__=_DataKeys,
    __module__=__name__,
    **{name: (entry.params, entry.params()) for name, entry in DATASET_REGISTRY.items() if entry.params is not None},
)


class Model(Section):
    name: Literal[MODELS] = "mlp"  # type: ignore[valid-type]
    hidden: int = Field(default=200, ge=1, description="hidden units of the mlp (per hidden layer)")
    layers: int = Field(default=1, ge=1, description="hidden layers of the mlp (MNIST-1D paper's MLP: 2 of 100)")


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


class Training(Section):
    """Local SGD on each client."""

    local_steps: int = Field(default=10, ge=1, description="local SGD steps per task")
    batch_size: int = Field(default=32, ge=1, description="clients with fewer samples use all of them")
    lr: float = Field(default=0.05, gt=0, description="local learning rate")
    weight_decay: float = Field(default=0.0, ge=0)
    momentum: float = Field(default=0.0, ge=0, lt=1)


class Trainer(Section):
    """How training jobs are executed (results are the same either way, to float tolerance)."""

    executor: Literal["auto", "fused", "batched", "sequential"] = Field(
        default="auto",
        description="fused: batched matrix products (Linear/ReLU models); batched: torch.func vmap over clients "
        "(any model); auto: a fixed rule, not timed: fused for Linear/ReLU models, else batched on CUDA and on "
        "CPU up to 1M parameters (asyncfl/learn/executors.py)",
    )
    chunk_size: int | None = Field(default=None, ge=1, description="max clients per batched call (memory bound)")
    threads: int | None = Field(
        default=None,
        ge=1,
        description="torch CPU threads while the run trains; null: 1 for models up to 1M parameters on the CPU "
        "(small models only lose to thread contention), else torch's default",
    )


class Server(Section):
    mode: Literal["sync", "k_async"] = Field(default="sync", description="synchronous rounds or K-async buffering")
    deadline_s: float | None = Field(default=None, gt=0, description="sync: round deadline (null: none)")
    late_updates: Literal["drop", "next_round"] = Field(
        default="drop", description="sync: what happens to an update that misses the deadline (null: the default)"
    )
    clients_per_round: int | None = Field(default=None, ge=1, description="sync: sample size (null: all)")
    k: int = Field(default=10, ge=1, description="k_async: updates per aggregation (null: the default)")
    concurrency: int = Field(default=20, ge=1, description="k_async: clients training at once (null: the default)")
    max_staleness: int | None = Field(default=None, ge=0, description="k_async: drop older updates")

    @field_validator("late_updates", "k", "concurrency", mode="before")
    @classmethod
    def _null_means_default(cls, value: object, info) -> object:
        """null stands for the default, as for the nullable keys: a study variant that switches
        server.mode clears the other mode's keys with null (a mapping is merged key by key)."""
        return cls.model_fields[info.field_name].default if value is None else value


# keys that only one server mode reads: set in the other mode they would be silently ignored
MODE_KEYS = {
    "sync": ("deadline_s", "late_updates", "clients_per_round"),
    "k_async": ("k", "concurrency", "max_staleness"),
}

Algorithm = Annotated[Union[SYNC_ALGORITHMS + ASYNC_ALGORITHMS], Field(discriminator="name")]  # type: ignore[valid-type]
SYNC_NAMES = tuple(cls.model_fields["name"].annotation.__args__[0] for cls in SYNC_ALGORITHMS)
ASYNC_NAMES = tuple(cls.model_fields["name"].annotation.__args__[0] for cls in ASYNC_ALGORITHMS)


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


class Clock(Section):
    """Wall-clock time of day on the virtual clock: virtual second 0 is ``start_time``.  Diurnal
    processes read each client's local time from it (with ``population.timezones``); metrics.csv
    gains a ``utc_time`` column and the figures label virtual time as time of day."""

    start_time: str | None = Field(
        default=None,
        description="ISO date and time at virtual second 0, UTC unless it names an offset, e.g. 2026-01-05T00:00 "
        "(null: no time of day; diurnal processes then take virtual second 0 as midnight UTC)",
    )

    @field_validator("start_time", mode="before")
    @classmethod
    def _yaml_timestamp(cls, value: object) -> object:
        """YAML reads an unquoted 2026-01-05T00:00:00 (or a bare date) as a timestamp: keep it as text."""
        from datetime import date

        return value.isoformat() if isinstance(value, date) else value

    @field_validator("start_time")
    @classmethod
    def _parse(cls, value: str | None) -> str | None:
        if value is not None:
            start_datetime(value)
        return value


def start_datetime(text: str):
    """``clock.start_time`` as an aware UTC datetime."""
    from datetime import datetime, timezone

    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{text!r} is not an ISO date and time; write e.g. 2026-01-05T00:00 or 2026-01-05T08:30+02:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


class Scenario(Section):
    name: str = Field(default="scenario", pattern=r"^[A-Za-z0-9_.-]+$", description="names the run directory")
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
    algorithm: Algorithm = Field(default=None, description="defaults to fedavg (sync) or fedbuff (k_async)")
    stop: Stop = Stop(rounds=50)
    eval: Eval = Eval()
    output: Output = Output()
    checkpoint: Checkpoint = Checkpoint()

    @model_validator(mode="before")
    @classmethod
    def _default_algorithm(cls, raw: object) -> object:
        if isinstance(raw, dict):
            server = raw.get("server")
            mode = server.get("mode", "sync") if isinstance(server, dict) else "sync"
            algorithm = raw.get("algorithm")
            if algorithm is None:
                raw = {**raw, "algorithm": {"name": "fedbuff" if mode == "k_async" else "fedavg"}}
            elif isinstance(algorithm, dict) and isinstance(algorithm.get("name"), str):
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
        other = next(m for m in MODE_KEYS if m != mode)
        ignored = [
            f"server.{key} ({getattr(self.server, key)!r})"
            for key in MODE_KEYS[other]
            if getattr(self.server, key) != Server.model_fields[key].default
        ]
        if ignored:
            raise ValueError(
                f"{', '.join(ignored)}: used only with server.mode {other}, but server.mode is {mode}, where it "
                "would be ignored; remove it (or set it to null, or its default)"
            )
        if mode == "k_async" and self.server.k > self.data.clients:
            raise ValueError(
                f"server.k ({self.server.k}) is larger than the population (data.clients = {self.data.clients})"
            )
        availability = self.population.availability
        problem = kind_of(availability).k_async_problem(availability) if mode == "k_async" else None
        if problem:  # the kind says why (e.g. it counts sync rounds): asyncfl/sim/availability/
            raise ValueError(problem)
        if name == "fedasync" and self.server.k != 1:
            raise ValueError(
                f"algorithm.name fedasync mixes one update at a time: set server.k to 1 (got {self.server.k})"
            )
        mismatch = model_data_mismatch(self.model.name, self.data.dataset)
        if mismatch:
            raise ValueError(mismatch)
        cpr = self.server.clients_per_round
        if cpr is not None and cpr > self.data.clients:
            raise ValueError(
                f"server.clients_per_round ({cpr}) is larger than the population (data.clients = {self.data.clients})"
            )
        return self


def _mode_mismatch(mode: object, name: object) -> str | None:
    """The error for an algorithm of the other server mode, or None."""
    if mode == "sync" and name in ASYNC_NAMES:
        return f"algorithm.name {name!r} needs server.mode k_async; sync algorithms are {', '.join(SYNC_NAMES)}"
    if mode == "k_async" and name in SYNC_NAMES:
        return f"algorithm.name {name!r} needs server.mode sync; k_async algorithms are {', '.join(ASYNC_NAMES)}"
    return None
