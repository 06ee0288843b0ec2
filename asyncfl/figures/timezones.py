"""``timezones.png``: delivered updates per hour by the clients' time zone (``population.timezones``),
from updates.csv, rounds.csv and clients.csv."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure  # (object API: no pyplot, no global backend)

from asyncfl.figures.common import ClientTable, RunFigure, named, read_clients, run_label, run_start, time_of_day_axis
from asyncfl.figures.layout import RowLayout
from asyncfl.output.reading import has_table, read_columns


def draw_timezones(run_dir: Path, clients: ClientTable | None = None) -> Figure | None:
    """Delivered (aggregated) updates per hour of virtual time, one line per client time zone (up to
    six, the most populous; the others pooled), x axis as time of day when the run has a start time:
    the waves of a diurnal population, shifted by the zones' offsets (ties among the most populous: the
    zone furthest west first).  ``clients``: clients.csv's columns (default: read from ``run_dir``)."""
    clients = read_clients(run_dir) if clients is None else clients
    if not clients.rows or "utc_offset_h" not in clients or not has_table(run_dir / "updates.csv"):
        return None
    rounds = read_columns(run_dir / "rounds.csv", usecols=["round", "time"])
    updates = read_columns(run_dir / "updates.csv", usecols=["round", "client"])
    if not len(rounds["round"]) or not len(updates["round"]):
        return None
    ids, offsets = clients["client"], clients["utc_offset_h"].astype(float)
    order = np.argsort(ids, kind="stable")  # clients.csv is in id order: this is a no-op there
    at = order[np.searchsorted(ids, updates["client"].astype(ids.dtype), sorter=order)]
    zone = offsets[at]
    t = _times_of(updates["round"], rounds["round"], rounds["time"])
    end = float(rounds["time"].max())
    bins = np.arange(0.0, end + 3600.0, 3600.0)
    zones, sizes = np.unique(offsets, return_counts=True)
    by_size = np.argsort(-sizes, kind="stable")
    shown, counts = zones[by_size[:6]].tolist(), dict(zip(zones.tolist(), sizes.tolist()))
    fig = Figure(figsize=(10, 4.2))
    ax = fig.subplots()
    for z in sorted(shown):
        hist, _ = np.histogram(t[zone == z], bins=bins)
        n = int(counts[z])
        ax.stairs(hist / n * 1000, bins, lw=1.6, label=f"UTC{z:+g} ({n:,} clients)")
    rest = ~np.isin(zone, shown)
    if rest.any():
        n = sum(size for z, size in counts.items() if z not in shown)
        hist, _ = np.histogram(t[rest], bins=bins)
        ax.stairs(hist / n * 1000, bins, lw=1.2, color="0.5", label=f"other zones ({n:,} clients)")
    ax.set_xlim(0, bins[-1])
    ax.set_xlabel("virtual time (s)")
    time_of_day_axis(ax, run_dir)
    ax.set_ylabel("delivered updates per hour\nper 1,000 clients of the zone")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    start = run_start(run_dir)
    when = "" if start is not None else " (no clock.start_time: virtual second 0 is midnight UTC)"
    ax.set_title(f"{run_label(run_dir)}: participation by client time zone{when}")
    fig.set_layout_engine(RowLayout([ax]))
    return fig


def _times_of(versions: np.ndarray, rounds: np.ndarray, times: np.ndarray) -> np.ndarray:
    """The virtual time of each update's aggregation: the time of the rounds.csv line of its version
    (NaN for a version rounds.csv lacks, as pandas' ``map`` gave)."""
    order = np.argsort(rounds, kind="stable")
    at = np.minimum(np.searchsorted(rounds, versions, sorter=order), len(rounds) - 1)
    found = rounds[order[at]] == versions
    return np.where(found, times[order[at]], np.nan)


FIGURE = RunFigure("timezones", lambda run: named("timezones.png", draw_timezones(run.run_dir, run.table)), order=70)
