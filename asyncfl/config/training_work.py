"""The training work a scenario implies, in client-steps (one local SGD step of one client), which
``validate`` and a run's start state, with two bounds (docs/reference/scenario-keys.md, "Training work"):

    client-steps = tasks x local steps per task
    tasks        = stop.rounds x the clients a sync round asks (server.clients_per_round, or every client;
                   ceil((1 + o) M) with over-selection), or stop.rounds x server.k updates for K-async

Local steps per task, averaged over clients: ``training.local_steps``; for ``epochs`` E,
ceil(E n / min(batch_size, n)) with n the mean training samples per client (the training pool x
(1 - data.test_fraction) / data.clients, nothing loaded; for ``synthetic`` the mean of
``samples_per_client``); for a ``time_budget`` of T seconds, max(1, floor(T s / batch_size)) over 1,000
speeds s drawn from ``population.compute.samples_per_s`` (capped by ``max_steps``).  It is an estimate: a
K-async server also trains updates that arrive too stale, a sync round asks fewer clients when fewer are
idle, and stop.target_accuracy may end the run sooner.

Bounds: one task of more than :data:`MAX_TASK_STEPS` local steps is refused (it would train for days on
any device); a run of more than :data:`WARN_CLIENT_STEPS` client-steps is warned about.  A timing-only
run trains nothing, so it is bounded by neither.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from asyncfl.errors import ConfigError
from asyncfl.learn.datasets import REGISTRY as DATASETS
from asyncfl.sim.servers.sync import asked

MAX_TASK_STEPS = 1_000_000  # local steps of one task: refused above
WARN_CLIENT_STEPS = 100_000_000  # client-steps of a whole run: warned above (hours to days of training)
SPEED_DRAWS = 1000  # speeds drawn to estimate a time budget's steps


@dataclass(frozen=True)
class TrainingWork:
    """The estimate: local steps of a mean task, tasks a round, rounds (None: not bounded by stop.rounds)."""

    steps_per_task: float
    steps_key: str  # the key that sets steps_per_task, for messages
    tasks_per_round: int
    rounds: int | None
    k_async: bool
    timing_only: bool

    @property
    def client_steps(self) -> float | None:
        if self.rounds is None:
            return None
        return self.rounds * self.tasks_per_round * self.steps_per_task

    def sentence(self) -> str:
        """One line stating the work, e.g. for ``validate``."""
        steps = f"{_num(self.steps_per_task)} local steps ({self.steps_key})"
        if self.timing_only:
            return f"training work: none (timing_only: nothing is trained; tasks are timed as {steps})"
        unit = ("aggregation", "updates") if self.k_async else ("round", "clients")
        if self.rounds is None:
            per_round = self.tasks_per_round * self.steps_per_task
            return (
                f"training work: about {_num(per_round)} client-steps a {unit[0]}: {self.tasks_per_round:,} "
                f"{unit[1]} x {steps}; stop.rounds is not set, so the total is what stop.virtual_time_s allows"
            )
        return (
            f"training work: about {_num(self.client_steps)} client-steps: {self.rounds:,} {unit[0]}s x "
            f"{self.tasks_per_round:,} {unit[1]} each x {steps}"
        )


def training_work(scenario) -> TrainingWork:
    s, server = scenario, scenario.server
    k_async = server.mode == "k_async"
    if k_async:
        per_round = server.k
    else:
        per_round = asked(server.clients_per_round, server.over_selection) or s.data.clients
        per_round = min(per_round, s.data.clients)
    steps, key = _steps_per_task(s)
    return TrainingWork(steps, key, per_round, s.stop.rounds, k_async, s.timing_only)


def _steps_per_task(s) -> tuple[float, str]:
    work, batch = s.training.local_work, s.training.batch_size
    if work.kind == "epochs":
        n = _mean_train_samples(s)
        return math.ceil(work.epochs * n / min(batch, n) - 1e-9), "training.local_work.epochs"
    if work.kind == "time_budget":
        speeds = _speeds(s)
        if speeds is None:  # a device trace: its speeds are read at the run's start
            return float(work.max_steps or 1), "training.local_work.max_steps"
        steps = np.maximum(1, np.floor(work.seconds * speeds / batch + 1e-9))
        if work.max_steps is not None:
            steps = np.minimum(steps, work.max_steps)
        return float(steps.mean()), "training.local_work.seconds"
    return float(s.training.local_steps), "training.local_steps"


def _mean_train_samples(s) -> float:
    data = s.data
    pool = DATASETS[data.dataset].pool_size(data)
    if pool is None:  # every client brings its own samples (synthetic)
        per_client = getattr(getattr(data, data.dataset, None), "samples_per_client", None)
        if per_client is None:
            return 1.0
        pool = float(per_client.sample(np.random.default_rng(0), SPEED_DRAWS).mean()) * data.clients
    return max(1.0, pool * (1 - data.test_fraction) / data.clients)


def _speeds(s) -> np.ndarray | None:
    if s.population.device_trace is not None:
        return None
    return s.population.compute.samples_per_s.sample(np.random.default_rng(0), SPEED_DRAWS)


def check_training_work(scenario) -> None:
    """Raise ConfigError for one task of more than :data:`MAX_TASK_STEPS` local steps (not in a timing-only run)."""
    work = training_work(scenario)
    if work.timing_only or work.steps_per_task <= MAX_TASK_STEPS:
        return
    raise ConfigError(
        f"{work.steps_key}: one task would take about {_num(work.steps_per_task)} local steps (the mean over "
        f"clients), more than the {MAX_TASK_STEPS:,} a task may take (days of training on any device); allowed: "
        f"{_allowed(scenario, work.steps_key)}"
    )


def _allowed(s, key: str) -> str:
    """The values of ``key`` that keep a mean task within :data:`MAX_TASK_STEPS` steps."""
    if key == "training.local_work.epochs":
        n = _mean_train_samples(s)
        return (
            f"{key} up to about {MAX_TASK_STEPS * min(s.training.batch_size, n) / n:,.6g} (~{_num(n)} samples a client)"
        )
    if key == "training.local_work.seconds":
        return f"{key} or training.local_work.max_steps that keep a task within {MAX_TASK_STEPS:,} steps"
    return f"{key} up to {MAX_TASK_STEPS:,}"


def training_work_warning(scenario) -> str | None:
    """A run of more than :data:`WARN_CLIENT_STEPS` client-steps."""
    work = training_work(scenario)
    total = work.client_steps
    if work.timing_only or total is None or total <= WARN_CLIENT_STEPS:
        return None
    return (
        f"{work.sentence()}: more than {WARN_CLIENT_STEPS:,}, hours to days of training; check {work.steps_key}, "
        "stop.rounds and the clients a round"
    )


def _num(x: float) -> str:
    return f"{x:,.0f}" if x < 1e9 else f"{x:.3g}"
