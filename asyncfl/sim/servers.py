"""Server protocols as SimPy processes (DESIGN.md section 4).

The servers decide *who* works and *which* updates are aggregated *when*; they never touch a
tensor.  Two callbacks connect them to the rest of the run:

``submit(plan)``      a task that will deliver has started: its training job may be queued
``close_round(info)`` an aggregation is due: the learning world aggregates ``info.received``,
                      evaluates and records; returns True to stop the run
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import simpy

from asyncfl.config.schema import Server
from asyncfl.seeding import stream
from asyncfl.sim.clients import (
    ClientDevice,
    EventSink,
    TaskPlan,
    Work,
    phase_seconds,
    plan_task,
    play_tasks,
    run_task,
)
from asyncfl.sim.dispatch import make_dispatcher


@dataclass
class RoundInfo:
    """Everything the server knows about one aggregation."""

    round: int  # index of this aggregation (sync round / async version being produced)
    started: float  # sync: round start; k_async: time of the previous aggregation
    time: float  # aggregation time
    selected: list[int] = field(default_factory=list)
    received: list[TaskPlan] = field(default_factory=list)  # updates to aggregate (plan.round = base version)
    late: int = 0  # updates still running at a sync close (dropped or delivered later)
    failures: Counter = field(default_factory=Counter)  # reason -> count
    failed_clients: list[int] = field(default_factory=list)
    dropped_stale: int = 0  # k_async: updates older than max_staleness
    lost_s: float = 0.0  # virtual seconds the failed tasks counted here had worked before failing
    lost_compute_s: float = 0.0  # of which computing

    def failed(self, plan: TaskPlan) -> None:
        self.failures[plan.failure] += 1
        self.failed_clients.append(plan.client)
        download, compute, upload = phase_seconds(plan)
        self.lost_s += download + compute + upload
        self.lost_compute_s += compute


Submit = Callable[[TaskPlan], None]
CloseRound = Callable[[RoundInfo], bool]


def sync_server(
    env: simpy.Environment,
    clients: list[ClientDevice],
    work: Work,
    cfg: Server,
    seed: int,
    submit: Submit,
    close_round: CloseRound,
    log: EventSink,
    time_limit: float = math.inf,
    logged: Callable[[int], bool] | None = None,
) -> Iterator[simpy.Event]:
    """Synchronous rounds: select, wait until everybody answered or the deadline, aggregate.

    ``logged(client)``: whether ``log`` keeps that client's lines (None: all); a speed hint only."""
    pending: list[TaskPlan] = []  # tasks of earlier rounds still running (late_updates: next_round)
    drop_late = cfg.late_updates == "drop"
    busy_until = np.full(len(clients), -math.inf)  # who is idle, at numpy speed; all idle at the start
    rnd = 0
    while True:
        t0 = env.now
        selected = _select(busy_until, t0, cfg.clients_per_round, seed, rnd)
        deadline_s = cfg.deadline_s if cfg.deadline_s is not None else math.inf
        deadline_at = t0 + deadline_s  # the same sum plan_task uses, so on-time tasks end <= deadline_at
        plans = [plan_task(clients[i], work, t0, rnd, deadline_s, drop_late) for i in selected]
        busy_until[selected] = [plan.end for plan in plans]
        for plan in plans:
            if plan.delivered:
                submit(plan)
        play_tasks(env, clients, plans, log, logged)  # same events as one run_task process per plan
        close_at = min(deadline_at, time_limit, _all_done_at(plans, pending, t0))
        if math.isinf(close_at):  # nobody can ever answer: nothing left to simulate
            return
        yield env.timeout(close_at - t0)
        info = RoundInfo(rnd, t0, close_at, selected=selected)
        still_running = []
        for plan in pending + plans:
            if plan.end > close_at:
                still_running.append(plan)
            elif plan.delivered:
                info.received.append(plan)
            else:
                info.failed(plan)
        info.late = sum(1 for p in plans if p.end > close_at) + info.failures["deadline"]
        pending = [] if drop_late else still_running
        for plan in still_running:  # a task running on into later rounds (for the time breakdown)
            if plan.round == rnd:
                clients[plan.client].stats.late_spans.append((close_at, plan.end))
        if close_round(info) or env.now >= time_limit:
            return
        rnd += 1


def _select(busy_until: np.ndarray, now: float, per_round: int | None, seed: int, rnd: int) -> list[int]:
    idle = np.flatnonzero(busy_until <= now)
    if per_round is None or per_round >= len(idle):
        return idle.tolist()
    chosen = stream(seed, "selection", rnd).choice(len(idle), size=per_round, replace=False)
    return sorted(idle[chosen].tolist())


def _all_done_at(plans: list[TaskPlan], pending: list[TaskPlan], t0: float) -> float:
    """Early close: when every selected client has answered or failed.  With nobody selected the
    round waits for the first earlier task to finish (so a busy population can't spin forever)."""
    if plans:
        return max(p.end for p in plans)
    return min((p.end for p in pending), default=math.inf)


def k_async_server(
    env: simpy.Environment,
    clients: list[ClientDevice],
    work: Work,
    cfg: Server,
    seed: int,
    submit: Submit,
    close_round: CloseRound,
    log: EventSink,
    time_limit: float = math.inf,
) -> Iterator[simpy.Event]:
    """K-async buffered aggregation: keep ``concurrency`` clients busy, aggregate every K updates."""
    inbox = simpy.Store(env)
    rng = stream(seed, "dispatch")
    dispatcher = make_dispatcher(clients)
    version, in_flight, last_aggregation = 0, 0, 0.0
    buffer: list[TaskPlan] = []
    info = RoundInfo(0, 0.0, 0.0)

    def task(client: ClientDevice, plan: TaskPlan):
        yield from run_task(env, client, plan, log)
        inbox.put(plan)

    arrival = inbox.get()
    while True:
        while in_flight < cfg.concurrency:
            client = dispatcher.pick(env.now, version, rng)
            if client is None:
                break
            plan = plan_task(client, work, env.now, version)
            dispatcher.dispatched(client)
            if plan.delivered:
                submit(plan)
            env.process(task(client, plan))
            in_flight += 1
        waits = [arrival, env.timeout(max(0.0, time_limit - env.now))]
        if in_flight < cfg.concurrency:
            wake = dispatcher.wake_time(env.now)
            if math.isfinite(wake):
                waits.append(env.timeout(wake - env.now))
            elif in_flight == 0 and math.isinf(time_limit):  # nobody can ever work again: nothing to simulate
                return
        yield env.any_of(waits)
        if env.now >= time_limit and not arrival.triggered:
            return
        if not arrival.triggered:
            continue
        plan, arrival = arrival.value, inbox.get()
        in_flight -= 1
        if not plan.delivered:
            info.failed(plan)
        elif cfg.max_staleness is not None and version - plan.round > cfg.max_staleness:
            info.dropped_stale += 1
            log(env.now, plan.client, "drop_stale", plan.round, "staleness")
        else:
            buffer.append(plan)
        if len(buffer) >= cfg.k:
            info.round, info.started, info.time = version, last_aggregation, env.now
            info.received, buffer = buffer[: cfg.k], buffer[cfg.k :]
            if close_round(info):
                return
            version, last_aggregation = version + 1, env.now
            info = RoundInfo(version, env.now, env.now)
