"""The learning side of a ``timing_only`` run: nothing is loaded, nothing is trained."""

from __future__ import annotations

import math
from collections.abc import Sequence

from asyncfl.learn.jobs import JobBook
from asyncfl.runner.record import Learned


class TimingLearner:
    """Stands in for :class:`asyncfl.runner.learning.Learner` when ``timing_only``: the servers, clients and
    event log run exactly as in a full run, but no data set is loaded and nothing is trained.  Every
    client is taken to hold at least ``batch_size`` samples (full batches), so its tasks last as long
    as in a full run whose clients all have that many.  Its records carry NaN training losses."""

    def __init__(self, model_bytes: int) -> None:
        self.model_bytes, self.version = model_bytes, 0
        self.jobs = JobBook(None)  # never receives a job: ``computed`` stays 0
        self.strategy, self.participation = None, None

    def queue(self, plans: Sequence) -> None:
        """Nothing is trained: the plans' timing is all the run needs."""

    def train(self, closed, staleness: Sequence[int]) -> list:
        return []

    def apply(self, closed, updates: list, record_weights: bool) -> Learned:
        self.version += 1
        return Learned.untrained(len(closed.received))

    def state(self) -> dict:
        return {"version": self.version}

    def restore(self, state: dict) -> None:
        self.version = state["version"]

    def test_metrics(self) -> tuple[float, float, list[float]]:
        return math.nan, math.nan, []  # nothing is learned: never called by the run loop

    def client_accuracies(self) -> list[float]:
        return []

    def final_arrays(self) -> None:
        return None  # no model: no final_model.npz

    def client_test_sizes(self) -> list[int]:
        return []  # no data set
