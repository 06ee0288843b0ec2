"""What every callback builds on: the hooks (:class:`Callback`), what they share (:class:`RunState`,
:class:`Progress`) and what they are handed at each aggregation (:class:`Aggregation`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class AggregationReport:
    """What the learner's aggregation did, for metrics.csv / rounds.csv / weights.csv."""

    version: int
    train_loss: float
    staleness: list[int]
    weight_rows: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Aggregation:
    """One aggregation as every callback sees it: the server's round (``info``: a
    :class:`asyncfl.sim.servers.RoundInfo`), what the learner made of it, the clients whose updates
    went in, and whether the model has diverged (non-finite parameters, or a non-finite training
    loss in a run that trains)."""

    info: Any
    report: AggregationReport
    clients: list[int]
    diverged: bool = False

    @property
    def time(self) -> float:
        return self.info.time

    @property
    def version(self) -> int:
        return self.report.version


@dataclass
class Progress:
    """Best/target bookkeeping for summary.json (saved whole in every checkpoint)."""

    best_accuracy: float = math.nan
    last_accuracy: float = math.nan
    target_time: float | None = None
    target_round: int | None = None
    status: str = "running"
    rounds: int = 0
    staleness: list[int] = field(default_factory=list)

    def count(self, report: AggregationReport) -> None:
        self.rounds = report.version
        self.staleness.extend(report.staleness)

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
    what the scenario itself warns about (set as the run ends, for summary.json)."""

    progress: Progress = field(default_factory=Progress)
    started: float = field(default_factory=time.perf_counter)
    stop: bool = False
    stalled: str | None = None
    scenario_warnings: list[str] = field(default_factory=list)  # asyncfl.config.runnable.scenario_warnings
    failed_stage: str | None = None  # where the run ran out of memory: simulation, output or figures

    def wall_seconds(self) -> float:
        return time.perf_counter() - self.started


class Callback:
    """The four hooks of the run loop; a callback overrides the ones it needs (the others do nothing)."""

    stage = "output"  # what summary.json's failed_stage says when its on_end runs out of memory

    def on_start(self, state: RunState) -> None:
        """A fresh run, before the clock starts (a resumed run never hears it)."""

    def on_aggregation(self, state: RunState, aggregation: Aggregation) -> None:
        """After every live aggregation (not while a resumed run replays up to its checkpoint)."""

    def on_resume(self, state: RunState, checkpoint: dict) -> None:
        """A resumed run, once the checkpoint's learning state is back in place."""

    def on_end(self, state: RunState, now: float) -> None:
        """The run ended (finished, stopped, diverged or interrupted) at virtual time ``now``."""
