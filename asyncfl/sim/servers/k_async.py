"""``server.mode: k_async``: K-async buffered aggregation.  Keep ``concurrency`` clients training,
aggregate every K updates that arrive (FedBuff's server; FedAsync with K = 1).  The next client is a
uniform pick among the idle online ones (:mod:`asyncfl.sim.dispatch`), or, with a ``server.selection``
kind other than ``uniform`` that serves K-async, that policy's choice of one among the same clients."""

from __future__ import annotations

import math
from typing import Generator

from pydantic import Field

from asyncfl.errors import ConfigError
from asyncfl.sections import Section  # also types the scenario sections assembled above (config)
from asyncfl.seeding import stream
from asyncfl.sim.clients import ClientDevice, TaskPlan, plan_task, run_task
from asyncfl.sim.dispatch import make_dispatcher
from asyncfl.sim.engine import simpy
from asyncfl.sim.selection import SelectionRequest, build_policy, feedback_for
from asyncfl.sim.servers.base import (
    EXAMPLE_BATTERY,
    EXAMPLE_MARKOV,
    ClosedRound,
    ServerContext,
    ServerMode,
    nobody_can_work,
)


class KAsyncKeys(Section):
    k: int = Field(default=10, ge=1, description="k_async: updates per aggregation (null: the default)")
    concurrency: int = Field(default=20, ge=1, description="k_async: clients training at once (null: the default)")
    max_staleness: int | None = Field(default=None, ge=0, description="k_async: drop older updates")


def check(scenario: Section) -> None:
    k, clients = scenario.server.k, scenario.data.clients
    if k > clients:
        raise ConfigError(f"server.k ({k}) is larger than the population (data.clients = {clients})")


def k_async_server(ctx: ServerContext) -> Generator[simpy.Event, object, str | None]:
    """K-async buffered aggregation: keep ``concurrency`` clients busy, aggregate every K updates; returns
    why (:func:`nobody_can_work`) when it stopped because no client can ever take work again."""
    env, cfg, time_limit = ctx.env, ctx.server, ctx.time_limit
    inbox = simpy.Store(env)
    rng = stream(ctx.seed, "dispatch")
    dispatcher = make_dispatcher(ctx.clients)
    policy = None if cfg.selection.kind == "uniform" else build_policy(cfg.selection, len(ctx.clients), ctx.seed)
    feedback = feedback_for(cfg.selection, len(ctx.clients), ctx.feedback)
    version, in_flight, last_aggregation = 0, 0, 0.0
    buffer: list[TaskPlan] = []
    closing = ClosedRound(1, 0.0, 0.0)  # the round being filled: it makes version 1
    stalled: str | None = None  # set once nobody can ever work again

    def task(client: ClientDevice, plan: TaskPlan):
        yield from run_task(env, client, plan, ctx.log)
        inbox.put(plan)

    arrival = inbox.get()
    while True:
        while in_flight < cfg.concurrency:
            if policy is None:  # uniform: today's dispatcher path (the same draws)
                client = dispatcher.pick(env.now, version, rng)
            else:
                candidates = dispatcher.candidates(env.now, version)
                request = SelectionRequest(version, env.now, candidates, 1, rng, ctx.clients, feedback)
                chosen = policy.select(request) if len(candidates) else []
                client = ctx.clients[chosen[0]] if chosen else None
            if client is None:
                break
            plan = plan_task(client, ctx.work, env.now, version)
            dispatcher.dispatched(client)
            if plan.delivered:
                closing.started_tasks.append(plan)
            env.process(task(client, plan))
            in_flight += 1
        waits = [arrival]
        if math.isfinite(time_limit):  # a timeout at infinity would never fire: it would only fill the heap
            waits.append(env.timeout(max(0.0, time_limit - env.now)))
        if in_flight < cfg.concurrency:
            wake = dispatcher.wake_time(env.now)
            if math.isfinite(wake):
                waits.append(env.timeout(wake - env.now))
            elif in_flight == 0:  # nobody can ever work again: the world sits idle up to the time limit, if any
                stalled = stalled or nobody_can_work(env.now, len(ctx.clients), time_limit)
                if math.isinf(time_limit):
                    return stalled
        yield env.any_of(waits)
        if env.now >= time_limit and not arrival.triggered:
            return stalled
        if not arrival.triggered:
            continue
        plan, arrival = arrival.value, inbox.get()
        in_flight -= 1
        if not plan.delivered:
            closing.failed(plan)
        elif cfg.max_staleness is not None and version - plan.base_version > cfg.max_staleness:
            closing.dropped_stale += 1  # admission: the record's staleness is computed once, at aggregation
            ctx.log(env.now, plan.client, "drop_stale", plan.base_version, "staleness")
        else:
            buffer.append(plan)
        if len(buffer) >= cfg.k:
            closing.started, closing.time = last_aggregation, env.now
            closing.received, buffer = buffer[: cfg.k], buffer[cfg.k :]
            if (yield ctx.rounds.close(closing)):
                return None
            version, last_aggregation = version + 1, env.now
            closing = ClosedRound(version + 1, env.now, env.now)


EXAMPLES = (  # for the contract checks (ServerMode.examples)
    (
        "k_async_markov",
        {
            "population": {"availability": EXAMPLE_MARKOV},
            "server": {"mode": "k_async", "k": 4, "concurrency": 8},
            "algorithm": {"name": "fedbuff"},
            "stop": {"rounds": 40},
        },
        frozenset({"fail:offline", "late"}),
    ),
    (
        "k_async_stale_battery_slots",
        {
            "population": {"availability": {"kind": "bernoulli", "p": 0.7, "slot_s": 3.0}, "battery": EXAMPLE_BATTERY},
            "server": {"mode": "k_async", "k": 3, "concurrency": 12, "max_staleness": 2},
            "algorithm": {"name": "fedbuff"},
            "stop": {"rounds": 40},
        },
        frozenset({"fail:offline", "fail:battery", "drop_stale", "late"}),
    ),
)

MODE = ServerMode(
    name="k_async",
    summary="K-async buffering",
    keys=KAsyncKeys,
    process=k_async_server,
    default_algorithm="fedbuff",
    rounds=False,
    check=check,
    examples=EXAMPLES,
    order=1,
)
