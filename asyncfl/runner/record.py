"""One aggregation, one record: what every callback and writer reads, built once per aggregation.

A server closes a round (:class:`asyncfl.sim.servers.ClosedRound`: timing facts and the task plans it
received); the learning side aggregates the updates (:class:`Learned`: what it made of them); the run loop
joins the two into one frozen :class:`AggregationRecord`, whose per-update columns (client, base version,
staleness, task time, training losses) are computed here and nowhere else.

Words: ``round`` is the aggregation's number counted from 1, the global model version it produces (rounds.csv's
``round``); an update's ``base_version`` is the version its client started from; its ``staleness`` is how
many versions were published meanwhile, ``round - 1 - base_version``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

NAN = math.nan


@dataclass(frozen=True)
class Learned:
    """What the learning side made of one round's updates, one entry per update in the round's order:
    the training losses (NaN when nothing is trained: ``timing_only``, a replayed round), the weight rows of
    weights.csv (``algorithm.record_weights``) and whether the model has diverged."""

    train_loss: tuple[float, ...]
    train_loss_sq: tuple[float, ...]
    weight_rows: tuple[dict, ...] = ()
    diverged: bool = False

    @classmethod
    def untrained(cls, updates: int) -> Learned:
        """A round whose updates were not trained (timing only, or replayed up to a checkpoint)."""
        nans = (NAN,) * updates
        return cls(nans, nans)


@dataclass(frozen=True)
class AggregationRecord:
    """One aggregation as every callback and writer reads it (rounds.csv, updates.csv, metrics.csv, weights.csv,
    the ``aggregate`` event, the stop rules, the selection feedback).  Per-update tuples are in the order the
    server received the updates."""

    round: int  # counted from 1: the model version this aggregation produces
    started: float  # sync: the round's start; k_async: the previous aggregation's time
    time: float  # when it aggregated
    selected: int  # clients asked to work (sync; 0 for k_async)
    late: int  # updates still running at a sync close
    failures: Mapping[str, int]  # failure reason -> tasks counted at this aggregation
    dropped_stale: int  # k_async: updates older than max_staleness
    lost_s: float  # seconds the failed tasks had worked
    lost_compute_s: float  # ... of which computing
    timed_out: tuple[tuple[int, float], ...]  # (client, seconds) of tasks cut by the deadline or cancelled
    clients: tuple[int, ...]
    base_versions: tuple[int, ...]
    staleness: tuple[int, ...]  # round - 1 - base_version
    arrivals: tuple[float, ...]  # when each update arrived
    task_s: tuple[float, ...]  # each update's task: download + compute + upload
    train_loss: tuple[float, ...]  # NaN: not trained (timing_only)
    train_loss_sq: tuple[float, ...]
    weight_rows: tuple[dict, ...]
    diverged: bool  # non-finite parameters, or a non-finite training loss in a run that trains

    @property
    def updates(self) -> int:
        return len(self.clients)

    @property
    def train_loss_mean(self) -> float:
        """Mean training loss of the aggregated updates (NaN: none, or not trained)."""
        return mean_loss(self.train_loss)

    @property
    def staleness_mean(self) -> float:
        return statistics.fmean(self.staleness) if self.staleness else NAN


def mean_loss(losses: Sequence[float]) -> float:
    """The plain mean (sum / n, as metrics.csv's train_loss always was; NaN: no update)."""
    return sum(losses) / len(losses) if losses else NAN


def is_diverged(finite_model: bool, losses: Sequence[float]) -> bool:
    """The divergence rule of every run (native, K-async and synchronous Flower): the model holds a NaN or an
    infinity, or the mean of the training losses its updates reported is not finite."""
    return not finite_model or (bool(losses) and not math.isfinite(mean_loss(losses)))


def record_of(closed: Any, staleness: Sequence[int], learned: Learned) -> AggregationRecord:
    """Join a server's closed round (:class:`asyncfl.sim.servers.ClosedRound`) with what the learning side
    made of it; ``staleness``: :func:`staleness_of` the round, as the strategy saw it."""
    plans = closed.received
    return AggregationRecord(
        round=closed.round,
        started=closed.started,
        time=closed.time,
        selected=len(closed.selected),
        late=closed.late,
        failures=closed.failures,
        dropped_stale=closed.dropped_stale,
        lost_s=closed.lost_s,
        lost_compute_s=closed.lost_compute_s,
        timed_out=tuple(closed.timed_out),
        clients=tuple(p.client for p in plans),
        base_versions=tuple(p.base_version for p in plans),
        staleness=tuple(staleness),
        arrivals=tuple(p.end for p in plans),
        task_s=tuple(p.end - p.start for p in plans),
        train_loss=learned.train_loss,
        train_loss_sq=learned.train_loss_sq,
        weight_rows=learned.weight_rows,
        diverged=learned.diverged,
    )


def staleness_of(closed: Any) -> list[int]:
    """Each received update's staleness: versions published since its base, ``round - 1 - base_version``
    (the only place it is computed; the strategy gets it in :class:`asyncfl.algorithms.Update`)."""
    current = closed.round - 1
    return [current - plan.base_version for plan in closed.received]
