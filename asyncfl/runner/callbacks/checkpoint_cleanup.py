"""A run that ended (not interrupted) drops its checkpoint: ``--resume`` refuses ended runs, and a
strategy's memory (MIFA: one update per client) can make it the largest file by far."""

from __future__ import annotations

from pathlib import Path

from asyncfl.output.run_directory import CHECKPOINT_FILE, ENDED
from asyncfl.runner.callbacks.base import Callback, RunState


class CheckpointCleanup(Callback):
    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir

    def on_end(self, state: RunState, now: float) -> None:
        if state.progress.status in ENDED:
            (self.run_dir / CHECKPOINT_FILE).unlink(missing_ok=True)
