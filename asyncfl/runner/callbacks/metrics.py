"""metrics.csv: the global model's evaluations."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from asyncfl.runner.callbacks.base import Callback, RunState
from asyncfl.runner.callbacks.stop_rules import StopRules
from asyncfl.runner.record import AggregationRecord


class MetricsRecorder(Callback):
    """metrics.csv: one line at the start and one per aggregation.  The global model is evaluated
    (``evaluate() -> (accuracy, loss, accuracy per class)``; None: a timing-only run, never) every
    ``eval.every_rounds`` aggregations, at the last one and when the model has diverged; other lines
    get NaN.  ``extra(now)`` adds columns (e.g. ``utc_time``)."""

    def __init__(
        self,
        out: Any,
        evaluate: Callable[[], tuple[float, float, list[float]]] | None,
        every_rounds: int,
        stop_rules: StopRules,
        class_columns: Sequence[str] = (),
        extra: Callable[[float], dict] | None = None,
    ) -> None:
        self.out, self.evaluate, self.every = out, evaluate, every_rounds
        self.stop_rules, self.class_columns, self.extra = stop_rules, list(class_columns), extra
        self.target = stop_rules.stop.target_accuracy

    def on_start(self, state: RunState) -> None:
        self.write(state, 0.0, 0, None, evaluate=True)

    def on_aggregation(self, state: RunState, record: AggregationRecord) -> None:
        version, now = record.round, record.time
        due = version % self.every == 0 or self.stop_rules.limit_reached(version, now)
        self.write(state, now, version, record, evaluate=due or record.diverged)

    def write(self, state: RunState, now: float, version: int, record: AggregationRecord | None, evaluate: bool):
        accuracy = loss = math.nan
        per_class = [math.nan] * len(self.class_columns)
        if evaluate and self.evaluate is not None:
            accuracy, loss, per_class = self.evaluate()
            state.progress.note_accuracy(accuracy, now, version, self.target)
        staleness = record.staleness if record else ()
        self.out.metrics.append([{
            "time": now,
            "round": version,
            "test_accuracy": accuracy,
            "test_loss": loss,
            "train_loss": record.train_loss_mean if record else math.nan,
            "updates": len(staleness),
            "staleness_mean": statistics.fmean(staleness) if staleness else math.nan,
            "wall_seconds": state.wall_seconds(),
            **dict(zip(self.class_columns, per_class)),
            **(self.extra(now) if self.extra is not None else {}),
        }])  # fmt: skip
