"""Saving what ``--resume`` needs, and flushing the run files between checkpoints."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from asyncfl.runner.callbacks.base import Callback, Checkpoint, RunState
from asyncfl.runner.record import AggregationRecord


class Checkpointer(Callback):
    """Saves what ``--resume`` needs (``asyncfl.runner.checkpoint``) at the start, every
    ``checkpoint.every_rounds`` aggregations or ``every_virtual_s`` virtual seconds, and at the
    aggregation that stops the run; with neither set, never (the files are still flushed).  A due save
    waits until ``min_wall_s`` wall-clock seconds have passed since the last one: a checkpoint exists to
    bound the work a kill loses, which is wall time, and a short run would otherwise pay a serialisation
    and an fsync every few milliseconds.  Any checkpoint resumes exactly (the clock world is replayed),
    so which aggregations are saved never changes a run's files.  Between checkpoints the run files are
    flushed after every aggregation.  ``save(state)`` writes the checkpoint; ``learner_state()`` is the
    learning world's part of it."""

    def __init__(
        self, out: Any, every: Any, save: Callable[[Checkpoint], None], learner_state: Callable[[], dict]
    ) -> None:
        self.out, self.every, self.save, self.learner_state = out, every, save, learner_state
        self.enabled = every.every_rounds is not None or every.every_virtual_s is not None
        self.last = (0, 0.0)  # (version, virtual time) of the latest checkpoint
        self.last_wall = -math.inf  # wall-clock seconds (RunState.wall_seconds) of the latest save

    def due(self, version: int, now: float, wall_s: float = math.inf) -> bool:
        last_version, last_time = self.last
        by_rounds = self.every.every_rounds is not None and version - last_version >= self.every.every_rounds
        by_time = self.every.every_virtual_s is not None and now - last_time >= self.every.every_virtual_s
        return (by_rounds or by_time) and wall_s - self.last_wall >= self.every.min_wall_s

    def on_start(self, state: RunState) -> None:
        self.checkpoint(state, 0, 0.0)

    def on_aggregation(self, state: RunState, record: AggregationRecord) -> None:
        version, now = record.round, record.time
        if state.stop or self.due(version, now, state.wall_seconds()):
            self.checkpoint(state, version, now)
        else:
            self.out.flush()

    def on_resume(self, state: RunState, checkpoint: Checkpoint) -> None:
        self.last = (checkpoint["aggregations"], checkpoint["time"])

    def checkpoint(self, state: RunState, version: int, now: float) -> None:
        self.out.flush()
        self.last = (version, now)
        if not self.enabled:
            return
        self.last_wall = state.wall_seconds()
        self.save(Checkpoint(
            aggregations=version,
            time=now,
            stop=state.stop,
            learner=self.learner_state(),
            progress=state.progress.saved(),
            offsets=self.out.offsets(),
            elapsed_s=state.wall_seconds(),
        ))  # fmt: skip
