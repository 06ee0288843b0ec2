"""The run directory: results written so that a crash leaves them readable.

CSV and JSONL files are appended row by row and flushed at every aggregation; whole-file outputs
(config.yaml, summary.json, clients.csv) are written to a temporary file and renamed into place, so
a reader never sees half of one.

With ``output.format: parquet`` the population-scale tables (:data:`PARQUET_LOGS` and clients) are
Parquet files, but the logs stay CSV while the run can still resume: a crash leaves them readable
and a checkpoint's byte offsets continue them exactly, as with CSV.  Only when the run has ended
(:data:`ENDED`) does :meth:`RunDirectory.close` write each of them whole as ``.parquet``; the CSV
logs go (:meth:`RunDirectory.drop_converted_logs`) only after the checkpoint has, so a crash at any
moment leaves a run that reads (both files: the Parquet one is whole) or resumes (its CSV logs are
there; a resume drops the Parquet files such a crash left).  Readers take ``<table>.parquet`` when
there is one and ``<table>.csv`` otherwise (:func:`asyncfl.output.reading.table_file`); summary.json's
``format`` says which the run holds.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from asyncfl.errors import ConfigError
from asyncfl.output.columns import (
    METRICS_COLUMNS,
    OFFLINE_COLUMNS,
    PHASES,
    ROUNDS_COLUMNS,
    TASKS_COLUMNS,
    UPDATES_COLUMNS,
    weights_columns,
)
from asyncfl.output.folders import cannot_create, make_directory, remove_empty
from asyncfl.output.writing import Log, csv_to_parquet, open_truncated, write_atomic, write_columns, write_table

TIMELINE_SAMPLE = 32  # clients whose tasks and offline periods are recorded for timeline.png
TIMELINE_BINS = 16  # speed ranges, each of which adds the first client that starts a task to the timeline
ENDED = ("finished", "target_reached", "diverged")  # summary.json statuses of a run that cannot go on
CHECKPOINT_FILE = "checkpoint.pt"  # what --resume reads (asyncfl.runner.checkpoint); dropped once a run has ended
PARQUET_LOGS = ("metrics.csv", "rounds.csv", "updates.csv", "weights.csv")  # logs that become .parquet at the end


def new_run_dir(base: Path, name: str, what: str = "output.dir") -> Path:
    """``base/name/<timestamp>/``, with a suffix if two runs start in the same second.  ``what`` names
    where ``base`` came from if it cannot be made (see :func:`asyncfl.output.folders.make_directory`)."""
    made = make_directory(base / name, what)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    suffix = 0
    while True:
        path = base / name / (f"{stamp}-{suffix}" if suffix else stamp)
        try:
            path.mkdir()
            return path
        except FileExistsError:
            suffix += 1
        except OSError as exc:
            remove_empty(made)
            raise cannot_create(path, what, exc) from None


def refuse_used_out(out: Path, advice: str = "refusing to overwrite.") -> None:
    """Every command that writes into ``--out`` takes only a new or empty directory: nothing already
    there is ever overwritten.  ``advice`` ends the message (what to do instead)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {out}: exists and is not an empty directory; {advice}")


class RunDirectory:
    """Owns every file of one run."""

    def __init__(
        self,
        path: Path,
        events: str = "all",
        event_sample: int = 100,
        extra_metrics: Iterable[str] = (),
        offsets: Mapping[str, int] | None = None,
        timeline: Iterable[int] = (),
        extra_rounds: Iterable[str] = (),
        format: str = "csv",
        speed_bins: np.ndarray | None = None,
    ) -> None:
        """``events``: ``all`` logs every client, ``sample`` clients 0 .. event_sample-1 (server events
        are always kept), ``none`` writes no events.jsonl at all.  ``offsets`` (from
        :meth:`offsets`) resumes every log where a checkpoint left it.  ``timeline``: the clients
        whose every task goes to timeline_tasks.csv (whatever ``events`` says); ``speed_bins`` (each
        client's range of device speed, :func:`speed_bins`): the first client of a range to start a task
        joins them (unless a timeline client of that range started one before), so that a population
        most of which never works (10^7 clients, 1,000 a round) still has workers on its timeline.  ``format``
        (``output.format``): the format of clients.csv and, once the run has ended, of the
        :data:`PARQUET_LOGS` (see :meth:`settle_format`)."""
        if events not in ("all", "sample", "none"):
            raise ValueError(f"output.events must be all, sample or none, got {events!r}")
        if format not in ("csv", "parquet"):
            raise ValueError(f"output.format must be csv or parquet, got {format!r}")
        self.path = path
        self.format = format
        self.tables_format = "csv"  # what the run holds now: the logs are CSV until settle_format
        self.converted: list[Path] = []  # CSV logs written again as Parquet (see drop_converted_logs)
        at = dict(offsets or {})
        if offsets is not None:  # resuming the CSV logs: Parquet files are from a crash after the run's end
            for name in (*PARQUET_LOGS, "clients.csv"):
                (path / name).with_suffix(".parquet").unlink(missing_ok=True)
        self.metrics = Log(path / "metrics.csv", METRICS_COLUMNS + tuple(extra_metrics), at.get("metrics.csv"))
        self.rounds = Log(path / "rounds.csv", ROUNDS_COLUMNS + tuple(extra_rounds), at.get("rounds.csv"))
        self.updates = Log(path / "updates.csv", UPDATES_COLUMNS, at.get("updates.csv"))
        self.tasks = Log(path / "timeline_tasks.csv", TASKS_COLUMNS, at.get("timeline_tasks.csv"))
        self.timeline = set(timeline)
        self.speed_bins = speed_bins
        self.open_bins = set(range(int(speed_bins.max()) + 1)) if speed_bins is not None and len(speed_bins) else set()
        self.open_tasks: dict[int, dict[str, float]] = {}  # timeline client -> phase -> start time
        self.open_versions: dict[int, int] = {}  # timeline client -> base version of its running task
        self.events = None
        if events != "none":
            resume_at = at.get("events.jsonl")
            events_path = path / "events.jsonl"
            self.events = (
                open(events_path, "w", encoding="utf-8")
                if resume_at is None
                else open_truncated(events_path, resume_at)
            )
        self.event_limit = event_sample if events == "sample" else math.inf
        self._time, self._time_text = None, ""  # the last time written and its text (see event)
        self.weights: Log | None = None
        if at.get("weights.csv") is not None:
            self.weights = Log(path / "weights.csv", None, at["weights.csv"])  # the header it has

    def logs_client(self, client: int) -> bool:
        """Does this client's every event matter (events.jsonl keeps it, or the timeline shows it)?
        Asked as each of its tasks starts (sync rounds): see :meth:`task_starts`."""
        if self.open_bins:
            self.task_starts(client)
        return (self.events is not None and client < self.event_limit) or client in self.timeline

    def task_starts(self, client: int) -> None:
        """A task of ``client`` starts: the first of its speed range joins the timeline (see ``speed_bins``).
        The clock world is replayed the same on resume, so the same clients join."""
        at = int(self.speed_bins[client])
        if at in self.open_bins:
            self.open_bins.discard(at)
            self.timeline.add(client)

    def event(
        self, t: float, client: int | None, event: str, version: int | None, reason: str | None, replaying: bool = False
    ) -> None:
        """One JSON line ``{"t","client","event","base_version"[,"reason"]}`` (a server event, ``aggregate``:
        ``"round"``, the version it made, in place of ``base_version``), formatted by hand: at 10^5
        clients ``json.dumps`` dominated the run (same text, see tests/runner/test_timing_only.py).
        ``replaying`` (resuming up to a checkpoint): the lines are already on disk; only the phases
        of the timeline clients' running tasks are noted, so a task that spans the checkpoint is whole."""
        if self.open_bins and event == PHASES[0] and client is not None:  # K-async: every task logs its start
            self.task_starts(client)
        if client in self.timeline:
            self._task_event(t, client, event, version, reason, replaying)
        if replaying or self.events is None or (client is not None and client >= self.event_limit):
            return
        who = "null" if client is None else int(client)
        # one name each, as every run file says it: a client's task started from base_version; an aggregation
        # is the round it counts, the version it made
        key = "round" if client is None else "base_version"
        number = "null" if version is None else int(version)
        tail = "}\n" if reason is None else f',"reason":{json.dumps(reason)}}}\n'  # a Flower app's error text: escaped
        if t is not self._time:  # a group of same-time steps passes one float object: format it once
            if not math.isfinite(t):  # nan/inf would make the line invalid JSON: a bug upstream, said loudly
                raise ValueError(f"events.jsonl: event {event!r} of client {client} at non-finite time t={t!r}")
            self._time, self._time_text = t, repr(round(t, 9))
        self.events.write(f'{{"t":{self._time_text},"client":{who},"event":"{event}","{key}":{number}{tail}')

    def _task_event(self, t: float, client: int, event: str, version: int, reason: str | None, replaying: bool) -> None:
        if event in PHASES:
            self.open_tasks.setdefault(client, {})[event] = t
            self.open_versions[client] = version
        elif event in ("arrive", "fail"):
            phases = self.open_tasks.pop(client, {})
            if not replaying:
                self._task_row(client, version, phases, t, "delivered" if event == "arrive" else reason)

    def _task_row(self, client: int, version: int, phases: dict[str, float], end: float, outcome: str | None) -> None:
        self.tasks.append([{
            "client": client, "base_version": version, "start_s": phases.get("download", end),
            **{f"{p}_s": phases.get(p, math.nan) for p in PHASES}, "end_s": end, "outcome": outcome,
        }])  # fmt: skip

    def end_open_tasks(self, now: float) -> None:
        """The timeline clients' tasks still running when the run stops, cut at ``now`` (outcome ``running``)."""
        for client, phases in sorted(self.open_tasks.items()):
            self._task_row(client, self.open_versions[client], phases, now, "running")
        self.open_tasks.clear()

    def aggregated(
        self, version: int, clients: Iterable[int], base_versions: Iterable[int], staleness: Iterable[int]
    ) -> None:
        """updates.csv: one row per update aggregated in round ``version`` (the version it made), written as one
        block: a sync round at 10^5 clients aggregates 10^5 updates."""
        clients = list(clients)
        self.updates.append({
            "round": [version] * len(clients), "client": clients,
            "base_version": list(base_versions), "staleness": list(staleness),
        })  # fmt: skip

    def write_offline_periods(self, periods: Mapping[int, Sequence[tuple[float, float]]]) -> None:
        """offline_periods.csv: the offline periods of the timeline clients, client by client
        (:func:`asyncfl.sim.availability.measure.offline_periods`); a period that never ends is left out."""
        ended = [(client, a, b) for client in sorted(periods) for a, b in periods[client] if math.isfinite(b)]
        columns = dict(zip(OFFLINE_COLUMNS, map(list, zip(*ended)))) if ended else dict.fromkeys(OFFLINE_COLUMNS, [])
        write_columns(self.path / "offline_periods.csv", columns, header_only=True)

    def weight_rows(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        if self.weights is None:
            self.weights = Log(self.path / "weights.csv", weights_columns({k for r in rows for k in r}))
        self.weights.append([{k: v for k, v in row.items() if k in self.weights.columns} for row in rows])

    def offsets(self) -> dict[str, int]:
        """Bytes written to each log so far (call after :meth:`flush`): what a checkpoint records."""
        logs = {
            "metrics.csv": self.metrics, "rounds.csv": self.rounds, "weights.csv": self.weights,
            "updates.csv": self.updates, "timeline_tasks.csv": self.tasks,
        }  # fmt: skip
        out = {name: log.tell() for name, log in logs.items() if log is not None}
        if self.events is not None:
            out["events.jsonl"] = self.events.tell()
        return out

    def flush(self) -> None:
        for log in (self.metrics, self.rounds, self.weights, self.updates, self.tasks):
            if log is not None:
                log.flush()
        if self.events is not None:
            self.events.flush()

    def write_json(self, name: str, data: Mapping[str, Any]) -> None:
        write_atomic(self.path / name, json.dumps(data, indent=2, sort_keys=True) + "\n")

    def write_table(self, name: str, rows: list[Mapping[str, Any]]) -> None:
        """Rows (dicts with the same keys) as a CSV file, written whole (see :meth:`write_columns`)."""
        if rows:
            self.write_columns(name, {key: [row[key] for row in rows] for key in rows[0]})

    def write_columns(self, name: str, columns: Mapping[str, Any]) -> Path | None:
        """A table given column by column, written whole (see :func:`asyncfl.output.writing.write_table`):
        ``clients.csv`` in :attr:`tables_format` (``clients.parquet`` once the run has ended with
        ``output.format: parquet``), any other name as CSV.  Returns the file written (None: no rows)."""
        if name.endswith(".csv"):
            return write_table(self.path / name[:-4], columns, self.tables_format if name == "clients.csv" else "csv")
        write_columns(self.path / name, columns)  # a strategy's table of another suffix: as named
        return self.path / name

    def settle_format(self, status: str) -> str:
        """Called as the run ends (``status`` from summary.json): a run that has ended (:data:`ENDED`)
        takes ``output.format``; one that can still resume (interrupted) keeps CSV, which its
        checkpoint's offsets continue.  Returns the format its tables will have (summary.json's ``format``)."""
        self.tables_format = self.format if status in ENDED else "csv"
        return self.tables_format

    def close(self) -> None:
        """Flush and close every log; with ``tables_format`` parquet, write the :data:`PARQUET_LOGS` as
        ``.parquet`` files too (see the module's docstring)."""
        self.flush()
        for log in (self.metrics, self.rounds, self.weights, self.updates, self.tasks):
            if log is not None:
                log.close()
        if self.events is not None:
            self.events.close()
        if self.tables_format == "parquet":
            for name in PARQUET_LOGS:
                if (self.path / name).is_file():
                    csv_to_parquet(self.path / name)
                    self.converted.append(self.path / name)

    def drop_converted_logs(self) -> None:
        """Remove the CSV logs :meth:`close` wrote as Parquet (call it once the checkpoint is gone)."""
        for path in self.converted:
            path.unlink(missing_ok=True)
        self.converted = []


def speed_order(speeds: Sequence[float]) -> np.ndarray:
    """Client ids from the slowest device to the fastest (ties: lower id first)."""
    values = np.asarray(speeds, dtype=np.float64)
    if np.isfinite(values).all():  # a stable sort by speed keeps ties in id order: the same ranks, in C
        return np.argsort(values, kind="stable")
    return np.array(sorted(range(len(speeds)), key=lambda c: (speeds[c], c)), dtype=np.int64)


def timeline_sample(
    speeds: Sequence[float], count: int = TIMELINE_SAMPLE, order: np.ndarray | None = None
) -> list[int]:
    """Up to ``count`` clients at evenly spaced ranks of device speed (ties: lower id first), so the
    timeline shows the whole range from the slowest to the fastest device.  ``order``: :func:`speed_order`
    of ``speeds``, when already known."""
    order = speed_order(speeds) if order is None else order
    if len(order) > count:
        order = order[[round(i * (len(order) - 1) / (count - 1)) for i in range(count)]]
    return sorted(order.tolist())


def speed_bins(order: np.ndarray, count: int = TIMELINE_BINS) -> np.ndarray:
    """Each client's range of device speed: ``count`` ranges of equal numbers of clients by speed rank
    (``order``: :func:`speed_order`), slowest 0."""
    bins = np.empty(len(order), dtype=np.uint8)
    bins[order] = np.arange(len(order), dtype=np.int64) * count // max(len(order), 1)
    return bins
