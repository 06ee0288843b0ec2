"""The tqdm progress bar."""

from __future__ import annotations

from asyncfl.runner.callbacks.base import Callback, Checkpoint, RunState
from asyncfl.runner.record import AggregationRecord


class ProgressBar(Callback):
    """tqdm's bar over ``total`` aggregations (``stop.rounds``; unbounded without it), showing virtual time
    and the latest accuracy (at the end: the final accuracy, as summary.json's); ``quiet`` hides it."""

    def __init__(self, total: int | None, quiet: bool) -> None:
        self.total, self.quiet, self.bar = total, quiet, None

    def _open(self) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=self.total, disable=self.quiet, unit="round", dynamic_ncols=True)

    def on_start(self, state: RunState) -> None:
        self._open()

    def on_resume(self, state: RunState, checkpoint: Checkpoint) -> None:
        self._open()
        self.bar.update(checkpoint["aggregations"])

    def on_aggregation(self, state: RunState, record: AggregationRecord) -> None:
        self.bar.update(1)
        self.bar.set_postfix_str(self._postfix(state, record.time), refresh=False)

    def on_end(self, state: RunState, now: float) -> None:
        """The bar's last words are summary.json's: the final accuracy, which an evaluation after the last
        aggregation (a Flower ServerApp evaluates after it trains) may have changed."""
        if self.bar is not None:
            self.bar.set_postfix_str(self._postfix(state, now), refresh=False)
            self.bar.close()

    @staticmethod
    def _postfix(state: RunState, now: float) -> str:
        return f"t={now:,.0f}s acc={state.progress.last_accuracy:.3f}"
