"""What happened to each client, read back from the files a run writes for its figures.

A run records, while it runs (see :mod:`asyncfl.output`), exactly what the figures draw, so that
drawing them never re-parses ``events.jsonl`` nor re-simulates anything:

``timeline_tasks.csv``   every task of the timeline clients (phase start times, end, outcome; tasks
                         still running at the end: ``running``, cut at the run's last moment)
``offline_periods.csv``  the offline periods of those clients (``summary.json`` lists them)
``updates.csv``          every aggregated update with its staleness
``rounds.csv``           aggregation times

Whatever ``output.events`` says (all, sample or none), these files are complete.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from asyncfl.output.columns import PHASES
from asyncfl.output.reading import has_table, read_columns, read_summary


class NotRecorded(Exception):
    """The run directory lacks a file a figure needs (made by an older asyncfl, or still running)."""


@dataclass(frozen=True)
class Segment:
    client: int
    phase: str  # download | compute | upload
    start: float
    end: float
    failed: bool  # the task this phase belongs to failed (its work was lost)


@dataclass(frozen=True)
class Failure:
    client: int
    time: float
    reason: str


def _need(run_dir: Path, *names: str) -> None:
    missing = [n for n in names if not has_table(run_dir / n)]
    if missing:
        raise NotRecorded(
            f"{run_dir} has no {' / '.join(missing)}: the run was made by an older asyncfl (or has not "
            "finished); run its scenario again to get this figure."
        )


def timeline_clients(run_dir: Path) -> list[int]:
    """The clients whose tasks and offline periods the run recorded (listed in summary.json)."""
    _need(run_dir, "summary.json", "timeline_tasks.csv", "offline_periods.csv")
    clients = read_summary(run_dir).get("timeline_clients")
    if clients is None:
        raise NotRecorded(f"{run_dir}/summary.json lists no timeline_clients: run its scenario again.")
    return [int(c) for c in clients]


def task_segments(run_dir: Path) -> tuple[list[Segment], list[Failure]]:
    """Every phase of every recorded task as a [start, end) segment, and every failure."""
    _need(run_dir, "timeline_tasks.csv")
    tasks = read_columns(run_dir / "timeline_tasks.csv")
    segments: list[Segment] = []
    failures: list[Failure] = []
    phases = list(zip(*(tasks[f"{p}_s"].tolist() for p in PHASES)))
    for client, outcome, end, at in zip(tasks["client"].tolist(), tasks["outcome"], tasks["end_s"].tolist(), phases):
        failed = outcome not in ("delivered", "running")
        starts = [(p, s) for p, s in zip(PHASES, at) if not math.isnan(s)]
        ends = [s for _, s in starts[1:]] + [end]
        segments += [Segment(int(client), p, s, e, failed) for (p, s), e in zip(starts, ends)]
        if failed:
            failures.append(Failure(int(client), end, str(outcome)))
    return segments, failures


def offline_periods(run_dir: Path) -> dict[int, list[tuple[float, float]]]:
    """Offline periods of every timeline client (an empty list: never offline)."""
    out: dict[int, list[tuple[float, float]]] = {c: [] for c in timeline_clients(run_dir)}
    table = read_columns(run_dir / "offline_periods.csv")
    for client, start, end in zip(
        table["client"].tolist(), table["offline_from_s"].tolist(), table["offline_until_s"].tolist()
    ):
        out.setdefault(int(client), []).append((start, end))
    return out


def aggregation_times(run_dir: Path) -> list[float]:
    _need(run_dir, "rounds.csv")
    return read_columns(run_dir / "rounds.csv", usecols=["time"])["time"].tolist()


def update_staleness(run_dir: Path) -> np.ndarray:
    """Staleness of every aggregated update (version before the aggregation - base version)."""
    _need(run_dir, "updates.csv")
    return read_columns(run_dir / "updates.csv", usecols=["staleness"])["staleness"].astype(np.int64)
