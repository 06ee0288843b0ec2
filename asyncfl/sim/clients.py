"""Client devices and one participation attempt (a *task*) as a SimPy process.

A task is download -> compute -> upload.  It fails, with a recorded reason, when the client is
offline at the start or drops before its upload completes (``offline``), has too little battery to
accept work or empties it midway (``battery``), is cut off by a sync deadline with
``late_updates: drop`` (``deadline``), or, with ``population.eligibility``, is unplugged
(``charging``) or leaves its unmetered network (``network``) at the start or midway; an over-selected
sync round cancels the tasks still running when it closes (``cancelled``, :func:`cancel_task`); a trainer outside
asyncfl (a Flower ClientApp, :attr:`Work.perform`) that failed sends back an error reply (``client_app``).

The whole timeline of a task is planned when it starts: availability and battery are functions of
the client's own history, and the only outside interruption (the deadline) is known in advance.
Planning first tells the learning world which training jobs will ever be needed, so a job whose
client fails is never computed.  The process then plays the plan out in virtual time, so the event
log is in time order and the servers react at the right moments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from asyncfl.errors import ConfigError
from asyncfl.sim.battery import DeviceBattery
from asyncfl.sim.engine import simpy
from asyncfl.sim.profiles import DeviceProfile

PHASES = ("download", "compute", "upload")  # = asyncfl.output.columns.PHASES (the timing world imports no writer)
# client_app: a Flower ClientApp raised (asyncfl.flower); its count stays 0 in every other run
FAILURE_REASONS = ("offline", "battery", "deadline", "charging", "network", "cancelled", "client_app")


@dataclass
class ClientStats:
    attempts: int = 0
    delivered: int = 0
    failures: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAILURE_REASONS, 0))
    busy_s: float = 0.0
    # virtual seconds spent in each phase by every task planned so far (failed ones up to their cut);
    # a task still running when the run stops is trimmed by the report (asyncfl.runner.callbacks.clients_table)
    download_s: float = 0.0
    compute_s: float = 0.0
    upload_s: float = 0.0
    lost_compute_s: float = 0.0  # of compute_s, the computing of tasks that failed (work thrown away)
    last_plan: TaskPlan | None = None
    late_spans: list = field(default_factory=list)  # sync next_round: (round close, task end) of tasks running on


@dataclass
class ClientDevice:
    """The timing-world state of one client."""

    id: int
    profile: DeviceProfile
    availability: object  # one of asyncfl.sim.availability's models
    jitter_rng: np.random.Generator
    battery: DeviceBattery | None = None
    train_samples: int = 1 << 30  # size of the client's training split (small clients do smaller batches)
    busy_until: float = -math.inf  # end of the current task (idle when <= now)
    stats: ClientStats = field(default_factory=ClientStats)


@dataclass(frozen=True)
class Work:
    """What the server asks of a client."""

    local_steps: int
    batch_size: int
    model_bytes: int
    joules_per_sample: float = 0.0
    joules_per_byte: float = 0.0
    time_budget_s: float | None = None  # training.local_work time_budget: steps that fit this many seconds
    max_steps: int | None = None  # ... and at most this many (None: no cap)
    epochs: float | None = None  # training.local_work epochs: steps of this many passes over the client's data
    upload_bytes: int | None = None  # bytes of one upload (training.compression); None: model_bytes
    # work done by a trainer outside asyncfl when the task starts (a Flower ClientApp, asyncfl.flower): what it
    # reports times the task in place of the fields above (see :class:`DoneWork`); None: asyncfl trains
    perform: Callable[[TaskPlan], DoneWork] | None = None

    @property
    def upload_size(self) -> int:
        return self.model_bytes if self.upload_bytes is None else self.upload_bytes

    def steps(self, client: ClientDevice) -> int:
        """Local steps of one task of ``client`` (asyncfl/learn/training.py, ``local_work``).  The time
        budget is on the expected compute time (before jitter); the 1e-9 keeps a budget of exactly k steps
        from rounding down to k - 1 (0.3 * 10 / 1 is 2.9999999999999996 in floats)."""
        batch = min(self.batch_size, client.train_samples)
        if self.time_budget_s is not None:
            fit = max(1, math.floor(self.time_budget_s * client.profile.samples_per_s / batch + 1e-9))
            return fit if self.max_steps is None else min(fit, self.max_steps)
        if self.epochs is not None:
            return max(1, math.ceil(self.epochs * client.train_samples / batch - 1e-9))
        return self.local_steps

    def samples(self, client: ClientDevice, steps: int | None = None) -> int:
        """Samples processed by one task of ``steps`` local steps (None: :meth:`steps`): compute time and
        energy scale with it."""
        return (self.steps(client) if steps is None else steps) * min(self.batch_size, client.train_samples)


def check_time_budget(seconds: float | None, batch_size: int, speeds, train_samples: list[int] | None) -> None:
    """Raise :class:`ConfigError` if a time budget of ``seconds`` is shorter than one local step for every
    client (``train_samples`` None: full batches).  The one rule: validation asks it with the fastest speed
    a bounded ``population.compute.samples_per_s`` can draw, the run's start with the whole population."""
    speeds = np.asarray(speeds, dtype=np.float64)
    if seconds is None or not len(speeds):
        return
    sizes = batch_size if train_samples is None else np.minimum(batch_size, np.asarray(train_samples))
    shortest = float(np.min(sizes / speeds))
    if seconds / shortest + 1e-9 >= 1:  # the rounding of Work.steps
        return
    raise ConfigError(
        f"training.local_work.seconds ({seconds:g}) is shorter than one local step for every client: the quickest "
        f"step (min over clients of min(training.batch_size, train samples) / population.compute.samples_per_s) "
        f"takes {shortest:g} s; allowed: at least {shortest:g}"
    )


@dataclass(frozen=True)
class DoneWork:
    """What a trainer outside asyncfl (:attr:`Work.perform`) did for one task, told when the task starts: it
    runs at once, so the task's download, compute and upload are known from its messages before they are
    played out.  ``error``: the trainer failed (the exception's message); the task still downloads and sends
    back its (error) reply, and fails as ``client_app`` when that reply arrives."""

    samples: int  # samples processed: the compute phase lasts samples / samples_per_s x jitter
    download_bytes: int  # the message the client received
    upload_bytes: int  # its reply
    error: str | None = None
    train_samples: int | None = None  # the client's training split as the trainer reports it (clients.csv)


@dataclass
class TaskPlan:
    client: int
    base_version: int  # the global model version the task starts from (sync: the round's, counted from 0)
    attempt: int  # per-client attempt counter (keys the minibatch stream)
    start: float
    phase_starts: list[float]  # start of each phase that begins
    end: float  # arrival time, or failure time
    failure: str | None = None  # None: delivered at ``end``
    steps: int | None = None  # local SGD steps of the task (Work.steps); None: training.local_steps
    error: str | None = None  # failure client_app: the outside trainer's message (DoneWork.error)

    @property
    def delivered(self) -> bool:
        return self.failure is None


def plan_task(
    client: ClientDevice, work: Work, t0: float, rnd: int, deadline_s: float = math.inf, drop_late: bool = False
) -> TaskPlan:
    """Plan one attempt starting at ``t0``; ``deadline_s``: the sync deadline, counted from ``t0``;
    ``drop_late``: a task still running at the deadline fails there (``late_updates: drop``).

    The client is busy until the plan's end from this moment on, so the servers' view of who is idle
    never depends on the order in which same-time SimPy events run.
    """
    plan = _plan(client, work, t0, rnd, deadline_s, drop_late)
    client.busy_until = plan.end
    stats = client.stats
    download, compute, upload = phase_seconds(plan)
    stats.download_s += download
    stats.compute_s += compute
    stats.upload_s += upload
    stats.last_plan = plan
    return plan


def cancel_task(client: ClientDevice, plan: TaskPlan, at: float) -> None:
    """The server cancels ``plan`` at ``at`` (before it is played or submitted): it fails there as
    ``cancelled``, the phases it had not begun never start, and the client's phase seconds count only
    what it did up to ``at`` (the rest of its computing is lost time, never a training job)."""
    before = phase_seconds(plan)
    plan.phase_starts = [start for start in plan.phase_starts if start < at]
    plan.failure, plan.end = "cancelled", at
    after = phase_seconds(plan)
    stats = client.stats
    stats.download_s += after[0] - before[0]
    stats.compute_s += after[1] - before[1]
    stats.upload_s += after[2] - before[2]
    client.busy_until = at


def phase_seconds(plan: TaskPlan, until: float = math.inf) -> tuple[float, float, float]:
    """Seconds the task spent downloading, computing and uploading (cut at its end, and at ``until``)."""
    out = [0.0, 0.0, 0.0]
    starts = plan.phase_starts
    end = min(plan.end, until)
    for j, start in enumerate(starts):
        stop = min(starts[j + 1] if j + 1 < len(starts) else plan.end, end)
        if stop > start:
            out[j] = stop - start
    return out[0], out[1], out[2]


def _plan(client: ClientDevice, work: Work, t0: float, rnd: int, deadline_s: float, drop_late: bool) -> TaskPlan:
    attempt = client.stats.attempts
    client.stats.attempts += 1
    plan = TaskPlan(client.id, rnd, attempt, t0, [], t0, steps=work.steps(client))
    availability = client.availability
    if not availability.online(t0, rnd):
        plan.failure = availability.why_not(t0, rnd)  # "offline"; eligibility: which condition is missing
        return plan
    if client.battery is not None and not client.battery.can_accept(t0):
        plan.failure = "battery"
        return plan
    sigma = client.profile.jitter_sigma  # sigma 0: exp(0 * z) is exactly 1, so the stream is never built
    jitter = float(np.exp(sigma * client.jitter_rng.standard_normal())) if sigma else 1.0
    profile, samples = client.profile, work.samples(client, plan.steps)
    down, up, error = work.model_bytes, work.upload_size, None
    if work.perform is not None:  # the outside trainer works now, once the client can take the task
        done = work.perform(plan)
        samples, down, up, error = done.samples, done.download_bytes, done.upload_bytes, done.error
        if done.train_samples is not None:
            client.train_samples = done.train_samples
    phases = (
        (profile.download_s(down), down * work.joules_per_byte),
        (profile.compute_s(samples, jitter), samples * work.joules_per_sample),
        (profile.upload_s(up), up * work.joules_per_byte),
    )
    t, elapsed, battery = t0, 0.0, client.battery
    deadline_at = t0 + deadline_s
    for duration, energy in phases:
        plan.phase_starts.append(t)
        # Is the task past the deadline by the end of this phase?  Decided on durations: the absolute
        # end ((t0 + download) + compute) + upload drifts by ulps from t0 + deadline_s as t0 grows, so
        # an update arriving exactly at the deadline would count in some rounds and not in others.  A
        # task within the deadline is therefore never placed after t0 + deadline_s.
        elapsed += duration
        late = elapsed > deadline_s
        end = t + duration if late else min(t + duration, deadline_at)
        # the earliest cut wins; on equal times offline beats deadline beats battery
        cut, reason = availability.next_cut(t, rnd)  # eligibility: the first of its conditions to end
        if late and drop_late and deadline_at < cut:
            reason, cut = "deadline", deadline_at
        if battery is not None:
            depleted = battery.depletion_time(t, end, energy)
            if depleted is not None and depleted < cut:
                reason, cut = "battery", depleted
            battery.consume(t, min(end, cut), end, energy)
        if cut < end or reason == "deadline":  # arriving exactly at the deadline (or as the client drops) counts
            plan.failure, plan.end = reason, cut
            return plan
        t = end
    plan.end = t
    if error is not None:  # its error reply arrived: the task did not deliver an update
        plan.failure, plan.error = "client_app", error
    return plan


EventSink = Callable[[float, int, str, int, str | None], None]


def run_task(env: simpy.Environment, client: ClientDevice, plan: TaskPlan, log: EventSink):
    """Play ``plan`` out in virtual time; the process's value is the plan (for the server)."""
    for name, start in zip(PHASES, plan.phase_starts):
        yield env.timeout(start - env.now)
        log(env.now, client.id, name, plan.base_version, None)
    yield env.timeout(plan.end - env.now)
    _finish(client, plan, env.now, log)
    return plan


def _finish(client: ClientDevice, plan: TaskPlan, now: float, log: EventSink) -> None:
    client.stats.busy_s += plan.end - plan.start
    if plan.failure is None:
        client.stats.delivered += 1
        log(now, client.id, "arrive", plan.base_version, None)
    else:
        client.stats.failures[plan.failure] += 1
        client.stats.lost_compute_s += phase_seconds(plan)[1]
        reason = plan.failure if plan.error is None else f"{plan.failure}: {plan.error}"
        log(now, client.id, "fail", plan.base_version, reason)


def play_tasks(
    env: simpy.Environment,
    clients: list[ClientDevice],
    plans: list[TaskPlan],
    log: EventSink,
    logged: Callable[[int], bool] | None = None,
) -> None:
    """Play plans that start now exactly as one :func:`run_task` process each would, with one SimPy
    event per group of steps that fall on the same time instead of about five events per task.

    Why the event log is identical: the processes would start with consecutive urgent events, and
    every step of a process creates exactly one event for its next step.  So the steps that one
    group creates for the same time have consecutive event ids (nothing else is created in between),
    run back to back in group order, and sit where one event created at that moment sits among all
    other events at that time.  One urgent event (:func:`_start_steps`), then one timeout per (group, next
    time), therefore reproduces SimPy's order step for step.  Times are ``now + (t - now)`` as SimPy computes them.

    ``logged(client)`` False: the client's phase steps would only write log lines nobody keeps, so
    its task goes straight to its end step (which updates its stats).  That only moves unlogged
    steps earlier among same-time events; the logged lines and their order stay the same.
    """
    if not plans:
        return
    if logged is None:
        members = [(clients[p.client], p, 0) for p in plans]
    else:
        members = [(clients[p.client], p, 0 if logged(p.client) else len(p.phase_starts)) for p in plans]
    env.process(_start_steps(env, members, log))


def _start_steps(env: simpy.Environment, members: list, log: EventSink):
    """A process that schedules the first steps and ends.  SimPy starts every process with an urgent
    event, which is the one event the ``run_task`` processes would start with, through the public API
    (no event triggered by hand); its end is one more event, at this moment, that nothing waits on."""
    _schedule_steps(env, members, log)
    yield from ()


def _schedule_steps(env: simpy.Environment, members: list, log: EventSink) -> None:
    """Group ``(client, plan, step)`` by the time of their next step; one timeout per group."""
    now, groups = env.now, {}
    for member in members:
        starts, step = member[1].phase_starts, member[2]
        at = now + ((starts[step] if step < len(starts) else member[1].end) - now)
        group = groups.get(at)
        if group is None:
            groups[at] = [member]
        else:
            group.append(member)
    for at, group in groups.items():
        env.timeout(at - now).callbacks.append(lambda _event, group=group: _play_steps(env, group, log))


def _play_steps(env: simpy.Environment, group: list, log: EventSink) -> None:
    now, going_on = env.now, []
    for client, plan, step in group:
        if step < len(plan.phase_starts):
            log(now, client.id, PHASES[step], plan.base_version, None)
            going_on.append((client, plan, step + 1))
        else:
            _finish(client, plan, now, log)
    if going_on:
        _schedule_steps(env, going_on, log)
