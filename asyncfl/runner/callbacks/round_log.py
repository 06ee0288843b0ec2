"""rounds.csv, updates.csv, weights.csv and the ``aggregate`` event: the aggregation's own records."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from asyncfl.runner.callbacks.base import Callback, RunState
from asyncfl.runner.record import AggregationRecord


def rounds_row(record: AggregationRecord, reasons: Sequence[str] = ()) -> dict:
    """One line of rounds.csv."""
    staleness, failures = record.staleness, record.failures
    return {
        "time": record.time,
        "round": record.round,
        "started": record.started,
        "selected": record.selected,
        "received": record.updates,
        "late": record.late,
        "failed_offline": failures["offline"],
        "failed_battery": failures["battery"],
        "failed_deadline": failures["deadline"],
        "dropped_stale": record.dropped_stale,
        "staleness_mean": statistics.fmean(staleness) if staleness else math.nan,
        "staleness_max": max(staleness) if staleness else math.nan,
        "wait_slowest_s": max(record.arrivals) - record.started if staleness else math.nan,
        "slowest_task_s": max(record.task_s) if staleness else math.nan,
        "lost_s": record.lost_s,
        "lost_compute_s": record.lost_compute_s,
        **{f"failed_{r}": failures[r] for r in reasons},
    }


class RoundLog(Callback):
    """The aggregation's own records: the ``aggregate`` event, its rounds.csv line, which updates
    went into which version (updates.csv) and, with ``algorithm.record_weights``, weights.csv.
    ``reasons`` are the extra failure reasons of ``population.eligibility`` (failed_* columns)."""

    def __init__(self, out: Any, reasons: Sequence[str] = ()) -> None:
        self.out, self.reasons = out, list(reasons)

    def on_aggregation(self, state: RunState, record: AggregationRecord) -> None:
        self.out.event(record.time, None, "aggregate", record.round, None)
        self.out.rounds.append([rounds_row(record, self.reasons)])
        self.out.aggregated(record.round, record.clients, record.base_versions, record.staleness)
        self.out.weight_rows(list(record.weight_rows))
