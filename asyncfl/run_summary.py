"""The end of a run: clients.csv, offline_periods.csv, the strategy's own tables, summary.json and
the figures, for whatever has run (a finished, diverged or interrupted run alike)."""

from __future__ import annotations

import math
import platform
import statistics
import time
from importlib import metadata
from typing import Any

from asyncfl.callbacks import Callback, RunState
from asyncfl.results import CHECKPOINT_FILE, ENDED, OfflineMeter
from asyncfl.sim.clients import ClientDevice, phase_seconds
from asyncfl.sim.population import utc_offsets

TIME_BREAKDOWN = ("download_s", "compute_s", "upload_s", "idle_s", "offline_s")
LOST_COMPUTE = "lost_compute_s"  # of compute_s, the part spent on tasks that then failed
CLIENT_COLUMNS = (
    "client", "samples_per_s", "uplink_mbps", "downlink_mbps", "latency_s", "availability_p", "train_samples",
    "test_samples", "attempts", "participations", "failed_offline", "failed_battery", "failed_deadline", "busy_s",
    "energy_j", "battery_level_j", "accuracy",
)  # fmt: skip


class SummaryWriter(Callback):
    """Writes the end-of-run files in ``on_end``.  A run that ended (not interrupted) drops its
    checkpoint: ``--resume`` refuses ended runs, and a strategy's memory (MIFA: one update per
    client) can make it the largest file by far."""

    def __init__(
        self,
        scenario: Any,
        out: Any,
        clients: Any,
        probabilities: list[float],
        learner: Any,
        device: Any,
        round_spans: list[tuple[float, float, int]],
        reasons: list[str],
    ) -> None:
        """``round_spans``: (start, close, round) of every aggregation so far, filled in during the run;
        ``reasons``: the failure reasons ``population.eligibility`` adds (failed_* columns)."""
        self.scenario, self.out, self.clients, self.probabilities = scenario, out, clients, probabilities
        self.learner, self.device, self.round_spans, self.reasons = learner, device, round_spans, reasons

    def on_end(self, state: RunState, now: float) -> None:
        s, p, out, clients, learner = self.scenario, state.progress, self.out, self.clients, self.learner
        accuracies = learner.client_accuracies() if s.eval.per_client and p.status != "diverged" else []
        federation = getattr(learner, "federation", None)  # none when timing_only: no data set
        test_samples = [len(split) for split in federation.client_test] if federation is not None else []
        columns = client_columns(clients, self.probabilities, accuracies, s.timing_only, test_samples)
        # p_i = 1 means online at every time and round, for every kind (the availability contract suite
        # checks it): then nobody is ever offline and no client's model need be built to say so
        always_online = s.population.eligibility is None and all(p == 1.0 for p in self.probabilities)
        columns.update(time_breakdown_columns(clients, now, self.round_spans, always_online))
        for reason in self.reasons:
            counts = columns.setdefault(f"failed_{reason}", [0] * len(clients))
            for c in clients.built():
                counts[c.id] = c.stats.failures[reason]
        if s.population.timezones is not None:
            columns["utc_offset_h"] = utc_offsets(s.population.timezones, s.data.clients, s.seed)
        out.write_columns("clients.csv", columns)
        for name, rows in getattr(learner.strategy, "extra_outputs", dict)().items():
            out.write_table(name, rows)
        out.end_open_tasks(now)
        out.close()
        models = {c: clients[c].availability for c in sorted(out.timeline)}
        out.write_offline_periods(models, now, self.round_spans)
        summary = {**self.summary(state, now), "timeline_clients": sorted(out.timeline)}
        out.write_json("summary.json", summary)
        if s.output.plot:
            from asyncfl.figures import render_run_figures

            started = time.perf_counter()
            render_run_figures(out.path)
            out.write_json("summary.json", {**summary, "figures_seconds": time.perf_counter() - started})
        if p.status in ENDED:
            (out.path / CHECKPOINT_FILE).unlink(missing_ok=True)

    def summary(self, state: RunState, now: float) -> dict:
        p, s, learner = state.progress, self.scenario, self.learner
        return {
            "status": p.status,
            "diverged_round": p.rounds if p.status == "diverged" else None,
            "scenario": s.name,
            "algorithm": s.algorithm.name,
            "seed": s.seed,
            "device": str(self.device),
            "final_accuracy": _json_float(p.last_accuracy),
            "best_accuracy": _json_float(p.best_accuracy),
            "virtual_time_s": now,
            "rounds": p.rounds,
            "updates": len(p.staleness),
            "staleness_mean": statistics.fmean(p.staleness) if p.staleness else None,
            "target_accuracy": s.stop.target_accuracy,
            "time_to_target_s": p.target_time,
            "rounds_to_target": p.target_round,
            "training_jobs_computed": learner.jobs.computed,
            "timing_only": s.timing_only,
            "trainer": type(learner.jobs.trainer).__name__ if learner.jobs.trainer else None,
            "real_seconds": state.wall_seconds(),
            "versions": _versions(),
            "warnings": self.warnings(state, now),
        }

    def warnings(self, state: RunState, now: float) -> list[str]:
        """What makes the run's results meaningless though it ran (the CLI prints them on stderr):
        today, a run that aggregated no update at all (e.g. a deadline no task can meet)."""
        p = state.progress
        if p.staleness or p.status == "interrupted":
            return []
        failed: dict[str, int] = {}
        for client in self.clients.built():
            for reason, count in client.stats.failures.items():
                failed[reason] = failed.get(reason, 0) + count
        failures = ", ".join(f"{reason} {count:,}" for reason, count in failed.items() if count) or "none"
        return [
            f"no update was aggregated in the whole run ({p.rounds:,} aggregation(s), {now:,.1f} virtual s; "
            f"failed tasks by reason: {failures}): the model never changed and every result is that of the "
            "initial model. Check server.deadline_s, the population's speeds and availability, and stop."
        ]


def time_breakdown_columns(clients, now: float, rounds: list, always_online: bool = False) -> dict[str, list]:
    """clients.csv's where-the-time-went columns: seconds downloading, computing, uploading, idle and
    offline in [0, now], and ``lost_compute_s``, the part of computing spent on tasks that failed
    (their work was thrown away; rounds.csv's lost_compute_s per client).  Phases are those of every
    task planned (a failed one up to its cut, one still running trimmed at ``now``); offline is the
    time the client could not take work (not available, or with ``population.eligibility`` not
    eligible) while not busy; idle is the rest (online, no task, including time waiting to be
    selected or for a battery to charge), so the five add up to ``now`` for every client.  A client
    never built never acted: no phases, and its offline time is read from its availability model
    alone."""
    n = len(clients)
    download, compute, upload = [0.0] * n, [0.0] * n, [0.0] * n
    offline = [0.0] * n
    meter = None if always_online else OfflineMeter(now, rounds)
    built = [False] * n
    for c in clients.built():
        i, stats = c.id, c.stats
        built[i] = True
        d, cp, u = stats.download_s, stats.compute_s, stats.upload_s
        plan = stats.last_plan
        if plan is not None and plan.end > now:  # still running: count it up to now only
            full, cut = phase_seconds(plan), phase_seconds(plan, now)
            d, cp, u = d - full[0] + cut[0], cp - full[1] + cut[1], u - full[2] + cut[2]
        download[i], compute[i], upload[i] = d, cp, u
        if meter is not None:
            offline[i] = meter(c.availability, stats.late_spans)
    if meter is not None:
        for i in range(n):
            if not built[i]:
                offline[i] = meter(clients.availability_of(i))
    idle = [now - d - cp - u - o for d, cp, u, o in zip(download, compute, upload, offline)]
    lost = [0.0] * n
    for c in clients.built():
        lost[c.id] = c.stats.lost_compute_s
    return {**dict(zip(TIME_BREAKDOWN, (download, compute, upload, idle, offline))), LOST_COMPUTE: lost}


def client_columns(
    clients, probabilities: list[float], accuracies: list[float], timing_only: bool, test_samples: list[int] = ()
) -> dict:
    """clients.csv as columns, one value per client in id order (``test_samples``: the size of each
    client's local test split, on which ``accuracy`` is measured; none when timing only).  A client
    that never acted was never built (:class:`asyncfl.sim.population.Clients`): its columns are read
    from the drawn profiles and batteries, its counters are zero.  At 10^6 clients one dict per row cost seconds."""
    n = len(clients)
    speed, up, down, latency = clients.profile_columns()
    batteries = clients.batteries()
    columns = {
        "client": list(range(n)),
        "samples_per_s": list(speed),
        "uplink_mbps": [b * 8 / 1e6 for b in up],
        "downlink_mbps": [b * 8 / 1e6 for b in down],
        "latency_s": list(latency),
        "availability_p": list(probabilities),
        "train_samples": [ClientDevice.train_samples] * n,
        "test_samples": list(test_samples) if len(test_samples) else [math.nan] * n,
        "attempts": [0] * n,
        "participations": [0] * n,
        "failed_offline": [0] * n,
        "failed_battery": [0] * n,
        "failed_deadline": [0] * n,
        "busy_s": [0.0] * n,
        "energy_j": [b.used_j if b else 0.0 for b in batteries],
        "battery_level_j": [b.level if b else math.nan for b in batteries],
        "accuracy": list(accuracies) if accuracies else [math.nan] * n,
    }
    for client in clients.built():
        i, stats = client.id, client.stats
        columns["train_samples"][i] = client.train_samples
        columns["attempts"][i] = stats.attempts
        columns["participations"][i] = stats.delivered
        for reason in ("offline", "battery", "deadline"):
            columns[f"failed_{reason}"][i] = stats.failures[reason]
        columns["busy_s"][i] = stats.busy_s
    if timing_only:  # no data set: clients hold no samples (their tasks use full batches)
        columns["train_samples"] = [math.nan] * n
    assert tuple(columns) == CLIENT_COLUMNS
    return columns


def _json_float(x: float) -> float | None:
    return None if math.isnan(x) else x


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("asyncfl", "torch", "simpy", "numpy", "pydantic"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out
