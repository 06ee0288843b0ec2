"""summary.json: what the run was and how it ended."""

from __future__ import annotations

import functools
import math
import platform
import statistics
from importlib import metadata
from typing import Any, Mapping

from asyncfl.runner.callbacks.base import Callback, RunState
from asyncfl.runner.summary import RunSummary, write_summary


class SummaryJson(Callback):
    """Builds summary.json (:class:`~asyncfl.runner.summary.RunSummary`) in ``on_end`` and writes it (the timeline
    clients included, for the figures; with ``output.format`` parquet, ``format``: parquet, or csv for a run that
    can still resume).  ``algorithm``:
    the aggregation rule's name when it is not the scenario's ``algorithm.name``; ``machine``: what computed it."""

    def __init__(
        self,
        scenario: Any,
        out: Any,
        clients: Any,
        learner: Any,
        device: Any,
        algorithm: str | None = None,
        machine: Mapping[str, str] | None = None,
    ) -> None:
        self.scenario, self.out, self.clients, self.learner, self.device = scenario, out, clients, learner, device
        self.algorithm = scenario.algorithm.name if algorithm is None else algorithm
        self.machine = machine  # the processor (runner.parts.machine_description): this module needs no torch

    def on_end(self, state: RunState, now: float) -> None:
        state.summary = self.summary(state, now)
        write_summary(self.out, state.summary)

    def summary(self, state: RunState, now: float) -> RunSummary:
        p, s, learner = state.progress, self.scenario, self.learner
        return RunSummary(
            status=p.status,
            diverged_round=p.rounds if p.status == "diverged" else None,
            scenario=s.name,
            algorithm=self.algorithm,
            seed=s.seed,
            device=str(self.device),
            final_accuracy=_json_float(p.last_accuracy),
            best_accuracy=_json_float(p.best_accuracy),
            virtual_time_s=now,
            rounds=p.rounds,
            updates=len(p.staleness),
            staleness_mean=statistics.fmean(p.staleness) if p.staleness else None,
            target_accuracy=s.stop.target_accuracy,
            time_to_target_s=p.target_time,
            rounds_to_target=p.target_round,
            training_jobs_computed=learner.jobs.computed,
            timing_only=s.timing_only,
            trainer=type(learner.jobs.trainer).__name__ if learner.jobs.trainer else None,
            real_seconds=state.wall_seconds(),
            versions=dict(_versions()),
            machine=None if self.machine is None else dict(self.machine),
            warnings=self.warnings(state, now),
            timeline_clients=sorted(self.out.timeline),
            # which files the run holds (a CSV run's summary is as it was)
            format=self.out.tables_format if self.scenario.output.format != "csv" else None,
            reason=state.reason,
            failed_stage=state.failed_stage,
            error=state.error,
            stopped_by=state.stopped_by,
        )

    def warnings(self, state: RunState, now: float) -> list[str]:
        """What the scenario warns about (TiFL tiers smaller than a round, training work past its bound), and
        what makes the run's results meaningless though it ran (the CLI prints them on stderr): a run whose
        server stopped because no client can ever take work again, and a run that aggregated no
        update at all (e.g. a deadline no task can meet)."""
        p = state.progress
        stalled = [state.stalled] if state.stalled and p.status != "interrupted" else []
        if p.staleness or p.status == "interrupted":
            return state.scenario_warnings + stalled
        failed: dict[str, int] = {}
        for client in self.clients.built():
            for reason, count in client.stats.failures.items():
                failed[reason] = failed.get(reason, 0) + count
        failures = ", ".join(f"{reason} {count:,}" for reason, count in failed.items() if count) or "none"
        return (
            state.scenario_warnings
            + stalled
            + [
                f"no update was aggregated in the whole run ({p.rounds:,} aggregation(s), {now:,.1f} virtual s; "
                f"failed tasks by reason: {failures}): the model never changed and every result is that of the "
                "initial model. Check server.deadline_s, the population's speeds and availability, and stop."
            ]
        )


def _json_float(x: float) -> float | None:
    return None if math.isnan(x) else x


@functools.cache  # installed versions do not change while a process runs (a sweep writes many summaries)
def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("asyncfl", "torch", "simpy", "numpy", "pydantic"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out
