"""The strategy's own tables (``extra_outputs() -> {file name: rows}``, e.g. FedHist's), written at the end."""

from __future__ import annotations

from typing import Any

from asyncfl.runner.callbacks.base import Callback, RunState


class StrategyTables(Callback):
    def __init__(self, out: Any, learner: Any) -> None:
        self.out, self.learner = out, learner

    def on_end(self, state: RunState, now: float) -> None:
        for name, rows in getattr(self.learner.strategy, "extra_outputs", dict)().items():
            self.out.write_table(name, rows)
