"""``server.mode: sync``: synchronous rounds.  Select the idle clients (or a sample of them, by the
policy of ``server.selection``), wait until everybody answered or the deadline, aggregate what arrived.

Over-selection (``server.over_selection: o``; Bonawitz et al. 2019, *Towards federated learning at
scale*, section 2.2; FedScale's over-commitment, 1.3 = o of 0.3): a round with the target
``clients_per_round: M`` asks

    S = ceil((1 + o) * M)  clients (fewer when fewer are candidates)

and closes at t_M, the M-th delivered arrival of the round's own tasks, if that comes before the
deadline, the time limit and the moment all S answered or failed.  Updates of earlier rounds that arrive
meanwhile (``late_updates: next_round``) are aggregated but do not count toward M: only the tasks a
round asked for can be cancelled at t_M, so only they decide when it closes.  Every task of the round
still running at t_M (and any other arrival at t_M beyond the first M) is cancelled there: its time so
far is lost time, failure reason ``cancelled``.  Plans are known when the round starts
(asyncfl.sim.clients), so t_M and the cancelled tasks are known then too, and a cancelled task's
training job is never submitted nor computed.
"""

from __future__ import annotations

import math
from typing import Generator, Literal

import numpy as np
from pydantic import Field

from asyncfl.errors import ConfigError
from asyncfl.sections import OPT_IN, Section  # also types the scenario sections assembled above (config)
from asyncfl.seeding import LazyStream
from asyncfl.sim.clients import TaskPlan, cancel_task, plan_task, play_tasks
from asyncfl.sim.dispatch import RECHECK_S, usable_from
from asyncfl.sim.engine import simpy
from asyncfl.sim.selection import KINDS as SELECTION_KINDS
from asyncfl.sim.selection import SelectionRequest, build_policy, checked_in, feedback_for
from asyncfl.sim.servers.base import (
    EXAMPLE_BATTERY,
    EXAMPLE_MARKOV,
    ClosedRound,
    ServerContext,
    ServerMode,
    nobody_can_work,
)


class SyncKeys(Section):
    deadline_s: float | None = Field(default=None, gt=0, description="sync: round deadline (null: none)")
    late_updates: Literal["drop", "next_round"] = Field(
        default="drop", description="sync: what happens to an update that misses the deadline (null: the default)"
    )
    clients_per_round: int | None = Field(default=None, ge=1, description="sync: sample size (null: all)")
    over_selection: float = Field(
        default=0.0,
        ge=0,
        description="sync: ask ceil((1 + o) * clients_per_round) clients and close the round at the "
        "clients_per_round-th arrival of its own tasks, cancelling the rest; updates carried over from earlier "
        "rounds (late_updates: next_round) do not count (0: off; FedScale's over-commitment 1.3 is 0.3)",
        json_schema_extra=OPT_IN,
    )


def check(scenario: Section) -> None:
    server, clients = scenario.server, scenario.data.clients
    cpr = server.clients_per_round
    if cpr is not None and cpr > clients:
        raise ConfigError(f"server.clients_per_round ({cpr}) is larger than the population (data.clients = {clients})")
    if server.over_selection > 0 and cpr is None:
        raise ConfigError(
            f"server.over_selection ({server.over_selection}) needs server.clients_per_round: the number of "
            "updates that closes a round (over-selection asks ceil((1 + o) * clients_per_round) clients)"
        )
    if server.over_selection > 0 and scenario.population.battery is not None:
        raise ConfigError(
            f"server.over_selection ({server.over_selection}) with population.battery is not supported: a "
            "battery's drain is planned for the whole task, so a cancelled task's energy would be counted in "
            "full; remove one of them"
        )


def asked(per_round: int | None, over_selection: float) -> int | None:
    """Clients a round asks: ceil((1 + o) * M), rounded to 9 decimals first so that (1 + 0.3) * 10,
    13.000000000000002 in floating point, asks 13 and not 14."""
    if per_round is None or over_selection == 0:
        return per_round
    return math.ceil(round((1 + over_selection) * per_round, 9))


def sync_server(ctx: ServerContext) -> Generator[simpy.Event, object, str | None]:
    """Synchronous rounds: select, wait until everybody answered or the deadline, aggregate.  A round
    in which every asked client failed at its start takes no time: the next one starts when something
    can change (:func:`_next_change`), and when nothing ever can the process returns why (the run's warning)."""
    env, clients, cfg = ctx.env, ctx.clients, ctx.server
    pending: list[TaskPlan] = []  # tasks of earlier rounds still running (late_updates: next_round)
    drop_late = cfg.late_updates == "drop"
    busy_until = np.full(len(clients), -math.inf)  # who is idle, at numpy speed; all idle at the start
    policy = build_policy(cfg.selection, len(clients), ctx.seed)
    checks_in = SELECTION_KINDS[cfg.selection.kind].tags.checked_in_only
    feedback = feedback_for(cfg.selection, len(clients), ctx.feedback)
    count = asked(cfg.clients_per_round, cfg.over_selection)
    version = 0  # the global model version the round's tasks start from (the round closes making version + 1)
    while True:
        t0 = env.now
        idle = np.flatnonzero(busy_until <= t0)
        rng = LazyStream(ctx.seed, "selection", version)  # built only by a policy that draws
        request = SelectionRequest(version, t0, idle, count, rng, clients, feedback)
        selected = policy.select(checked_in(request) if checks_in else request)
        deadline_s = cfg.deadline_s if cfg.deadline_s is not None else math.inf
        deadline_at = t0 + deadline_s  # the same sum plan_task uses, so on-time tasks end <= deadline_at
        plans = [plan_task(clients[i], ctx.work, t0, version, deadline_s, drop_late) for i in selected]
        close_at = min(deadline_at, ctx.time_limit, _all_done_at(plans, pending, t0))
        if not plans and len(idle):  # idle clients but none asked (none checked in): wait for one to
            close_at = min(close_at, _next_check_in(clients, idle, t0))
        if cfg.over_selection > 0:
            close_at = _cancel_after_target(clients, plans, cfg.clients_per_round, close_at)
        busy_until[selected] = [plan.end for plan in plans]
        play_tasks(env, clients, plans, ctx.log, ctx.logs_client)  # same events as one run_task process per plan
        if math.isinf(close_at):  # nobody can ever answer: nothing left to simulate
            return nobody_can_work(t0, len(clients), ctx.time_limit)
        yield env.timeout(close_at - t0)
        started = [plan for plan in plans if plan.delivered]  # their training jobs are queued at the close
        closed = ClosedRound(version + 1, t0, close_at, selected=selected, started_tasks=started)
        still_running = [plan for plan in pending + plans if not closes(closed, plan, close_at)]  # the rest closed
        closed.late = sum(1 for p in plans if p.end > close_at) + closed.failures["deadline"]
        pending = [] if drop_late else still_running
        for plan in still_running:  # a task running on into later rounds (for the time breakdown)
            if plan.base_version == version:
                clients[plan.client].stats.late_spans.append((close_at, plan.end))
        if (yield ctx.rounds.close(closed)) or env.now >= ctx.time_limit:
            return None
        version += 1
        if close_at == t0:  # every asked client failed at once: the next round would be the same
            stalled = yield from _wait_for_change(env, clients, busy_until, t0, ctx.time_limit)
            if stalled is not None or env.now >= ctx.time_limit:
                return stalled


def closes(closed: ClosedRound, plan: TaskPlan, close_at: float) -> bool:
    """The close rule of a synchronous round (and of a Flower Grid trip, :mod:`asyncfl.flower.grid`): a task
    ended by ``close_at`` closes with the round, received if it delivered, else failed with its reason; False: it
    is still running at the close (the caller carries it over, or gives it up as late)."""
    if plan.end > close_at:
        return False
    if plan.delivered:
        closed.received.append(plan)
    else:
        closed.failed(plan)
    return True


def _cancel_after_target(clients, plans: list[TaskPlan], target: int, close_at: float) -> float:
    """Over-selection: when the ``target``-th delivered arrival t_M comes no later than ``close_at``,
    the round closes at t_M and every other task of the round still running then (ties at t_M beyond
    the first ``target`` arrivals, in selection order, included) is cancelled; returns the close."""
    delivering = sorted((p for p in plans if p.delivered), key=lambda p: p.end)  # stable: selection order on ties
    if len(delivering) < target or delivering[target - 1].end > close_at:
        return close_at
    close_at = delivering[target - 1].end
    kept = {id(p) for p in delivering[:target]}
    for plan in plans:
        if id(plan) not in kept and (plan.end > close_at or (plan.delivered and plan.end == close_at)):
            cancel_task(clients[plan.client], plan, close_at)
    return close_at


def _next_check_in(clients, idle: np.ndarray, t0: float) -> float:
    """When an idle client may next take work (``online`` selection found none): the earliest time
    an idle client is online and charged enough (``usable_from``, as K-async dispatch wakes); a
    round-indexed model decides again next round (now)."""
    wake = math.inf
    for i in idle.tolist():
        client = clients[i]
        if client.availability.round_indexed:
            t = max(t0, client.availability.next_online(t0))
        else:
            t = usable_from(client, t0)
        wake = min(wake, t)
    return wake


def _wait_for_change(env, clients, busy_until: np.ndarray, t0: float, time_limit: float):
    """Sleep until the next moment something can change (:func:`_next_change`), at most to the time limit;
    when nothing ever can, to the time limit (if any) and return :func:`nobody_can_work`'s sentence."""
    wake = _next_change(clients, busy_until, t0)
    if wake > t0 and math.isfinite(min(wake, time_limit)):
        yield env.timeout(min(wake, time_limit) - t0)
    return nobody_can_work(t0, len(clients), time_limit) if math.isinf(wake) else None


def _next_change(clients, busy_until: np.ndarray, t0: float) -> float:
    """After a round that closed at its start (every asked client failed at once): the first time >= t0
    at which the next round may go differently: a busy client finishes, or an idle one can take work
    (t0 when one can now, e.g. one the policy did not ask); inf: never."""
    busy = busy_until[busy_until > t0]
    wake = float(busy.min()) if len(busy) else math.inf
    for i in np.flatnonzero(busy_until <= t0):
        wake = min(wake, _usable_at(clients[int(i)], t0))
        if wake <= t0:
            return t0
    return wake


def _usable_at(client, t0: float) -> float:
    """The first time >= t0 at which the idle ``client`` may take work: online and charged (a battery's
    ``ready_at``; inf when it never recharges).  A round-indexed model draws again each round, so it may
    be online in the next one.  Read without side effects (``can_accept`` would move the battery's
    recorded level); ``t0 + RECHECK_S`` where ``next_online`` and ``online`` disagree in the last bit."""
    battery, availability = client.battery, client.availability
    ready = t0 if battery is None else max(t0, battery.ready_at())
    if availability.round_indexed or math.isinf(ready):
        return ready
    t = availability.next_online(ready)
    if t <= t0 and not availability.online(t0, 0):
        return t0 + RECHECK_S
    return t


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
        "sync_over_selected_online",
        {
            "population": {"availability": EXAMPLE_MARKOV},
            "server": {
                "mode": "sync",
                "deadline_s": 6.0,
                "clients_per_round": 6,
                "over_selection": 0.5,
                "selection": {"kind": "online"},
            },
            "stop": {"rounds": 30},
        },
        frozenset({"fail:offline", "fail:cancelled"}),
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
