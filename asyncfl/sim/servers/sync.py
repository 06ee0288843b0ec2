"""``server.mode: sync``: synchronous rounds.  Select the idle clients (or a sample of them), wait until
everybody answered or the deadline, aggregate what arrived."""

from __future__ import annotations

import math
from typing import Iterator, Literal

import numpy as np
from pydantic import Field

from asyncfl.sections import Section  # also types the scenario sections assembled above (config)
from asyncfl.seeding import stream
from asyncfl.sim.clients import TaskPlan, plan_task, play_tasks
from asyncfl.sim.engine import simpy
from asyncfl.sim.servers.base import EXAMPLE_BATTERY, EXAMPLE_MARKOV, RoundInfo, ServerContext, ServerMode


class SyncKeys(Section):
    deadline_s: float | None = Field(default=None, gt=0, description="sync: round deadline (null: none)")
    late_updates: Literal["drop", "next_round"] = Field(
        default="drop", description="sync: what happens to an update that misses the deadline (null: the default)"
    )
    clients_per_round: int | None = Field(default=None, ge=1, description="sync: sample size (null: all)")


def check(scenario: Section) -> None:
    cpr, clients = scenario.server.clients_per_round, scenario.data.clients
    if cpr is not None and cpr > clients:
        raise ValueError(f"server.clients_per_round ({cpr}) is larger than the population (data.clients = {clients})")


def sync_server(ctx: ServerContext) -> Iterator[simpy.Event]:
    """Synchronous rounds: select, wait until everybody answered or the deadline, aggregate."""
    env, clients, cfg = ctx.env, ctx.clients, ctx.server
    pending: list[TaskPlan] = []  # tasks of earlier rounds still running (late_updates: next_round)
    drop_late = cfg.late_updates == "drop"
    busy_until = np.full(len(clients), -math.inf)  # who is idle, at numpy speed; all idle at the start
    rnd = 0
    while True:
        t0 = env.now
        selected = _select(busy_until, t0, cfg.clients_per_round, ctx.seed, rnd)
        deadline_s = cfg.deadline_s if cfg.deadline_s is not None else math.inf
        deadline_at = t0 + deadline_s  # the same sum plan_task uses, so on-time tasks end <= deadline_at
        plans = [plan_task(clients[i], ctx.work, t0, rnd, deadline_s, drop_late) for i in selected]
        busy_until[selected] = [plan.end for plan in plans]
        for plan in plans:
            if plan.delivered:
                ctx.submit(plan)
        play_tasks(env, clients, plans, ctx.log, ctx.logs_client)  # same events as one run_task process per plan
        close_at = min(deadline_at, ctx.time_limit, _all_done_at(plans, pending, t0))
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
        if ctx.close_round(info) or env.now >= ctx.time_limit:
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


EXAMPLES = (  # for the contract checks (ServerMode.examples)
    (
        "sync_drop_bernoulli",
        {
            "population": {"availability": {"kind": "bernoulli", "p": {"dist": "uniform", "low": 0.3, "high": 1.0}}},
            "server": {"mode": "sync", "deadline_s": 5.0},
            "stop": {"rounds": 30},
        },
        frozenset({"fail:offline", "fail:deadline"}),
    ),
    (
        "sync_next_round_markov_sampled",
        {
            "population": {"availability": EXAMPLE_MARKOV},
            "server": {"mode": "sync", "deadline_s": 4.0, "late_updates": "next_round", "clients_per_round": 10},
            "algorithm": {"name": "mifa"},
            "stop": {"rounds": 30},
        },
        frozenset({"fail:offline", "late"}),
    ),
    (
        "sync_battery_no_deadline",
        {
            "population": {"availability": EXAMPLE_MARKOV, "battery": EXAMPLE_BATTERY},
            "server": {"mode": "sync"},
            "stop": {"rounds": 20},
        },
        frozenset({"fail:offline", "fail:battery"}),
    ),
)

MODE = ServerMode(
    name="sync",
    summary="synchronous rounds",
    keys=SyncKeys,
    process=sync_server,
    default_algorithm="fedavg",
    rounds=True,
    check=check,
    examples=EXAMPLES,
    order=0,
)
