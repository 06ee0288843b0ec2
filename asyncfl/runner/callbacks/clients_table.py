"""clients.csv: one row per client, its profile, its counters and where its time went.

Built column-wise: the population's drawn columns are numpy arrays, the clients the simulation
touched (:class:`asyncfl.sim.population.Clients` builds only those) fill in their own values, and
a column that is the same for every untouched client is a :class:`asyncfl.output.writing.Sparse` (its
fill, and the touched clients' values).  At 10^7 clients no per-client Python object and no per-client
loop is needed for those that never acted; the writer writes the file in blocks of rows
(:func:`asyncfl.output.writing.write_table`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from asyncfl.output.columns import CLIENT_COLUMNS, LOST_COMPUTE, TIME_BREAKDOWN_COLUMNS, failure_columns
from asyncfl.output.writing import Sparse, sparse
from asyncfl.runner.callbacks.base import Callback, RunState
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
        self.columns: dict[str, np.ndarray | Sparse] | None = None  # what was written, for the figures (take_columns)

    def take_columns(self) -> dict[str, np.ndarray | Sparse] | None:
        """clients.csv's columns as written (None before, or when writing them failed); given once, so
        that they are freed as soon as the figures are drawn."""
        columns, self.columns = self.columns, None
        return columns

    def on_end(self, state: RunState, now: float) -> None:
        s, clients, learner = self.scenario, self.clients, self.learner
        accuracies = learner.client_accuracies() if s.eval.per_client and state.progress.status != "diverged" else []
        columns = client_columns(clients, self.probabilities, accuracies, s.timing_only, learner.client_test_sizes())
        # p_i = 1 means online at every time and round, for every kind (the availability contract suite
        # checks it): then nobody is ever offline and no client's model need be built to say so
        probabilities = np.asarray(self.probabilities, dtype=np.float64)
        always_online = s.population.eligibility is None and bool(np.all(probabilities == 1.0))
        columns.update(time_breakdown_columns(clients, now, self.round_spans, always_online, probabilities))
        built = list(clients.built())
        ids = np.array([c.id for c in built], dtype=np.int64)
        for reason, column in zip(self.reasons, failure_columns(self.reasons)):
            columns[column] = sparse(len(clients), 0, ids, [c.stats.failures[reason] for c in built])
        if s.population.timezones is not None:
            columns["utc_offset_h"] = np.array(utc_offsets(s.population.timezones, s.data.clients, s.seed))
        self.out.write_columns("clients.csv", columns)  # Parquet once a run with output.format: parquet ended
        if self.scenario.output.plot:  # the figures draw from them (RunFigures), then they are freed
            self.columns = columns


def time_breakdown_columns(
    clients, now: float, rounds: list, always_online: bool = False, probabilities: np.ndarray | None = None
) -> dict[str, np.ndarray | Sparse]:
    """clients.csv's where-the-time-went columns: seconds downloading, computing, uploading, idle and
    offline in [0, now], and ``lost_compute_s``, the part of computing spent on tasks that failed
    (their work was thrown away; rounds.csv's lost_compute_s per client).  Phases are those of every
    task planned (a failed one up to its cut, one still running trimmed at ``now``); offline is the
    time the client could not take work (not available, or with ``population.eligibility`` not
    eligible) while not busy; idle is the rest (online, no task, including time waiting to be
    selected or for a battery to charge), so the five add up to ``now`` for every client.  A client
    never built never acted: no phases, and its offline time is read from its availability model
    alone, in columns where the population can (:meth:`Clients.offline_in_rounds`, given every
    client's p_i in ``probabilities``), else one fresh model at a time."""
    n = len(clients)
    built = list(clients.built())
    ids = np.array([c.id for c in built], dtype=np.int64)
    phases = []
    for c in built:
        stats, plan = c.stats, c.stats.last_plan
        d, cp, u = stats.download_s, stats.compute_s, stats.upload_s
        if plan is not None and plan.end > now:  # still running: count it up to now only
            full, cut = phase_seconds(plan), phase_seconds(plan, now)
            d, cp, u = d - full[0] + cut[0], cp - full[1] + cut[1], u - full[2] + cut[2]
        phases.append((d, cp, u))
    download, compute, upload = (sparse(n, 0.0, ids, [p[j] for p in phases]) for j in range(3))
    offline = np.zeros(n, dtype=np.float64)
    if not always_online:
        meter = OfflineMeter(now, rounds)
        offline[ids] = [meter(c.availability, c.stats.late_spans) for c in built]
        untouched = np.ones(n, dtype=bool)
        untouched[ids] = False
        others = np.flatnonzero(untouched)
        measured = None
        if probabilities is not None:
            measured = clients.offline_in_rounds(others, probabilities, meter)
        if measured is None:  # a kind without columns: one fresh model per client
            measured = [meter(clients.availability_of(i)) for i in others.tolist()]
        offline[others] = measured
    idle = now - download.dense()  # now - d - cp - u - o, in that order
    idle -= compute.dense()
    idle -= upload.dense()
    idle -= offline
    lost = sparse(n, 0.0, ids, [c.stats.lost_compute_s for c in built])
    columns = dict(zip(TIME_BREAKDOWN_COLUMNS, (download, compute, upload, idle, offline)))
    return {**columns, LOST_COMPUTE: lost}


def client_columns(
    clients, probabilities, accuracies: list[float], timing_only: bool, test_samples: list[int] = ()
) -> dict[str, np.ndarray | Sparse]:
    """clients.csv as columns, one value per client in id order (``test_samples``: the size of each
    client's local test split, on which ``accuracy`` is measured; none when timing only).  A client
    that never acted was never built (:class:`asyncfl.sim.population.Clients`): its columns are read
    from the drawn profiles and batteries, its counters are zero (the fill of a :class:`Sparse`)."""
    n = len(clients)
    speed, up, down, latency = clients.profile_columns()
    batteries = clients.batteries()
    built = list(clients.built())
    ids = np.array([c.id for c in built], dtype=np.int64)
    stats = [c.stats for c in built]
    nothing = np.zeros(0, dtype=np.int64)
    blank, zero = sparse(n, math.nan, nothing, []), sparse(n, 0.0, nothing, [])  # NaN / 0.0 for every client
    counts = {
        f"failed_{r}": sparse(n, 0, ids, [st.failures[r] for st in stats]) for r in ("offline", "battery", "deadline")
    }
    columns = {
        "client": np.arange(n, dtype=np.int64),
        "samples_per_s": speed,
        "uplink_mbps": up * 8 / 1e6,
        "downlink_mbps": down * 8 / 1e6,
        "latency_s": latency,
        "availability_p": np.asarray(probabilities, dtype=np.float64),
        "train_samples": (
            blank  # no data set: clients hold no samples (their tasks use full batches)
            if timing_only
            else sparse(n, ClientDevice.train_samples, ids, [c.train_samples for c in built])
        ),
        "test_samples": (np.asarray(test_samples, dtype=np.int64) if len(test_samples) else blank),
        "attempts": sparse(n, 0, ids, [st.attempts for st in stats]),
        "participations": sparse(n, 0, ids, [st.delivered for st in stats]),
        **counts,
        "busy_s": sparse(n, 0.0, ids, [st.busy_s for st in stats]),
        "energy_j": zero if batteries is None else np.array([b.used_j for b in batteries]),
        "battery_level_j": blank if batteries is None else np.array([b.level for b in batteries]),
        "accuracy": np.asarray(accuracies, dtype=np.float64) if accuracies else blank,
    }
    assert tuple(columns) == CLIENT_COLUMNS
    return columns
