"""The run directory: plain-text results written so that a crash leaves them readable.

CSV and JSONL files are appended row by row and flushed at every aggregation; whole-file outputs
(config.yaml, summary.json, clients.csv) are written to a temporary file and renamed into place, so
a reader never sees half of one.
"""

from __future__ import annotations

import csv
import json
import math
import os
from datetime import datetime
from itertools import repeat
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

METRICS_COLUMNS = (
    "time", "round", "test_accuracy", "test_loss", "train_loss", "updates", "staleness_mean", "wall_seconds",
)  # fmt: skip
ROUNDS_COLUMNS = (
    "time", "round", "started", "selected", "received", "late", "failed_offline", "failed_battery",
    "failed_deadline", "dropped_stale", "staleness_mean", "staleness_max",
)  # fmt: skip


def new_run_dir(base: Path, name: str) -> Path:
    """``base/name/<timestamp>/``, with a suffix if two runs start in the same second."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = base / name / stamp
    suffix = 1
    while path.exists():
        path = base / name / f"{stamp}-{suffix}"
        suffix += 1
    path.mkdir(parents=True)
    return path


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
    ) -> None:
        """``events``: ``all`` logs every client, ``sample`` clients 0 .. event_sample-1 (server events
        are always kept), ``none`` writes no events.jsonl at all.  ``offsets`` (from
        :meth:`offsets`) resumes every log where a checkpoint left it."""
        if events not in ("all", "sample", "none"):
            raise ValueError(f"output.events must be all, sample or none, got {events!r}")
        self.path = path
        at = dict(offsets or {})
        self.metrics = CsvLog(path / "metrics.csv", METRICS_COLUMNS + tuple(extra_metrics), at.get("metrics.csv"))
        self.rounds = CsvLog(path / "rounds.csv", ROUNDS_COLUMNS, at.get("rounds.csv"))
        self.events = None
        if events != "none":
            resume_at = at.get("events.jsonl")
            events_path = path / "events.jsonl"
            self.events = (
                open(events_path, "w", encoding="utf-8") if resume_at is None else _truncated(events_path, resume_at)
            )
        self.event_limit = event_sample if events == "sample" else math.inf
        self.weights: CsvLog | None = None
        if at.get("weights.csv") is not None:
            with open(path / "weights.csv", newline="", encoding="utf-8") as handle:
                header = next(csv.reader(handle))
            self.weights = CsvLog(path / "weights.csv", header, at["weights.csv"])

    def logs_client(self, client: int) -> bool:
        """Does events.jsonl keep this client's lines?"""
        return self.events is not None and client < self.event_limit

    def event(self, t: float, client: int | None, event: str, version: int | None, reason: str | None) -> None:
        """One JSON line ``{"t","client","event","round"[,"reason"]}``, formatted by hand: at 10^5
        clients ``json.dumps`` dominated the run (same text, see tests/test_timing_only.py)."""
        if self.events is None or (client is not None and client >= self.event_limit):
            return
        who = "null" if client is None else int(client)
        rnd = "null" if version is None else int(version)
        tail = "}\n" if reason is None else f',"reason":"{reason}"}}\n'
        self.events.write(f'{{"t":{round(t, 9)!r},"client":{who},"event":"{event}","round":{rnd}{tail}')

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
        logs = {"metrics.csv": self.metrics, "rounds.csv": self.rounds, "weights.csv": self.weights}
        out = {name: log.handle.tell() for name, log in logs.items() if log is not None}
        if self.events is not None:
            out["events.jsonl"] = self.events.tell()
        return out

    def flush(self) -> None:
        for log in (self.metrics, self.rounds, self.weights):
            if log is not None:
                log.flush()
        if self.events is not None:
            self.events.flush()

    def write_json(self, name: str, data: Mapping[str, Any]) -> None:
        write_atomic(self.path / name, json.dumps(data, indent=2, sort_keys=True) + "\n")

    def write_table(self, name: str, rows: list[Mapping[str, Any]]) -> None:
        if not rows:
            return
        tmp = self.path / f".{name}.tmp"
        columns = list(rows[0])
        cleaned = [_clean_column([row[k] for row in rows]) for k in columns]  # clients.csv: 10^6 rows
        with open(tmp, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            writer.writerows(zip(*cleaned))
        os.replace(tmp, self.path / name)

    def close(self) -> None:
        self.flush()
        for log in (self.metrics, self.rounds, self.weights):
            if log is not None:
                log.close()
        if self.events is not None:
            self.events.close()


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
