"""``kind: trace``: online exactly during the intervals of a CSV file (``client,start_s,end_s``)."""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from pathlib import Path
from typing import Literal

from asyncfl.errors import ConfigError
from asyncfl.sim.availability.base import INF, AvailabilityKind, AvailabilityModel, Section
from asyncfl.sim.tracefiles import read_rows

__all__ = ["Trace", "TraceAvailability", "read_availability_trace"]


class TraceAvailability(Section):
    """Online intervals read from a CSV file with header ``client,start_s,end_s``."""

    kind: Literal["trace"]
    file: Path


class Trace(AvailabilityModel):
    """Online exactly during the given sorted, disjoint [start, end) intervals."""

    round_indexed = False

    def __init__(self, intervals: list[tuple[float, float]]) -> None:
        self.starts = [s for s, _ in intervals]
        self.ends = [e for _, e in intervals]

    def _containing(self, t: float) -> int | None:
        i = bisect.bisect_right(self.starts, t) - 1
        return i if i >= 0 and t < self.ends[i] else None

    def online(self, t: float, rnd: int) -> bool:
        return self._containing(t) is not None

    def next_offline(self, t: float, rnd: int) -> float:
        i = self._containing(t)
        return t if i is None else self.ends[i]

    def next_online(self, t: float) -> float:
        if self._containing(t) is not None:
            return t
        i = bisect.bisect_right(self.starts, t)
        return self.starts[i] if i < len(self.starts) else INF


def read_availability_trace(path: Path, num_clients: int) -> dict[int, list[tuple[float, float]]]:
    """CSV with header ``client,start_s,end_s``: each row one online interval; per client the
    intervals must be sorted and disjoint, and every client needs at least one row."""
    where = f"population.availability.file ({path})"
    intervals: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for line, row in read_rows(path, ("client", "start_s", "end_s"), where):
        try:
            client, start, end = int(row["client"]), float(row["start_s"]), float(row["end_s"])
        except (TypeError, ValueError):
            raise ConfigError(f"{where}, line {line}: client must be an integer, start_s and end_s numbers.") from None
        if not 0 <= client < num_clients:
            raise ConfigError(f"{where}, line {line}: client {client} is outside 0..{num_clients - 1} (data.clients).")
        if not (0 <= start < end) or not math.isfinite(start):
            raise ConfigError(f"{where}, line {line}: need 0 <= start_s < end_s, got {start:g}..{end:g}.")
        previous = intervals[client][-1] if intervals[client] else None
        if previous is not None and start < previous[1]:
            raise ConfigError(f"{where}, line {line}: intervals of client {client} are unsorted or overlap.")
        intervals[client].append((start, end))
    missing = sorted(set(range(num_clients)) - set(intervals))
    if missing:
        raise ConfigError(f"{where}: no interval for clients {missing[:10]}{' ...' if len(missing) > 10 else ''}.")
    return intervals


def _build(spec: TraceAvailability, draw):
    intervals = read_availability_trace(spec.file, draw.num_clients)
    return lambda i: Trace(intervals[i])


KIND = AvailabilityKind(
    section=TraceAvailability,
    build=_build,
    probabilities=lambda spec, draw: [math.nan] * draw.num_clients,  # the file says it all
    check_files=lambda spec, num_clients: read_availability_trace(spec.file, num_clients),
    seeded=False,
    examples=(("trace", {"kind": "trace", "file": "TRACE"}),),  # "TRACE": the contract suite's trace file
    order=50,
)
