"""Checks that read more than one section of a scenario, each registered with the YAML keys it reads.

One style for every check on a scenario: it raises :class:`~asyncfl.errors.ConfigError` with one sentence
naming the YAML path and the allowed values, and returns nothing when the scenario is fine.  A check of one
section is a pydantic validator of that section (pydantic reports the ConfigError, a ValueError, at the
section's path); a check across sections is a function registered here with :func:`cross_check`, naming
the keys it reads.  The scenario's last validator runs them in :data:`CROSS_CHECKS` order (the order of
registration: the built-ins below, then user code and plug-ins), and the first one that fails is the
message.  A registration's own rule (``ServerMode.check``, ``AlgorithmParams.check``, an availability kind's
k_async rule, a selection kind's modes) is reached through the cross-check that reads its section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asyncfl.algorithms import PARAMS, algorithms_for
from asyncfl.config.axes import check_model_takes_data, check_unused_own_sections, mode_keys
from asyncfl.config.flower import check_flower_checkpoint, check_k_async_flower
from asyncfl.errors import ConfigError
from asyncfl.learn.datasets import REGISTRY as DATASET_REGISTRY
from asyncfl.learn.datasets import DataSet
from asyncfl.learn.models import REGISTRY as MODEL_REGISTRY
from asyncfl.learn.partition import REGISTRY as PARTITIONERS
from asyncfl.registry import Registry, or_list
from asyncfl.sections import Section
from asyncfl.sim.availability import kind_of
from asyncfl.sim.clients import check_time_budget
from asyncfl.sim.selection import check_selection
from asyncfl.sim.servers import SERVER_MODES


@dataclass(frozen=True)
class CrossCheck:
    """A check across sections: ``check(scenario)`` raises ConfigError; ``reads``: the YAML keys it reads
    (a section, or a key of one), so that a reader knows which sections own it; ``order``: its place in the
    run order (the default: after every check registered before it)."""

    name: str
    reads: tuple[str, ...]
    check: Callable[[Any], None]
    order: int


CROSS_CHECKS: Registry = Registry("scenario cross-checks", entry_type=CrossCheck)
"""name -> :class:`CrossCheck`, in the order the scenario runs them."""


def cross_check(*reads: str, order: int | None = None) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Register the decorated ``check(scenario)`` as a cross-section check reading the keys ``reads``."""

    def register(check: Callable[[Any], None]) -> Callable[[Any], None]:
        place = len(CROSS_CHECKS) if order is None else order
        CROSS_CHECKS.register(CrossCheck(check.__name__, reads, check, place))
        return check

    return register


def run_cross_checks(scenario: Any) -> None:
    """Every registered cross-check on ``scenario``, in order; the first that fails raises."""
    for entry in CROSS_CHECKS.values():
        entry.check(scenario)


def check_algorithm_mode(mode: object, name: object) -> None:
    """Raise for an algorithm that does not run under ``server.mode`` ``mode`` (unknown names pass: their
    own key's check names them)."""
    if mode not in SERVER_MODES or name not in PARAMS or mode in PARAMS[name].modes:
        return
    needs = or_list([m for m in SERVER_MODES if m in PARAMS[name].modes])
    raise ConfigError(
        f"algorithm.name {name!r} needs server.mode {needs}; {mode} algorithms are {', '.join(algorithms_for(mode))}"
    )


@cross_check("server.mode", "algorithm.name")
def algorithm_runs_under_the_mode(scenario: Any) -> None:
    check_algorithm_mode(scenario.server.mode, scenario.algorithm.name)


@cross_check("server")
def no_key_of_another_mode(scenario: Any) -> None:
    """Refuse a key of another server mode set to anything but its default: it would be ignored."""
    server = scenario.server
    keys_of = mode_keys()
    mine = keys_of[server.mode]
    ignored = {
        key: [m for m, keys in keys_of.items() if key in keys]
        for keys in keys_of.values()
        for key in keys
        if key not in mine and getattr(server, key) != type(server).model_fields[key].default
    }
    if ignored:
        listed = ", ".join(f"server.{key} ({getattr(server, key)!r})" for key in ignored)
        users = or_list(list(dict.fromkeys(m for modes in ignored.values() for m in modes)))
        raise ConfigError(
            f"{listed}: used only with server.mode {users}, but server.mode is {server.mode}, where it "
            "would be ignored; remove it (or set it to null, or its default)"
        )


@cross_check("server", "data.clients", "population.battery")
def server_mode_rules(scenario: Any) -> None:
    """The mode's own rule on the rest of the scenario (``ServerMode.check``)."""
    SERVER_MODES[scenario.server.mode].check(scenario)


@cross_check("population.availability", "server.mode")
def availability_fits_the_mode(scenario: Any) -> None:
    """A kind that counts sync rounds, under a mode without rounds (the kind says why)."""
    if not SERVER_MODES[scenario.server.mode].rounds:
        availability = scenario.population.availability
        kind_of(availability).check_k_async(availability)


@cross_check("server.selection", "server.mode", "timing_only")
def selection_serves_the_mode(scenario: Any) -> None:
    """A mode the policy cannot serve, or a loss-based policy without losses."""
    check_selection(scenario.server.selection, scenario.server.mode, scenario.timing_only)


@cross_check("algorithm", "server", "training")
def algorithm_rules(scenario: Any) -> None:
    """The algorithm's own rule on the rest of the scenario (``AlgorithmParams.check``)."""
    scenario.algorithm.check(scenario)


@cross_check(
    "training.local_work", "training.batch_size", "population.compute", "population.device_trace", "timing_only"
)
def local_work_fits(scenario: Any) -> None:
    """``training.local_work`` against the rest of the scenario, as far as validation can tell:

    * epochs in a timing-only run: no data set is loaded, so no client's sample count is known;
    * a time budget shorter than one step for every client.  Known here only for a timing-only run
      (every client does full batches) with a bounded ``population.compute.samples_per_s`` and no device
      trace; otherwise the run checks it at its start, by the same rule (:func:`check_time_budget`)."""
    training, population, timing_only = scenario.training, scenario.population, scenario.timing_only
    work = training.local_work
    if work.kind == "epochs" and timing_only:
        raise ConfigError(
            "training.local_work: epochs needs the clients' sample counts, which a timing_only run does not load; "
            "use {kind: steps} or {kind: time_budget, seconds: T}"
        )
    if work.kind != "time_budget" or not timing_only or population.device_trace is not None:
        return
    speed = population.compute.samples_per_s
    fastest = {
        "constant": lambda d: d.value,
        "uniform": lambda d: d.high,
        "tiers": lambda d: max(t.value for t in d.tiers),
    }.get(speed.dist)
    if fastest is not None:  # (unbounded: some client may be fast enough)
        check_time_budget(work.seconds, training.batch_size, [fastest(speed)], None)


@cross_check("data", "model")
def no_section_of_another_entry(scenario: Any) -> None:
    """``data.<dataset>`` / ``model.<name>`` keys of a data set or model not chosen: refused, not ignored."""
    check_unused_own_sections(scenario.data, DATASET_REGISTRY, "data", "dataset")
    check_unused_own_sections(scenario.model, MODEL_REGISTRY, "model", "name")


@cross_check("model.name", "data.dataset")
def model_takes_the_data(scenario: Any) -> None:
    check_model_takes_data(scenario.model.name, scenario.data.dataset)


@cross_check("data", "timing_only")
def data_can_be_loaded(scenario: Any) -> None:
    """What loading and partitioning would fail on (a timing-only run loads no data: its data set only
    sizes the model)."""
    if not scenario.timing_only:
        check_data(scenario.data)


@cross_check("flower", "server.mode", "eval.per_class", "training.compression", "timing_only")
def flower_fits_the_mode(scenario: Any) -> None:
    """A K-async run on Flower clients: no ServerApp, a named initial model (:func:`check_k_async_flower`)."""
    check_k_async_flower(scenario)


@cross_check("flower", "checkpoint", "server.mode")
def flower_saves_no_checkpoint(scenario: Any) -> None:
    """A Flower run with a ServerApp cannot be checkpointed: a checkpoint section asking for one is refused
    (:func:`check_flower_checkpoint`); a K-async one checkpoints."""
    check_flower_checkpoint(scenario)


@cross_check("trainer.workers", "flower", "timing_only")
def workers_have_jobs(scenario: Any) -> None:
    """``trainer.workers`` train asyncfl's own jobs: a Flower run's ClientApps train themselves, and a
    timing-only run trains nothing."""
    if scenario.trainer.workers is None:
        return
    if scenario.flower is not None:
        raise ConfigError(
            "trainer.workers: a Flower run's ClientApps do the training, so there is nothing to send to workers; "
            "allowed: remove trainer.workers (Flower's own engine spreads ClientApps over Ray actors)"
        )
    if scenario.timing_only:
        raise ConfigError("trainer.workers: a timing_only run trains nothing; allowed: remove trainer.workers")


def check_data(data: Section) -> None:
    """Raise one ConfigError with everything loading and partitioning ``data`` would fail on, found from the
    registrations alone (asyncfl/learn/datasets, asyncfl/learn/partition): nothing is loaded."""
    entry = DATASET_REGISTRY[data.dataset]
    checks = [lambda: entry.check and entry.check(data), lambda: _check_partition_kind(data, entry)]
    pool = entry.pool_size(data)
    if pool is not None:  # the partition deals a pool (else every client has data of its own)
        classes = entry.shape_and_classes(data)[1]
        checks += [
            lambda: _check_pool_size(data, pool),
            lambda: _check_partition(data, classes, pool, entry.samples(data)),
        ]
    found = []
    for check in checks:  # every one: a user fixes them all at once
        try:
            check()
        except ConfigError as exc:
            found.append(str(exc).rstrip("."))  # (the message gets its one full stop when it is shown)
    if found:
        raise ConfigError("; ".join(found))


def _check_partition(data: Section, classes: int, pool: int, samples: int | None) -> None:
    """The partition's own checks: the samples it names against the data set's registered sizes, then (once
    those hold: one message for one problem of a file) its split."""
    entry = PARTITIONERS[data.partition.kind]
    entry.check_indices(data.partition, pool, samples)
    entry.check_split(data.partition, data.clients, classes)


def _check_pool_size(data: Section, pool: int) -> None:
    if data.clients > pool:
        raise ConfigError(
            f"data.clients ({data.clients}) is larger than the training pool of data.dataset {data.dataset} "
            f"({pool} samples): every client needs at least one sample; allowed: 1 to {pool}"
        )


def _check_partition_kind(data: Section, entry: DataSet) -> None:
    """An artificial partition of a data set with clients of its own, or natural clients asked of a pool."""
    kind, artificial = data.partition.kind, [name for name in PARTITIONERS if name != "natural"]
    if entry.natural and kind != "natural":
        raise ConfigError(
            f"data.partition.kind {kind} does not apply to data.dataset {data.dataset}: its clients are its own "
            f"(shakespeare: a play's speaking roles); allowed: natural (the default for it)"
        )
    if kind == "natural" and entry.pool_size(data) is not None:
        natural = or_list([name for name, e in DATASET_REGISTRY.items() if e.natural or e.pool_size(data) is None])
        raise ConfigError(
            f"data.partition.kind natural needs a data set with clients of its own ({natural}); data.dataset "
            f"{data.dataset} is one pool to split: allowed: {or_list(artificial)}"
        )
