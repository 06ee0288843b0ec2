"""The end of the run's logs: the timeline clients' tasks still running are cut at the end, then every
log is flushed and closed (the figures read them whole)."""

from __future__ import annotations

from typing import Any

from asyncfl.callbacks.base import Callback, RunState


class CloseLogs(Callback):
    def __init__(self, out: Any) -> None:
        self.out = out

    def on_end(self, state: RunState, now: float) -> None:
        self.out.end_open_tasks(now)
        self.out.close()
