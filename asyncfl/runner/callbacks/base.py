"""What every callback builds on: the hooks (:class:`Callback`) and what they share (:class:`RunState`,
:class:`Progress`); at each aggregation they are handed its :class:`~asyncfl.runner.record.AggregationRecord`."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, TypedDict

from asyncfl.runner.record import AggregationRecord
from asyncfl.runner.summary import RunStatus, RunSummary


class SavedProgress(TypedDict):
    """:class:`Progress` as a checkpoint holds it (``Progress(**saved)`` restores it)."""

    best_accuracy: float
    last_accuracy: float
    target_time: float | None
    target_round: int | None
    status: RunStatus
    rounds: int
    staleness: list[int]  # saved as one int64 tensor (asyncfl.runner.checkpoint.packed)


class _CheckpointSaved(TypedDict):
    aggregations: int
    time: float
    stop: bool
    learner: dict[str, Any]
    progress: SavedProgress
    offsets: dict[str, int]
    elapsed_s: float


class Checkpoint(_CheckpointSaved, total=False):
    """What checkpoint.pt holds (:mod:`asyncfl.runner.checkpoint`; tensors and plain values only, so that it
    loads with ``weights_only``): the aggregation and virtual time it was saved at, whether that aggregation
    stopped the run, the learning side's state, the progress record, every log's byte offset and the wall-clock
    seconds the run had taken; ``crc32`` (each log's, up to its offset) is added as it is written."""

    crc32: dict[str, int]


@dataclass
class Progress:
    """Best/target bookkeeping for summary.json (saved whole in every checkpoint)."""

    best_accuracy: float = math.nan
    last_accuracy: float = math.nan
    target_time: float | None = None
    target_round: int | None = None
    status: RunStatus = "running"
    rounds: int = 0
    staleness: list[int] = field(default_factory=list)

    def saved(self) -> SavedProgress:
        """As a checkpoint holds it (``Progress(**saved)`` restores it): a copy of every field."""
        return SavedProgress(
            best_accuracy=self.best_accuracy, last_accuracy=self.last_accuracy, target_time=self.target_time,
            target_round=self.target_round, status=self.status, rounds=self.rounds, staleness=list(self.staleness),
        )  # fmt: skip

    def count(self, record: AggregationRecord) -> None:
        self.rounds = record.round
        self.staleness.extend(record.staleness)

    def note_accuracy(self, accuracy: float, now: float, version: int, target: float | None) -> None:
        self.last_accuracy = accuracy
        if not math.isnan(accuracy) and not accuracy <= self.best_accuracy:
            self.best_accuracy = accuracy
        if target is not None and self.target_time is None and accuracy >= target:
            self.target_time, self.target_round = now, version


@dataclass
class RunState:
    """What the callbacks share: the progress record, the wall-clock start (moved back on resume by
    the time the run had already taken), whether the latest aggregation ends the run, and ``stalled``:
    the server's sentence when it stopped because no client can ever take work again (None otherwise), and
    what the scenario itself warns about (set as the run ends, for summary.json).  How the run ended beyond
    ``progress.status`` (:mod:`asyncfl.runner.run_end` sets them): ``reason``, ``failed_stage``, ``error``."""

    progress: Progress = field(default_factory=Progress)
    started: float = field(default_factory=time.perf_counter)
    stop: bool = False
    stalled: str | None = None
    scenario_warnings: list[str] = field(default_factory=list)  # asyncfl.config.runnable.scenario_warnings
    failed_stage: str | None = None  # where it ran out of memory (simulation, output, figures) or an on_end raised
    reason: str | None = None  # status failed: the exception, one line
    error: str | None = None  # out of memory: "out of memory in the <failed_stage> stage"
    summary: RunSummary | None = None  # summary.json as last written (SummaryJson builds it)
    stopped_by: str | None = None  # a Flower ServerApp's run: what ended it (summary.json's stopped_by)

    def wall_seconds(self) -> float:
        return time.perf_counter() - self.started


class Callback:
    """The four hooks of the run loop; a callback overrides the ones it needs (the others do nothing)."""

    stage = "output"  # what summary.json's failed_stage says when its on_end raises or runs out of memory

    def on_start(self, state: RunState) -> None:
        """A fresh run, before the clock starts (a resumed run never hears it)."""

    def on_aggregation(self, state: RunState, record: AggregationRecord) -> None:
        """After every live aggregation (not while a resumed run replays up to its checkpoint)."""

    def on_resume(self, state: RunState, checkpoint: Checkpoint) -> None:
        """A resumed run, once the checkpoint's learning state is back in place."""

    def on_end(self, state: RunState, now: float) -> None:
        """The run ended (however: finished, target_reached, diverged, interrupted, out_of_memory or failed, see
        :mod:`asyncfl.runner.run_end`) at virtual time ``now``."""
