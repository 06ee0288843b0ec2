"""The end of the run's logs: their format is settled first (``output.format``: Parquet for a run
that has ended, CSV for one that can still resume), then the timeline clients' tasks still running
are cut at the end and every log is flushed and closed (the figures read them whole)."""

from __future__ import annotations

from typing import Any

from asyncfl.runner.callbacks.base import Callback, RunState


class CloseLogs(Callback):
    def __init__(self, out: Any) -> None:
        self.out = out

    def on_end(self, state: RunState, now: float) -> None:
        self.out.end_open_tasks(now)
        self.out.close()


class SettleFormat(Callback):
    """First of the end-of-run callbacks: the format every table of the run is written in from here
    on (:meth:`asyncfl.output.run_directory.RunDirectory.settle_format`)."""

    def __init__(self, out: Any) -> None:
        self.out = out

    def on_end(self, state: RunState, now: float) -> None:
        self.out.settle_format(state.progress.status)


class DropConvertedLogs(Callback):
    """Last of the end-of-run callbacks, after the checkpoint is gone: the CSV logs written again as
    Parquet (``output.format: parquet``) are removed; until then a crash leaves a run that resumes."""

    def __init__(self, out: Any) -> None:
        self.out = out

    def on_end(self, state: RunState, now: float) -> None:
        self.out.drop_converted_logs()
