"""The end-of-run callbacks, in the order their files are written (see :mod:`asyncfl.runner.callbacks`)."""

from __future__ import annotations

from typing import Any, Mapping

from asyncfl.runner.callbacks.base import Callback
from asyncfl.runner.callbacks.checkpoint_cleanup import CheckpointCleanup
from asyncfl.runner.callbacks.clients_table import ClientsTable
from asyncfl.runner.callbacks.close_logs import CloseLogs, DropConvertedLogs, SettleFormat
from asyncfl.runner.callbacks.final_model import FinalModel
from asyncfl.runner.callbacks.offline_periods import OfflinePeriods
from asyncfl.runner.callbacks.run_figures import RunFigures
from asyncfl.runner.callbacks.strategy_tables import StrategyTables
from asyncfl.runner.callbacks.summary_json import SummaryJson


def end_of_run(
    scenario: Any,
    out: Any,
    clients: Any,
    probabilities: list[float],
    learner: Any,
    device: Any,
    round_spans: list[tuple[float, float, int]],
    reasons: list[str],
    algorithm: str | None = None,
    machine: Mapping[str, str] | None = None,
) -> list[Callback]:
    """The tables' format (``output.format``), clients.csv, the strategy's tables, offline_periods.csv,
    final_model.npz, summary.json, the figures (``output.plot``) and, for a run that ended, no checkpoint: for whatever
    has run (a finished, diverged, interrupted or failed run alike).  ``round_spans``: (start, close, round) of
    every aggregation, filled in during the run; ``reasons``: the failure reasons
    ``population.eligibility`` adds; ``algorithm``: summary.json's name of the aggregation rule when it is not
    the scenario's ``algorithm.name`` (a Flower ServerApp's strategy); ``machine``: summary.json's processor."""
    clients_table = ClientsTable(scenario, out, clients, probabilities, learner, round_spans, reasons)
    return [
        SettleFormat(out),
        clients_table,
        StrategyTables(out, learner),
        CloseLogs(out),
        OfflinePeriods(out, clients, round_spans),
        FinalModel(out, learner),
        SummaryJson(scenario, out, clients, learner, device, algorithm, machine),
        *([RunFigures(out, clients_table)] if scenario.output.plot else []),
        CheckpointCleanup(out.path),
        DropConvertedLogs(out),
    ]
