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
from pathlib import Path
from typing import Any, Iterable, Mapping

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
    if isinstance(value, float):
        return "" if math.isnan(value) else round(value, 6)
    return value


class CsvLog:
    """An append-only CSV file with a fixed header."""

    def __init__(self, path: Path, columns: Iterable[str]) -> None:
        self.columns = tuple(columns)
        self.handle = open(path, "w", newline="", encoding="utf-8")
        self.writer = csv.DictWriter(self.handle, self.columns, extrasaction="raise")
        self.writer.writeheader()

    def write(self, row: Mapping[str, Any]) -> None:
        self.writer.writerow({k: _clean(v) for k, v in row.items()})

    def flush(self) -> None:
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


class RunDirectory:
    """Owns every file of one run."""

    def __init__(self, path: Path, write_events: bool = True, extra_metrics: Iterable[str] = ()) -> None:
        self.path = path
        self.metrics = CsvLog(path / "metrics.csv", METRICS_COLUMNS + tuple(extra_metrics))
        self.rounds = CsvLog(path / "rounds.csv", ROUNDS_COLUMNS)
        self.events = open(path / "events.jsonl", "w", encoding="utf-8") if write_events else None
        self.weights: CsvLog | None = None

    def event(self, t: float, client: int | None, event: str, version: int | None, reason: str | None) -> None:
        if self.events is None:
            return
        record: dict[str, Any] = {"t": round(t, 9), "client": client, "event": event, "round": version}
        if reason is not None:
            record["reason"] = reason
        self.events.write(json.dumps(record, separators=(",", ":")) + "\n")

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
        with open(tmp, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, list(rows[0]))
            writer.writeheader()
            writer.writerows({k: _clean(v) for k, v in row.items()} for row in rows)
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
