"""Client devices and one participation attempt (a *task*) as a SimPy process.

A task is download -> compute -> upload.  It fails, with a recorded reason, when the client is
offline at the start or drops before its upload completes (``offline``), has too little battery to
accept work or empties it midway (``battery``), or is cut off by a sync deadline with
``late_updates: drop`` (``deadline``).

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
import simpy

from asyncfl.sim.battery import Battery
from asyncfl.sim.profiles import DeviceProfile

PHASES = ("download", "compute", "upload")


@dataclass
class ClientStats:
    attempts: int = 0
    delivered: int = 0
    failures: dict[str, int] = field(default_factory=lambda: {"offline": 0, "battery": 0, "deadline": 0})
    busy_s: float = 0.0


@dataclass
class ClientDevice:
    """The timing-world state of one client."""

    id: int
    profile: DeviceProfile
    availability: object  # one of asyncfl.sim.availability's models
    jitter_rng: np.random.Generator
    battery: Battery | None = None
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

    def samples(self, client: ClientDevice) -> int:
        """Samples processed by one task: compute time and energy scale with it."""
        return self.local_steps * min(self.batch_size, client.train_samples)


@dataclass
class TaskPlan:
    client: int
    round: int  # sync round or async base version
    attempt: int  # per-client attempt counter (keys the minibatch stream)
    start: float
    phase_starts: list[float]  # start of each phase that begins
    end: float  # arrival time, or failure time
    failure: str | None = None  # None: delivered at ``end``

    @property
    def delivered(self) -> bool:
        return self.failure is None


def plan_task(client: ClientDevice, work: Work, t0: float, rnd: int, cutoff: float = math.inf) -> TaskPlan:
    """Plan one attempt starting at ``t0``; ``cutoff`` is the sync deadline when late updates are dropped.

    The client is busy until the plan's end from this moment on, so the servers' view of who is idle
    never depends on the order in which same-time SimPy events run.
    """
    plan = _plan(client, work, t0, rnd, cutoff)
    client.busy_until = plan.end
    return plan


def _plan(client: ClientDevice, work: Work, t0: float, rnd: int, cutoff: float) -> TaskPlan:
    attempt = client.stats.attempts
    client.stats.attempts += 1
    plan = TaskPlan(client.id, rnd, attempt, t0, [], t0)
    if not client.availability.online(t0, rnd):
        plan.failure = "offline"
        return plan
    if client.battery is not None and not client.battery.can_accept(t0):
        plan.failure = "battery"
        return plan
    jitter = float(np.exp(client.profile.jitter_sigma * client.jitter_rng.standard_normal()))
    profile, samples = client.profile, work.samples(client)
    phases = (
        (profile.download_s(work.model_bytes), work.model_bytes * work.joules_per_byte),
        (profile.compute_s(samples, jitter), samples * work.joules_per_sample),
        (profile.upload_s(work.model_bytes), work.model_bytes * work.joules_per_byte),
    )
    t = t0
    for duration, energy in phases:
        plan.phase_starts.append(t)
        end = t + duration
        cuts = {"offline": client.availability.next_offline(t, rnd), "deadline": cutoff}
        if client.battery is not None:
            depleted = client.battery.depletion_time(t, end, energy)
            cuts["battery"] = math.inf if depleted is None else depleted
        reason = min(cuts, key=lambda k: (cuts[k], k != "offline"))  # offline wins ties
        stop = min(end, cuts[reason])
        if client.battery is not None:
            client.battery.consume(t, stop, end, energy)
        if cuts[reason] < end:  # arriving exactly at the deadline (or as the client drops) still counts
            plan.failure, plan.end = reason, cuts[reason]
            return plan
        t = end
    plan.end = t
    return plan


EventSink = Callable[[float, int, str, int, str | None], None]


def run_task(env: simpy.Environment, client: ClientDevice, plan: TaskPlan, log: EventSink):
    """Play ``plan`` out in virtual time; the process's value is the plan (for the server)."""
    for name, start in zip(PHASES, plan.phase_starts):
        yield env.timeout(start - env.now)
        log(env.now, client.id, name, plan.round, None)
    yield env.timeout(plan.end - env.now)
    client.stats.busy_s += plan.end - plan.start
    if plan.failure is None:
        client.stats.delivered += 1
        log(env.now, client.id, "arrive", plan.round, None)
    else:
        client.stats.failures[plan.failure] += 1
        log(env.now, client.id, "fail", plan.round, plan.failure)
    return plan
