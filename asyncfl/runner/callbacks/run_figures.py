"""The run's figures (``output.plot``), drawn from its closed files and from clients.csv's columns as
the run holds them (re-reading the file at 10^7 clients took gigabytes); the seconds they took go into
summary.json (``figures_seconds``)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from asyncfl.runner.callbacks.base import Callback, RunState
from asyncfl.runner.callbacks.clients_table import ClientsTable
from asyncfl.runner.summary import write_summary


class RunFigures(Callback):
    stage = "figures"

    def __init__(self, out: Any, clients_table: ClientsTable | None = None) -> None:
        """``clients_table``: the callback that wrote clients.csv, whose columns the figures use."""
        self.out, self.clients_table = out, clients_table

    def on_end(self, state: RunState, now: float) -> None:
        # here, not at the top: a run that does not plot loads no matplotlib (tests/cli/test_startup.py)
        from asyncfl.figures import render_run_figures
        from asyncfl.figures.common import ClientTable

        started = time.perf_counter()
        columns = self.clients_table.take_columns() if self.clients_table is not None else None
        table = ClientTable.from_run(columns) if columns is not None else None
        render_run_figures(self.out.path, client_table=table)
        del columns, table
        if state.summary is not None:  # the summary the run holds, not the file read back
            state.summary = replace(state.summary, figures_seconds=time.perf_counter() - started)
            write_summary(self.out, state.summary)
