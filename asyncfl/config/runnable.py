"""What ``validate`` and a run's start check beyond the schema, on this machine: the files a run reads
(trace files, the data set's files), the memory its population needs and the training work it implies
(:mod:`asyncfl.config.training_work`); and what they warn about (:func:`scenario_warnings`).  Every problem is
reported at once, and nothing is loaded or allocated to find it."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Callable

from asyncfl.config.loading import check_trace_files
from asyncfl.config.schema import Scenario
from asyncfl.config.training_work import check_training_work, training_work_warning
from asyncfl.errors import ConfigError
from asyncfl.learn.datasets import REGISTRY as DATASETS
from asyncfl.learn.training import RAY_MISSING
from asyncfl.sim.population import bytes_per_client, population_bytes
from asyncfl.sim.selection import KINDS as SELECTION_KINDS
from asyncfl.sim.servers.sync import asked


def check_runnable(scenario: Scenario) -> None:
    """Raise one :class:`ConfigError` listing every problem a run of ``scenario`` would meet here."""
    problems = []
    for check in FLOWER_CHECKS if scenario.flower is not None else CHECKS:  # every one: a user fixes them all
        try:
            check(scenario)
        except ConfigError as exc:
            problems.append(str(exc))
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError(f"{len(problems)} problem(s):\n  " + "\n  ".join(problems))


def check_data_files(scenario: Scenario) -> None:
    """The data set's own check (missing files with downloads off); a timing-only run reads none."""
    check = DATASETS[scenario.data.dataset].check_files
    if not scenario.timing_only and check is not None:
        check(scenario.data)


def check_population_memory(scenario: Scenario, available: int | None = None) -> None:
    """A population larger than this machine's available memory (``available``: bytes, None: read it),
    refused before it is built instead of failing in numpy's allocator."""
    available = available_memory_bytes() if available is None else available
    if available is None:  # no way to tell here: let the run try
        return
    clients = scenario.data.clients
    per_round, rounds = scenario.server.clients_per_round, scenario.stop.rounds  # per_round: sync only
    touched = per_round * rounds if per_round is not None and rounds is not None else None  # None: all
    need = population_bytes(scenario.population, clients, clients if touched is None else touched)
    if need <= available:
        return
    drawn, built = bytes_per_client(scenario.population)
    largest = available // (drawn + built)
    if touched is not None and largest > touched:
        largest = (available - touched * built) // drawn
    touches = f"{min(touched, clients):,}" if touched is not None else "all"
    raise ConfigError(
        f"data.clients ({clients:,}): a population this large needs about {_gib(need)} of memory "
        f"({drawn:,} bytes per client, and {built:,} more per client the run "
        f"touches, {touches} here; measured by benchmarks/performance/population_memory.py), but {_gib(available)} is "
        f"available on this machine; allowed here: data.clients up to about {max(largest, 0):,}"
    )


def available_memory_bytes() -> int | None:
    """Memory a new allocation can get without swapping: MemAvailable of /proc/meminfo (Linux), else
    the free physical pages (os.sysconf), else None."""
    with contextlib.suppress(OSError):  # no /proc (not Linux): ask the next source
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:,.1f} GiB"


def check_ray_installed(scenario: Scenario) -> None:
    """``trainer.workers`` runs on Ray, an optional dependency (the ``ray`` extra)."""
    if scenario.trainer.workers is not None and importlib.util.find_spec("ray") is None:
        raise ConfigError(RAY_MISSING)


CHECKS: tuple[Callable[[Scenario], None], ...] = (
    check_ray_installed,
    check_trace_files,
    check_data_files,
    check_population_memory,
    check_training_work,
)
# a Flower run: its ClientApp loads its own data and decides its own training work
FLOWER_CHECKS: tuple[Callable[[Scenario], None], ...] = (check_trace_files, check_population_memory)


def scenario_warnings(scenario: Scenario) -> list[str]:
    """What a valid scenario's user should know before its run (``validate`` and ``run`` print it on
    stderr, summary.json keeps it): the selection policy's warning (e.g. TiFL tiers smaller than a round)
    and training work past :data:`asyncfl.config.training_work.WARN_CLIENT_STEPS` client-steps."""
    server = scenario.server
    kind = SELECTION_KINDS[server.selection.kind]
    count = asked(server.clients_per_round, server.over_selection) if server.mode == "sync" else None
    found = [kind.warning(server.selection, scenario.data.clients, count) if kind.warning else None]
    found.append(training_work_warning(scenario))
    return [w for w in found if w]
