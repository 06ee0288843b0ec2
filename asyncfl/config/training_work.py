"""The training work a scenario implies, in client-steps (one local SGD step of one client), which
``validate`` and a run's start state, with two bounds (docs/reference/cli.md, ``validate``):

    client-steps = tasks x local steps per task
    tasks        = stop.rounds x the clients a sync round asks (server.clients_per_round, or every client;
                   ceil((1 + o) M) with over-selection), or stop.rounds x server.k updates for K-async

Local steps per task, averaged over clients: ``training.local_steps``; for ``epochs`` E, the mean over
the clients of ceil(E n_i / min(batch_size, n_i)), the rule of :meth:`asyncfl.sim.clients.Work.steps`, with
n_i client i's training samples: its own for natural clients whose data set says them without loading
(``DataSet.client_sizes``: shakespeare's roles), else every client at the mean (the training pool x
(1 - data.test_fraction) / data.clients, nothing loaded; exact when the clients' sizes are equal), and for
``synthetic`` 1,000 draws of ``samples_per_client`` x (1 - data.test_fraction).  A mean size would not do
for natural clients: the ceiling gives a 4-window role a whole step, and a few big roles hold most of the
windows (shakespeare_sync: 1 step from the mean size, 7.5 from the sizes).  For a ``time_budget`` of T
seconds, max(1, floor(T s / batch_size)) over 1,000 speeds s drawn from ``population.compute.samples_per_s``
(capped by ``max_steps``).  It is an estimate of the tasks begun: a K-async server also trains updates
that arrive too stale, a sync round asks fewer clients when fewer are idle, a task that misses a deadline
is counted but never trained, and stop.target_accuracy may end the run sooner.

Bounds: one task of more than :data:`MAX_TASK_STEPS` local steps is refused (it would train for days on
any device); a run of more than :data:`WARN_CLIENT_STEPS` client-steps is warned about.  A timing-only
run trains nothing, so it is bounded by neither.
"""

from __future__ import annotations

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
    drops_late: bool = False  # a sync deadline drops late updates: their tasks are counted, never trained

    @property
    def client_steps(self) -> float | None:
        if self.rounds is None:
            return None
        return self.rounds * self.tasks_per_round * self.steps_per_task

    def sentence(self) -> str:
        """One line stating the work, e.g. for ``validate``."""
        steps = f"{_steps(self.steps_per_task)} local steps ({self.steps_key})"
        if self.timing_only:
            return f"training work: none (timing_only: nothing is trained; tasks are timed as {steps})"
        unit = ("aggregation", "updates") if self.k_async else ("round", "clients")
        late = "; tasks that miss server.deadline_s are counted, not trained" if self.drops_late else ""
        if self.rounds is None:
            per_round = self.tasks_per_round * self.steps_per_task
            return (
                f"training work: about {_num(per_round)} client-steps a {unit[0]}: {self.tasks_per_round:,} "
                f"{unit[1]} x {steps}; stop.rounds is not set, so the total is what stop.virtual_time_s allows{late}"
            )
        return (
            f"training work: about {_num(self.client_steps)} client-steps: {self.rounds:,} {unit[0]}s x "
            f"{self.tasks_per_round:,} {unit[1]} each x {steps}{late}"
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
    drops_late = not k_async and server.deadline_s is not None and server.late_updates == "drop"
    return TrainingWork(steps, key, per_round, s.stop.rounds, k_async, s.timing_only, drops_late)


def _steps_per_task(s) -> tuple[float, str]:
    work, batch = s.training.local_work, s.training.batch_size
    if work.kind == "epochs":
        return float(_epoch_steps(work.epochs, _train_sizes(s), batch).mean()), "training.local_work.epochs"
    if work.kind == "time_budget":
        speeds = _speeds(s)
        if speeds is None:  # a device trace: its speeds are read at the run's start
            return float(work.max_steps or 1), "training.local_work.max_steps"
        steps = np.maximum(1, np.floor(work.seconds * speeds / batch + 1e-9))
        if work.max_steps is not None:
            steps = np.minimum(steps, work.max_steps)
        return float(steps.mean()), "training.local_work.seconds"
    return float(s.training.local_steps), "training.local_steps"


def _epoch_steps(epochs: float, sizes: np.ndarray, batch: int) -> np.ndarray:
    """Local steps of a task of ``epochs`` for clients of ``sizes`` training samples (Work.steps's rule)."""
    return np.maximum(1, np.ceil(epochs * sizes / np.minimum(batch, sizes) - 1e-9))


def _train_sizes(s) -> np.ndarray:
    """Training samples of the clients (natural clients), of draws of a client (synthetic), or of a mean client."""
    data = s.data
    entry = DATASETS[data.dataset]
    known = entry.client_sizes(data) if entry.client_sizes is not None else None
    if known is not None:
        return np.asarray(known, dtype=np.float64)
    pool = entry.pool_size(data)
    if pool is not None:
        return np.array([max(1.0, pool * (1 - data.test_fraction) / data.clients)])
    per_client = getattr(getattr(data, data.dataset, None), "samples_per_client", None)
    if per_client is None:  # every client brings its own samples, in numbers nothing here can tell
        return np.ones(1)
    drawn = per_client.sample(np.random.default_rng(0), SPEED_DRAWS)
    return np.maximum(1.0, np.maximum(2, np.rint(drawn)) * (1 - data.test_fraction))


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
        sizes = _train_sizes(s)
        per_epoch = float((sizes / np.minimum(s.training.batch_size, sizes)).mean())  # mean steps of one epoch
        return f"{key} up to about {MAX_TASK_STEPS / per_epoch:,.6g} (~{_num(float(sizes.mean()))} samples a client)"
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


def _steps(x: float) -> str:
    """Local steps of a mean task: a tenth shown when the mean is not whole, so that the product is the total."""
    return _num(x) if x >= 1e9 or x == int(x) else f"{x:,.1f}"
