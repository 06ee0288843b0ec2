"""What every server mode shares (docs/explanation/architecture.md section 4): the closed round a server hands
to the run loop, the context a server process runs in, and the registration a mode module exports as ``MODE``.

The servers decide *who* works and *which* updates are aggregated *when*; they never touch a tensor.  A server
meets the run loop in one place, through SimPy (:class:`RoundHandoff`): when an aggregation is due it hands over
a :class:`ClosedRound` (what the round received, and the tasks started since the last one, whose training jobs
the learning side queues) and waits for the loop's answer, True to stop the run.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Generator

from asyncfl.sections import Section  # also types the scenario sections assembled above (config)
from asyncfl.sim.clients import ClientDevice, EventSink, TaskPlan, Work, phase_seconds
from asyncfl.sim.engine import simpy
from asyncfl.sim.selection.base import ClientFeedback


@dataclass
class ClosedRound:
    """Everything the server knows about one aggregation when it hands it to the run loop."""

    round: int  # the aggregation's number, counted from 1: the model version it produces
    started: float  # sync: round start; k_async: time of the previous aggregation
    time: float  # aggregation time
    selected: list[int] = field(default_factory=list)
    received: list[TaskPlan] = field(default_factory=list)  # updates to aggregate
    # tasks that will deliver, started since the previous closed round: their training jobs are queued before
    # this round's updates are collected (a job is computed only when an update needs it, maybe in a batch)
    started_tasks: list[TaskPlan] = field(default_factory=list)
    late: int = 0  # updates still running at a sync close (dropped or delivered later)
    failures: Counter = field(default_factory=Counter)  # reason -> count
    failed_clients: list[int] = field(default_factory=list)
    dropped_stale: int = 0  # k_async: updates older than max_staleness
    lost_s: float = 0.0  # virtual seconds the failed tasks counted here had worked before failing
    lost_compute_s: float = 0.0  # of which computing
    # (client, seconds) of tasks still running when the server gave up on them (deadline, cancelled): a
    # lower bound of the client's task time that the server observed (selection feedback, e.g. Oort's t_i)
    timed_out: list[tuple[int, float]] = field(default_factory=list)

    def failed(self, plan: TaskPlan) -> None:
        if plan.failure in ("deadline", "cancelled"):
            self.timed_out.append((plan.client, plan.end - plan.start))
        self.failures[plan.failure] += 1
        self.failed_clients.append(plan.client)
        download, compute, upload = phase_seconds(plan)
        self.lost_s += download + compute + upload
        self.lost_compute_s += compute


def happen_now(event: simpy.Event, value: Any) -> None:
    """Trigger ``event`` with ``value`` ahead of every other event of this moment: SimPy's URGENT priority, which
    its own ``Initialize`` and ``Interruption`` events use (``succeed`` would queue it behind them)."""
    event._ok, event._value = True, value
    event.env.schedule(event, simpy.core.URGENT)


class RoundHandoff:
    """Where a server process and the run loop process meet.  The server ``yield``s :meth:`close` and gets
    the loop's answer (True: stop); the loop ``yield``s :meth:`next_round`, gets ``(closed round, answer)``
    and triggers the answer with :meth:`reply`.  Both happen right away (:func:`happen_now`): nothing else
    runs between a round's close and the server going on, so the events read as if the server had called
    the loop."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.waiting = env.event()  # what the loop waits on: triggered by the next close

    def close(self, closed: ClosedRound) -> simpy.Event:
        """Hand ``closed`` to the loop; the returned event's value is the loop's answer (True: stop)."""
        answer, waiting = self.env.event(), self.waiting
        self.waiting = self.env.event()
        happen_now(waiting, (closed, answer))
        return answer

    def next_round(self) -> simpy.Event:
        return self.waiting

    @staticmethod
    def reply(answer: simpy.Event, stop: bool) -> None:
        happen_now(answer, stop)


@dataclass(frozen=True)
class ServerContext:
    """Everything a server process works with.

    ``server`` is the scenario's ``server`` section (its mode's keys included); ``time_limit`` the
    virtual time at which the run stops; ``logs_client(client)`` whether ``log`` keeps that client's
    lines (None: all), a speed hint a server may use to skip building events nobody keeps.
    ``feedback``: the per-client numbers the learning world reports after each aggregation, for the
    selection policy (``server.selection``); the run loop fills it in place (None: an empty one).
    ``rounds``: where the server hands each closed round to the run loop and hears whether to stop.
    """

    env: simpy.Environment
    clients: list[ClientDevice]
    work: Work
    server: Any
    seed: int
    rounds: RoundHandoff
    log: EventSink
    time_limit: float = math.inf
    logs_client: Callable[[int], bool] | None = None
    feedback: ClientFeedback | None = None


def nobody_can_work(now: float, clients: int, time_limit: float) -> str:
    """What a server process returns when, from ``now`` on, no client can ever take work again (every
    availability over for good, every battery flat with no charging): the run's warning (summary.json)."""
    end = "the run ended there" if math.isinf(time_limit) else f"the run sat idle from there to {time_limit:,.6g} s"
    return (
        f"from {now:,.6g} virtual s on, none of the {clients:,} clients could ever take work again (none comes "
        f"online again, or none that does can charge its battery to population.battery.min_level): {end}. "
        "Check population.availability and population.battery."
    )


def no_check(scenario: Section) -> None:
    """A mode that imposes nothing on the rest of the scenario."""


@dataclass(frozen=True)
class ServerMode:
    """One value of ``server.mode``, registered by its module as ``MODE``.

    ``keys``: a section whose fields are the ``server.*`` keys only this mode reads (they join the flat
    ``server`` section, in order; set under another mode they are refused).  ``check(scenario)`` raises
    :class:`~asyncfl.errors.ConfigError` (naming the YAML keys) for a scenario this mode cannot
    run.  ``rounds``: whether aggregations are rounds every
    selected client is asked to join (round-indexed availability needs them).  ``order``: position in
    ``server.mode``'s allowed values; the first mode is the default.  ``process(ctx)`` returns None, or
    :func:`nobody_can_work`'s sentence when it stopped because no client can ever take work again.
    ``examples``: (name, scenario sections, what the run must exercise) triples the contract checks
    (asyncfl.testing) run: the events (``fail:<reason>``, ``drop_stale``) and ``late`` (a stale update)
    the example is built to produce.
    """

    name: str
    summary: str  # "synchronous rounds": joins server.mode's description
    keys: type[Section]
    process: Callable[[ServerContext], Generator[simpy.Event, Any, str | None]]  # value: nobody_can_work's or None
    default_algorithm: str  # algorithm.name when the scenario names none
    rounds: bool
    check: Callable[[Section], None] = no_check
    examples: tuple[tuple[str, dict, frozenset[str]], ...] = ()
    order: int = 1000


# populations the modes' contract examples (ServerMode.examples) share: intermittent clients, and batteries
# that empty and recharge within a short run
EXAMPLE_MARKOV = {"kind": "markov", "p": {"dist": "uniform", "low": 0.3, "high": 1.0}, "mean_cycle_s": 20}
EXAMPLE_BATTERY = {
    "capacity_j": 8.0,
    "joules_per_sample": 0.05,
    "initial_level": {"dist": "uniform", "low": 0.2, "high": 1},
    "charging": {"period_s": 200.0, "plugged_fraction": 0.3, "charge_w": 0.5},
}
