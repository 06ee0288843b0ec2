"""The scenario schema: one frozen, validated object per YAML file.

The user-facing keys (``data.dataset``, ``server.mode``, ``stop.rounds`` ...) are a stable
contract: docs, tests and scenario files rely on them.  ``python -m asyncfl reference`` prints the
whole tree with defaults and allowed values (the README's reference is generated from it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import Field, model_validator

from asyncfl.config.async_algorithms import ASYNC_ALGORITHMS
from asyncfl.config.base import Distribution, Section
from asyncfl.config.population import Population
from asyncfl.config.sync_algorithms import SYNC_ALGORITHMS

DATASETS = ("digits", "synthetic", "mnist", "fashion_mnist", "cifar10", "svhn")
MODELS = ("logreg", "mlp", "lenet5", "resnet18")


class IidPartition(Section):
    """Every client draws uniformly from the pooled training data."""

    kind: Literal["iid"] = "iid"


class DirichletPartition(Section):
    """Label proportions of each client ~ Dirichlet(alpha); small alpha = strongly non-IID."""

    kind: Literal["dirichlet"]
    alpha: float = Field(gt=0, description="Dirichlet concentration")


class ClassesPartition(Section):
    """Shards: each client holds ``per_client`` classes (FedAR/MIFA use two)."""

    kind: Literal["classes"]
    per_client: int = Field(ge=1)


class ClustersPartition(Section):
    """Clients in one cluster share a label distribution (FL-FDMS); labels split across clusters."""

    kind: Literal["clusters"]
    clusters: int = Field(ge=1)


BasePartition = Annotated[
    Union[IidPartition, DirichletPartition, ClassesPartition, ClustersPartition],
    Field(discriminator="kind"),
]


class IsolatedClassPartition(Section):
    """Every sample of class ``label`` goes to clients 0 .. clients-1 only (split evenly among them); the
    other classes are spread over all clients by ``base`` (FedHist's fairness experiment, Fig. 5).
    Pair it with a device trace that makes those lowest-numbered clients slow."""

    kind: Literal["isolated_class"]
    label: int = Field(ge=0, description="the isolated class")
    clients: int = Field(ge=1, description="how many clients (ids 0 .. clients-1) hold that class")
    base: BasePartition = Field(default=IidPartition(), description="partition of the other classes")


Partition = Annotated[
    Union[IidPartition, DirichletPartition, ClassesPartition, ClustersPartition, IsolatedClassPartition],
    Field(discriminator="kind"),
]


class Synthetic(Section):
    """FedProx Synthetic(alpha, beta): alpha = model heterogeneity, beta = data heterogeneity."""

    alpha: float = Field(default=1.0, ge=0)
    beta: float = Field(default=1.0, ge=0)
    dimension: int = Field(default=60, ge=1)
    classes: int = Field(default=10, ge=2)
    samples_per_client: Distribution = Field(
        default_factory=lambda: {"dist": "lognormal", "median": 100, "sigma": 0.5},
        description="training+test samples per client",
    )


class Data(Section):
    dataset: Literal[DATASETS] = "digits"  # type: ignore[valid-type]
    clients: int = Field(default=20, ge=1, description="population size N")
    partition: Partition = IidPartition()
    test_fraction: float = Field(default=0.2, ge=0, lt=1, description="per-client local test split")
    data_dir: Path = Field(default=Path("data"), description="where torchvision data sets live")
    download: bool = Field(default=True, description="download torchvision data sets when missing")
    synthetic: Synthetic = Synthetic()


class Model(Section):
    name: Literal[MODELS] = "mlp"  # type: ignore[valid-type]
    hidden: int = Field(default=200, ge=1, description="hidden units of the mlp")


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


class Server(Section):
    mode: Literal["sync", "k_async"] = Field(default="sync", description="synchronous rounds or K-async buffering")
    deadline_s: float | None = Field(default=None, gt=0, description="sync: round deadline (null: none)")
    late_updates: Literal["drop", "next_round"] = Field(
        default="drop", description="sync: what happens to an update that misses the deadline"
    )
    clients_per_round: int | None = Field(default=None, ge=1, description="sync: sample size (null: all)")
    k: int = Field(default=10, ge=1, description="k_async: updates per aggregation")
    concurrency: int = Field(default=20, ge=1, description="k_async: clients training at once")
    max_staleness: int | None = Field(default=None, ge=0, description="k_async: drop older updates")


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


class Scenario(Section):
    name: str = Field(default="scenario", pattern=r"^[A-Za-z0-9_.-]+$", description="names the run directory")
    seed: int = Field(default=0, ge=0, description="every random stream is keyed by it")
    device: Literal["auto", "cpu", "cuda"] = Field(default="auto", description="auto: cuda when available")
    data: Data = Data()
    model: Model = Model()
    training: Training = Training()
    trainer: Trainer = Trainer()
    timing_only: bool = Field(default=False, description="simulate the clock world only, no training")
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
        if mode == "k_async" and availability.kind == "bernoulli" and availability.slot_s is None:
            raise ValueError(
                "population.availability.slot_s is required with server.mode k_async (there are no rounds)"
            )
        if name == "fedasync" and self.server.k != 1:
            raise ValueError(
                f"algorithm.name fedasync mixes one update at a time: set server.k to 1 (got {self.server.k})"
            )
        round_based = {
            "cluster_dropout": "kind cluster_dropout",
            "markov": "mean_cycle_rounds" if getattr(availability, "mean_cycle_rounds", None) else None,
            "cyclic": "period_rounds" if getattr(availability, "period_rounds", None) else None,
        }.get(availability.kind)
        if mode == "k_async" and round_based:
            raise ValueError(
                f"population.availability: {round_based} counts sync rounds, which server.mode k_async does not "
                "have; use the continuous-time form (mean_cycle_s / period_s)"
            )
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
