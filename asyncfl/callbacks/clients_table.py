"""clients.csv: one row per client, its profile, its counters and where its time went."""

from __future__ import annotations

import math
from typing import Any

from asyncfl.callbacks.base import Callback, RunState
from asyncfl.output.columns import CLIENT_COLUMNS, LOST_COMPUTE, TIME_BREAKDOWN_COLUMNS, failure_columns
from asyncfl.sim.availability.measure import OfflineMeter
from asyncfl.sim.clients import ClientDevice, phase_seconds
from asyncfl.sim.population import utc_offsets


class ClientsTable(Callback):
    """Writes clients.csv in ``on_end``, for whatever has run."""

    def __init__(
        self,
        scenario: Any,
        out: Any,
        clients: Any,
        probabilities: list[float],
        learner: Any,
        round_spans: list[tuple[float, float, int]],
        reasons: list[str],
    ) -> None:
        """``round_spans``: (start, close, round) of every aggregation so far, filled in during the run;
        ``reasons``: the failure reasons ``population.eligibility`` adds (failed_* columns)."""
        self.scenario, self.out, self.clients, self.probabilities = scenario, out, clients, probabilities
        self.learner, self.round_spans, self.reasons = learner, round_spans, reasons

    def on_end(self, state: RunState, now: float) -> None:
        s, clients, learner = self.scenario, self.clients, self.learner
        accuracies = learner.client_accuracies() if s.eval.per_client and state.progress.status != "diverged" else []
        federation = getattr(learner, "federation", None)  # none when timing_only: no data set
        test_samples = [len(split) for split in federation.client_test] if federation is not None else []
        columns = client_columns(clients, self.probabilities, accuracies, s.timing_only, test_samples)
        # p_i = 1 means online at every time and round, for every kind (the availability contract suite
        # checks it): then nobody is ever offline and no client's model need be built to say so
        always_online = s.population.eligibility is None and all(p == 1.0 for p in self.probabilities)
        columns.update(time_breakdown_columns(clients, now, self.round_spans, always_online))
        for reason, column in zip(self.reasons, failure_columns(self.reasons)):
            counts = columns.setdefault(column, [0] * len(clients))
            for c in clients.built():
                counts[c.id] = c.stats.failures[reason]
        if s.population.timezones is not None:
            columns["utc_offset_h"] = utc_offsets(s.population.timezones, s.data.clients, s.seed)
        self.out.write_columns("clients.csv", columns)


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
    return {**dict(zip(TIME_BREAKDOWN_COLUMNS, (download, compute, upload, idle, offline))), LOST_COMPUTE: lost}


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
