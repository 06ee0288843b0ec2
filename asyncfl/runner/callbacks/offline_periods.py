"""offline_periods.csv: every offline period in [0, end] of the timeline clients, asked of their
availability models at the end of the run (they are pure functions of time and round)."""

from __future__ import annotations

from typing import Any

from asyncfl.runner.callbacks.base import Callback, RunState
from asyncfl.sim.availability.measure import offline_periods


class OfflinePeriods(Callback):
    def __init__(self, out: Any, clients: Any, round_spans: list[tuple[float, float, int]]) -> None:
        """``round_spans``: (start, close, round) of every aggregation, for the round-indexed models."""
        self.out, self.clients, self.round_spans = out, clients, round_spans

    def on_end(self, state: RunState, now: float) -> None:
        periods = {
            c: offline_periods(self.clients[c].availability, now, self.round_spans) for c in sorted(self.out.timeline)
        }
        self.out.write_offline_periods(periods)
