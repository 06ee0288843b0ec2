"""rounds.csv, updates.csv, weights.csv and the ``aggregate`` event: the aggregation's own records."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from asyncfl.callbacks.base import Aggregation, AggregationReport, Callback, RunState


def rounds_row(info: Any, report: AggregationReport, reasons: Sequence[str] = ()) -> dict:
    """One line of rounds.csv."""
    staleness = report.staleness
    arrivals = [p.end for p in info.received]
    return {
        "time": info.time,
        "round": report.version,
        "started": info.started,
        "selected": len(info.selected),
        "received": len(info.received),
        "late": info.late,
        "failed_offline": info.failures["offline"],
        "failed_battery": info.failures["battery"],
        "failed_deadline": info.failures["deadline"],
        "dropped_stale": info.dropped_stale,
        "staleness_mean": statistics.fmean(staleness) if staleness else math.nan,
        "staleness_max": max(staleness) if staleness else math.nan,
        "wait_slowest_s": max(arrivals) - info.started if arrivals else math.nan,
        "slowest_task_s": max(p.end - p.start for p in info.received) if arrivals else math.nan,
        "lost_s": info.lost_s,
        "lost_compute_s": info.lost_compute_s,
        **{f"failed_{r}": info.failures[r] for r in reasons},
    }


class RoundLog(Callback):
    """The aggregation's own records: the ``aggregate`` event, its rounds.csv line, which updates
    went into which version (updates.csv) and, with ``algorithm.record_weights``, weights.csv.
    ``reasons`` are the extra failure reasons of ``population.eligibility`` (failed_* columns)."""

    def __init__(self, out: Any, reasons: Sequence[str] = ()) -> None:
        self.out, self.reasons = out, list(reasons)

    def on_aggregation(self, state: RunState, aggregation: Aggregation) -> None:
        info, report = aggregation.info, aggregation.report
        self.out.event(info.time, None, "aggregate", report.version, None)
        self.out.rounds.append([rounds_row(info, report, self.reasons)])
        self.out.aggregated(report.version, aggregation.clients, report.staleness)
        self.out.weight_rows(report.weight_rows)
