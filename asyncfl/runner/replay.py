"""Resuming a run: the stand-ins that take the live parts' places while the clock world is replayed.

The clock world never depends on what is learned, so a resumed run plays it again from t = 0 with the same
seed (:mod:`asyncfl.runner.checkpoint`).  Up to the checkpoint's aggregation nothing is trained and nothing
written: :class:`ReplayLearner` stands in for the learning side (as :class:`~asyncfl.runner.timing_learning.
TimingLearner` does in timing-only runs), :class:`SavedFeedback` hands the selection policy what it saw then,
and :class:`ReplayUntil` is the only callback.  At the checkpoint's aggregation it has the run loop swap the
live parts in (:meth:`asyncfl.runner.simulation.Simulation.go_live`): the restored learning state, the live
callbacks and event log.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from asyncfl.runner.callbacks.base import Callback, RunState
from asyncfl.runner.record import AggregationRecord, Learned


class ReplayLearner:
    """The learning side while a resumed run replays: the checkpoint's job book already holds every job the
    replayed tasks queued, so nothing is queued, trained or aggregated."""

    def queue(self, plans: Sequence) -> None:
        """The checkpoint's job book holds these jobs."""

    def train(self, closed, staleness: Sequence[int]) -> list:
        return []

    def apply(self, closed, updates: list, record_weights: bool) -> Learned:
        return Learned.untrained(len(closed.received))


class SavedFeedback:
    """The selection feedback while a resumed run replays: what each aggregation reported then, from the
    checkpoint's ``feedback_log``, so that the policy selects exactly as in the run that was never stopped."""

    def __init__(self, recorder, saved_log: list) -> None:
        self.recorder, self.saved_log = recorder, saved_log

    def aggregated(self, record: AggregationRecord) -> None:
        self.recorder.replay(self.saved_log, record.round - 1)


class ReplayUntil(Callback):
    """The one callback of a replay: at the checkpoint's aggregation ``go_live()`` swaps the live parts in."""

    def __init__(self, aggregations: int, go_live: Callable[[], None]) -> None:
        self.aggregations, self.go_live = aggregations, go_live

    def on_aggregation(self, state: RunState, record: AggregationRecord) -> None:
        if record.round == self.aggregations:
            self.go_live()
