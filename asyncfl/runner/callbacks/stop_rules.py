"""When a run stops: divergence, ``stop.rounds``, ``stop.virtual_time_s``, ``stop.target_accuracy``."""

from __future__ import annotations

from typing import Any

from asyncfl.runner.callbacks.base import Callback, RunState
from asyncfl.runner.record import AggregationRecord


class StopRules(Callback):
    """Whether the latest aggregation ends the run, checked in this order: divergence, ``stop.rounds``,
    ``stop.virtual_time_s``, then ``stop.target_accuracy`` (with ``at_target``).  It sets the status
    of ``diverged`` and ``target_reached`` runs; a run that hits a limit ends ``finished``."""

    def __init__(self, stop: Any) -> None:
        self.stop = stop

    def limit_reached(self, version: int, now: float) -> bool:
        """``stop.rounds`` or ``stop.virtual_time_s`` is reached: this is the run's last aggregation."""
        rounds, virtual_time = self.stop.rounds, self.stop.virtual_time_s
        return (rounds is not None and version >= rounds) or (virtual_time is not None and now >= virtual_time)

    def on_aggregation(self, state: RunState, record: AggregationRecord) -> None:
        progress = state.progress
        if record.diverged:
            progress.status = "diverged"
        if progress.status != "running" or self.limit_reached(record.round, record.time):
            state.stop = True
        elif self.stop.target_accuracy is not None and self.stop.at_target and progress.target_time is not None:
            progress.status = "target_reached"
            state.stop = True
