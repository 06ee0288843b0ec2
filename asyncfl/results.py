"""The run directory: plain-text results written so that a crash leaves them readable.

CSV and JSONL files are appended row by row and flushed at every aggregation; whole-file outputs
(config.yaml, summary.json, clients.csv) are written to a temporary file and renamed into place, so
a reader never sees half of one.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import os
from datetime import datetime
from itertools import repeat
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from asyncfl.directories import cannot_create, make_directory, remove_empty

METRICS_COLUMNS = (
    "time", "round", "test_accuracy", "test_loss", "train_loss", "updates", "staleness_mean", "wall_seconds",
)  # fmt: skip
ROUNDS_COLUMNS = (
    "time", "round", "started", "selected", "received", "late", "failed_offline", "failed_battery",
    "failed_deadline", "dropped_stale", "staleness_mean", "staleness_max",
)  # fmt: skip
# written during the run so that figures never re-parse events.jsonl nor re-simulate anything
UPDATES_COLUMNS = ("version", "client", "base_version", "staleness")
TASKS_COLUMNS = ("client", "base_version", "start_s", "download_s", "compute_s", "upload_s", "end_s", "outcome")
OFFLINE_COLUMNS = ("client", "offline_from_s", "offline_until_s")
TIMELINE_SAMPLE = 32  # clients whose tasks and offline periods are recorded for timeline.png
PHASES = ("download", "compute", "upload")  # a task's phases, as events.jsonl and timeline_tasks.csv name them
ENDED = ("finished", "target_reached", "diverged")  # summary.json statuses of a run that cannot go on
CHECKPOINT_FILE = "checkpoint.pt"  # what --resume reads (asyncfl.checkpoint); dropped once a run has ended
MAX_OFFLINE_PERIODS = 20_000  # per client: guards a pathological availability pattern


def new_run_dir(base: Path, name: str, what: str = "output.dir") -> Path:
    """``base/name/<timestamp>/``, with a suffix if two runs start in the same second.  ``what`` names
    where ``base`` came from if it cannot be made (see :func:`asyncfl.directories.make_directory`)."""
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
        from asyncfl.config import ConfigError

        raise ConfigError(f"--out {out}: exists and is not an empty directory; {advice}")


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _clean(value: Any) -> Any:
    if value.__class__ is float:
        return "" if value != value else round(value, 6)
    if isinstance(value, float):  # numpy floats
        return "" if math.isnan(value) else round(value, 6)
    return value


def _clean_column(values: list[Any]) -> list[Any]:
    """``[_clean(v) for v in values]``, with the common all-int and all-float columns done in C."""
    kinds = set(map(type, values))
    if kinds <= {int, str}:
        return values
    if kinds == {float}:
        nan = np.isnan(np.fromiter(values, dtype=np.float64, count=len(values)))
        if not nan.any():
            return list(map(round, values, repeat(6)))
        if nan.all():
            return [""] * len(values)
    return [_clean(v) for v in values]


def _column_text(values: list[Any]) -> list[str] | None:
    """The text ``csv.writer`` writes for each of ``_clean_column(values)`` in a row of several
    fields (ints: str, floats: repr, "" as it is), or None for anything else (other strings may
    need quoting: the caller lets csv write those).  A column of one repeated value is formatted once."""
    if values.count(values[0]) == len(values):  # e.g. the counters of clients that never acted
        text = _column_text_of([values[0]])
        return None if text is None else text * len(values)
    return _column_text_of(values)


def _column_text_of(values: list[Any]) -> list[str] | None:
    cleaned = _clean_column(values)
    kinds = set(map(type, cleaned))
    if not kinds <= {int, float, str} or (str in kinds and any(v != "" for v in cleaned if type(v) is str)):
        return None
    return list(map(repr, cleaned)) if str not in kinds else ["" if v == "" else repr(v) for v in cleaned]


class CsvLog:
    """An append-only CSV file with a fixed header."""

    def __init__(self, path: Path, columns: Iterable[str], resume_at: int | None = None) -> None:
        self.columns = tuple(columns)
        if resume_at is None:
            self.handle = open(path, "w", newline="", encoding="utf-8")
        else:  # continue after the last checkpoint: drop anything written since
            self.handle = _truncated(path, resume_at, newline="")
        self.writer = csv.DictWriter(self.handle, self.columns, extrasaction="raise")
        if resume_at is None:
            self.writer.writeheader()

    def write(self, row: Mapping[str, Any]) -> None:
        self.writer.writerow({k: _clean(v) for k, v in row.items()})

    def flush(self) -> None:
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


def _truncated(path: Path, offset: int, **kwargs):
    """Open ``path`` for appending after cutting it back to ``offset`` bytes."""
    with open(path, "r+b") as raw:
        raw.truncate(offset)
    return open(path, "a", encoding="utf-8", **kwargs)


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
    ) -> None:
        """``events``: ``all`` logs every client, ``sample`` clients 0 .. event_sample-1 (server events
        are always kept), ``none`` writes no events.jsonl at all.  ``offsets`` (from
        :meth:`offsets`) resumes every log where a checkpoint left it.  ``timeline``: the clients
        whose every task goes to timeline_tasks.csv (whatever ``events`` says)."""
        if events not in ("all", "sample", "none"):
            raise ValueError(f"output.events must be all, sample or none, got {events!r}")
        self.path = path
        at = dict(offsets or {})
        self.metrics = CsvLog(path / "metrics.csv", METRICS_COLUMNS + tuple(extra_metrics), at.get("metrics.csv"))
        self.rounds = CsvLog(path / "rounds.csv", ROUNDS_COLUMNS + tuple(extra_rounds), at.get("rounds.csv"))
        self.updates = CsvLog(path / "updates.csv", UPDATES_COLUMNS, at.get("updates.csv"))
        self.tasks = CsvLog(path / "timeline_tasks.csv", TASKS_COLUMNS, at.get("timeline_tasks.csv"))
        self.timeline = frozenset(timeline)
        self.open_tasks: dict[int, dict[str, float]] = {}  # timeline client -> phase -> start time
        self.open_versions: dict[int, int] = {}  # timeline client -> base version of its running task
        self.events = None
        if events != "none":
            resume_at = at.get("events.jsonl")
            events_path = path / "events.jsonl"
            self.events = (
                open(events_path, "w", encoding="utf-8") if resume_at is None else _truncated(events_path, resume_at)
            )
        self.event_limit = event_sample if events == "sample" else math.inf
        self._time, self._time_text = None, ""  # the last time written and its text (see event)
        self.weights: CsvLog | None = None
        if at.get("weights.csv") is not None:
            with open(path / "weights.csv", newline="", encoding="utf-8") as handle:
                header = next(csv.reader(handle))
            self.weights = CsvLog(path / "weights.csv", header, at["weights.csv"])

    def logs_client(self, client: int) -> bool:
        """Does this client's every event matter (events.jsonl keeps it, or the timeline shows it)?"""
        return (self.events is not None and client < self.event_limit) or client in self.timeline

    def event(
        self, t: float, client: int | None, event: str, version: int | None, reason: str | None, replaying: bool = False
    ) -> None:
        """One JSON line ``{"t","client","event","round"[,"reason"]}``, formatted by hand: at 10^5
        clients ``json.dumps`` dominated the run (same text, see tests/test_timing_only.py).
        ``replaying`` (resuming up to a checkpoint): the lines are already on disk; only the phases
        of the timeline clients' running tasks are noted, so a task that spans the checkpoint is whole."""
        if client in self.timeline:
            self._task_event(t, client, event, version, reason, replaying)
        if replaying or self.events is None or (client is not None and client >= self.event_limit):
            return
        who = "null" if client is None else int(client)
        rnd = "null" if version is None else int(version)
        tail = "}\n" if reason is None else f',"reason":"{reason}"}}\n'
        if t is not self._time:  # a group of same-time steps passes one float object: format it once
            self._time, self._time_text = t, repr(round(t, 9))
        self.events.write(f'{{"t":{self._time_text},"client":{who},"event":"{event}","round":{rnd}{tail}')

    def _task_event(self, t: float, client: int, event: str, version: int, reason: str | None, replaying: bool) -> None:
        if event in PHASES:
            self.open_tasks.setdefault(client, {})[event] = t
            self.open_versions[client] = version
        elif event in ("arrive", "fail"):
            phases = self.open_tasks.pop(client, {})
            if not replaying:
                self._task_row(client, version, phases, t, "delivered" if event == "arrive" else reason)

    def _task_row(self, client: int, version: int, phases: dict[str, float], end: float, outcome: str | None) -> None:
        self.tasks.write({
            "client": client, "base_version": version, "start_s": phases.get("download", end),
            **{f"{p}_s": phases.get(p, math.nan) for p in PHASES}, "end_s": end, "outcome": outcome,
        })  # fmt: skip

    def end_open_tasks(self, now: float) -> None:
        """The timeline clients' tasks still running when the run stops, cut at ``now`` (outcome ``running``)."""
        for client, phases in sorted(self.open_tasks.items()):
            self._task_row(client, self.open_versions[client], phases, now, "running")
        self.open_tasks.clear()

    def aggregated(self, version: int, clients: Iterable[int], staleness: Iterable[int]) -> None:
        """updates.csv: one row per update aggregated into ``version`` (base version = version - 1 -
        staleness), written as one block: a sync round at 10^5 clients aggregates 10^5 updates."""
        self.updates.handle.write(
            "".join(f"{version},{c},{version - 1 - tau},{tau}\n" for c, tau in zip(clients, staleness))
        )

    def write_offline_periods(self, models: Mapping[int, Any], until: float, rounds: list[tuple[float, float, int]]):
        """offline_periods.csv: every offline period in [0, until] of the timeline clients, asked of
        their availability models at the end of the run (they are pure functions of time and round).
        ``rounds``: (start, close, round index) of every aggregation, for the round-indexed models."""
        lines = [",".join(OFFLINE_COLUMNS)]
        for client in sorted(models):
            spans = offline_periods(models[client], until, rounds)
            lines += [f"{client},{round(a, 6)!r},{round(b, 6)!r}" for a, b in spans if math.isfinite(b)]
        write_atomic(self.path / "offline_periods.csv", "\n".join(lines) + "\n")

    def weight_rows(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        if self.weights is None:
            columns = ["round", "client", "weight"] + sorted(
                {k for r in rows for k in r} - {"round", "client", "weight"}
            )
            self.weights = CsvLog(self.path / "weights.csv", columns)
        for row in rows:
            self.weights.write({k: v for k, v in row.items() if k in self.weights.columns})

    def offsets(self) -> dict[str, int]:
        """Bytes written to each log so far (call after :meth:`flush`): what a checkpoint records."""
        logs = {
            "metrics.csv": self.metrics, "rounds.csv": self.rounds, "weights.csv": self.weights,
            "updates.csv": self.updates, "timeline_tasks.csv": self.tasks,
        }  # fmt: skip
        out = {name: log.handle.tell() for name, log in logs.items() if log is not None}
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

    def write_columns(self, name: str, columns: Mapping[str, list[Any]]) -> None:
        """A CSV file given column by column, written whole (temporary file, then renamed): the bytes
        ``csv.writer`` writes for the rows ``zip(*columns.values())`` with every value cleaned as in the
        logs (floats to 6 decimals, NaN empty), but formatted a column at a time: clients.csv at 10^6
        clients is one column at a time, not a row at a time."""
        if not columns or not len(next(iter(columns.values()))):
            return
        tmp = self.path / f".{name}.tmp"
        texts = [_column_text(values) for values in columns.values()] if len(columns) > 1 else [None]
        with open(tmp, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(list(columns))
            if all(text is not None for text in texts):
                handle.write("\r\n".join(map(",".join, zip(*texts))) + "\r\n")  # csv's default line end
            else:
                writer.writerows(zip(*[_clean_column(values) for values in columns.values()]))
        os.replace(tmp, self.path / name)

    def close(self) -> None:
        self.flush()
        for log in (self.metrics, self.rounds, self.weights, self.updates, self.tasks):
            if log is not None:
                log.close()
        if self.events is not None:
            self.events.close()


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def timeline_sample(speeds: Sequence[float], count: int = TIMELINE_SAMPLE) -> list[int]:
    """Up to ``count`` clients at evenly spaced ranks of device speed (ties: lower id first), so the
    timeline shows the whole range from the slowest to the fastest device."""
    values = np.asarray(speeds, dtype=np.float64)
    if np.isfinite(values).all():  # a stable sort by speed keeps ties in id order: the same ranks, in C
        ranked = np.argsort(values, kind="stable").tolist()
    else:
        ranked = sorted(range(len(speeds)), key=lambda c: (speeds[c], c))
    if len(ranked) > count:
        ranked = [ranked[round(i * (len(ranked) - 1) / (count - 1))] for i in range(count)]
    return sorted(ranked)


def offline_periods(model: Any, until: float, rounds: list[tuple[float, float, int]]) -> list[tuple[float, float]]:
    """The [from, until) periods in [0, until] during which ``model`` (an availability process) is offline."""
    if model.round_indexed:  # one state per round, held from the round's start to its close
        return [(s, min(e, until)) for s, e, rnd in rounds if s < until and not model.online(s, rnd)]
    return list(itertools.islice(_walk_offline(model, until), MAX_OFFLINE_PERIODS))


def _walk_offline(model: Any, until: float) -> Iterator[tuple[float, float]]:
    """The offline periods in [0, until] of a pure function of time, found along its on/off switches."""
    t = 0.0
    while t < until:
        if model.online(t, 0):
            nxt = model.next_offline(t, 0)
            if nxt <= t:
                return
        else:
            nxt = model.next_online(t)
            yield t, min(nxt, until)
        t = nxt


class OfflineMeter:
    """Seconds each client spent unable to take work (offline, or not eligible) in [0, until]:
    the ``offline_s`` column of clients.csv.  A model measures itself where it can
    (``offline_seconds``, ``online_in_rounds``: asyncfl/sim/availability/); any other pure function
    of time is walked along its switches.  Round-indexed models count per round span (start,
    close, round), minus the parts of offline rounds in which the client was still busy with a task
    of an earlier round (``late_spans``: such a task runs on whatever the later round's draw says)."""

    def __init__(self, until: float, rounds: list[tuple[float, float, int]]) -> None:
        self.until = until
        spans = [(s, min(e, until), r) for s, e, r in rounds if s < until]
        self.rounds = spans
        self.round_ids = np.array([r for _, _, r in spans], dtype=np.int64)
        self.lengths = np.array([e - s for s, e, _ in spans], dtype=np.float64)
        self._dropped: dict[int, float] | None = None

    def __call__(self, model: Any, late_spans: Sequence[tuple[float, float]] = ()) -> float:
        if model.round_indexed:
            return self._rounds(model) - self._busy_in_offline_rounds(model, late_spans)
        measure = getattr(model, "offline_seconds", None)
        if measure is not None:
            return measure(self.until)
        total = 0.0  # any other pure function of time: walk its periods (plain adds: sum() compensates on 3.12+)
        for start, end in _walk_offline(model, self.until):
            total += end - start
        return total

    def _rounds(self, model: Any) -> float:
        if not len(self.round_ids):
            return 0.0
        schedule = getattr(model, "schedule", None)  # cluster dropout: one schedule shared by every client
        if schedule is not None:
            if self._dropped is None:  # one pass over the rounds for every client
                self._dropped = {}
                for (_, _, rnd), length in zip(self.rounds, self.lengths.tolist()):
                    for client in schedule.dropped(rnd):
                        self._dropped[client] = self._dropped.get(client, 0.0) + length
            return self._dropped.get(model.client, 0.0)
        states = getattr(model, "online_in_rounds", None)  # its states at once where it can, else round by round
        online = states(self.round_ids) if states is not None else [model.online(s, r) for s, _, r in self.rounds]
        return float(self.lengths[np.asarray(online) == 0].sum())

    def _busy_in_offline_rounds(self, model: Any, late_spans: Sequence[tuple[float, float]]) -> float:
        busy = 0.0
        for a, b in late_spans:
            for s, e, rnd in self.rounds:
                lo, hi = max(a, s), min(b, e)
                if hi > lo and not model.online(s, rnd):
                    busy += hi - lo
        return busy
