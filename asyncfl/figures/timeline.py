"""``timeline.png``: per-client timeline (download / compute / upload / offline / failed) for a
readable subset of the recorded clients that worked (started at least one task), spread over the range
of their device speeds (the files it reads: :mod:`asyncfl.figures.timeline_files`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure  # (object API: no pyplot, no global backend)
from matplotlib.patches import Patch

from asyncfl.errors import ConfigError
from asyncfl.figures.common import COLORS, ClientTable, RunFigure, named, read_clients, run_label, time_of_day_axis
from asyncfl.figures.layout import RowLayout
from asyncfl.figures.timeline_files import aggregation_times, offline_periods, task_segments, timeline_clients

FAIL_MARKERS = {"offline": "x", "battery": "v", "deadline": "|", "charging": "^", "network": "s", "cancelled": "o"}

TIMELINE_CLIENTS = 16  # rows in the timeline by default (of results.TIMELINE_SAMPLE recorded)

TIMELINE_AGGREGATIONS = 30  # default window: up to this many aggregations


def spread_by_speed(speed: dict[int, float], count: int) -> list[int]:
    """Up to ``count`` of the clients in ``speed`` at evenly spaced ranks of device speed, fastest first."""
    ranked = sorted((v, c) for c, v in speed.items())
    if len(ranked) > count:
        ranked = [ranked[round(i)] for i in np.linspace(0, len(ranked) - 1, count)]
    return [c for _, c in reversed(ranked)]


def recorded_speeds(run_dir: Path, table: ClientTable | None = None) -> dict[int, float]:
    """Device speed of each timeline client (clients.csv, or its columns in ``table``), picked out
    with numpy: a dict of all 10^6 clients' speeds cost half a second."""
    table = read_clients(run_dir) if table is None else table
    if not table.rows:
        return {}
    ids = table["client"].astype(np.int64)
    rows = np.flatnonzero(np.isin(ids, timeline_clients(run_dir)))
    return dict(zip(ids[rows].tolist(), table["samples_per_s"].astype(float)[rows].tolist()))


def timeline_rows(
    run_dir: Path, speed: dict[int, float], clients: int | list[int] | None, worked: set[int] | None = None
) -> list[int]:
    """Which recorded clients the timeline shows: ``clients`` by id, or that many (default 16) of those
    that ``worked`` (had a task; None: all of them) spread over their speeds, topped up, when more are
    asked for than worked, with recorded clients that never did."""
    recorded = timeline_clients(run_dir)
    if isinstance(clients, list):
        unknown = [c for c in clients if c not in recorded]
        if unknown:
            raise ConfigError(
                f"--clients: client(s) {', '.join(map(str, unknown))} are not on this run's timeline; it recorded "
                f"the tasks of clients {', '.join(map(str, recorded))} (spread over device speeds)."
            )
        return sorted(clients, key=lambda c: -speed.get(c, 0.0))
    count = TIMELINE_CLIENTS if clients is None else clients
    if clients is not None and count > len(recorded):
        raise ConfigError(f"--clients {count}: this run recorded the tasks of {len(recorded)} clients; ask for fewer.")
    workers = [c for c in recorded if worked is None or c in worked]
    chosen = spread_by_speed({c: speed.get(c, math.nan) for c in workers}, count)
    if clients is not None and len(chosen) < count:
        idle = {c: speed.get(c, math.nan) for c in recorded if c not in chosen}
        chosen = sorted(chosen + spread_by_speed(idle, count - len(chosen)), key=lambda c: -speed.get(c, 0.0))
    return chosen


def draw_timeline(
    run_dir: Path,
    window: tuple[float, float | None] | None = None,
    clients: int | list[int] | None = None,
    table: ClientTable | None = None,
) -> Figure | None:
    """Timeline of the recorded clients' tasks.  ``window``: (start, end) virtual seconds (end None:
    the last recorded moment; default: from 0 to the 30th aggregation).  ``clients``: how many of the
    recorded clients (default 16) or which ones.  ``table``: clients.csv's columns (default: read from
    ``run_dir``)."""
    timeline_clients(run_dir)  # names every file an older run directory lacks
    segments, failures = task_segments(run_dir)
    if not segments and not failures:
        return None
    speed = recorded_speeds(run_dir, table)
    worked = {s.client for s in segments} | {f.client for f in failures}
    chosen = timeline_rows(run_dir, speed, clients, worked)
    aggregations = aggregation_times(run_dir)
    last = max([s.end for s in segments] + [f.time for f in failures] + aggregations)
    if window is None:
        start = 0.0
        until = aggregations[TIMELINE_AGGREGATIONS - 1] if len(aggregations) >= TIMELINE_AGGREGATIONS else last
        until = max(until, start + 1.0)  # a run that ended at once (nobody could work) still gets an axis
    else:
        start, until = window[0], window[1] if window[1] is not None else last
        if start >= until:
            raise ConfigError(f"--window {start:g}:: the run's records end at {last:,.1f} virtual s; start earlier.")
    offline = offline_periods(run_dir)
    row = {c: i for i, c in enumerate(chosen)}
    fig = Figure(figsize=(11, 0.42 * len(chosen) + 1.6))
    ax = fig.subplots()
    periods = [(row[c] - 0.4, 0.8, a, b, "offline") for c in chosen for a, b in offline.get(c, [])]
    ax.add_collection(bar_collection([p for p in periods if p[3] > start and p[2] < until]))
    bars: dict[tuple[int, str], list[tuple[float, float]]] = {}  # drawn row by row, colour by colour
    for s in segments:
        if s.client in row and s.start < until and s.end > start:
            bars.setdefault((s.client, "failed" if s.failed else s.phase), []).append((s.start, s.end))
    tasks = [(row[c] - 0.3, 0.6, a, b, kind) for (c, kind), spans in bars.items() for a, b in spans]
    ax.add_collection(bar_collection(tasks))
    for reason, marker in FAIL_MARKERS.items():
        pts = [
            (f.time, row[f.client])
            for f in failures
            if f.reason == reason and f.client in row and start <= f.time <= until
        ]
        if pts:
            ax.scatter(*zip(*pts), marker=marker, color="black", s=36, zorder=3, label=f"failed: {reason}")
    shown = [t for t in aggregations if start <= t <= until]  # one artist, not an axvline per aggregation
    ax.vlines(shown, 0, 1, transform=ax.get_xaxis_transform(), colors="0.5", lw=0.5, alpha=0.5, zorder=0)
    ax.set_yticks(range(len(chosen)), [f"client {c} ({speed.get(c, math.nan):.0f} samples/s)" for c in chosen])
    ax.set_ylim(len(chosen) - 0.5, -0.5)  # fastest on top
    ax.set_xlim(start, until)
    ax.set_xlabel("virtual time (s); grey vertical lines: aggregations")
    if time_of_day_axis(ax, run_dir):
        ax.set_xlabel(f"{ax.get_xlabel()}; grey vertical lines: aggregations")
    legend = [Patch(color=COLORS[k], label=k) for k in ("download", "compute", "upload")]
    legend += [
        Patch(color=COLORS["failed"], label="work lost (task failed)"),
        Patch(color=COLORS["offline"], label="offline"),
        Patch(facecolor="white", edgecolor="0.6", label="idle (online, no task)"),
    ]
    handles = legend + ax.get_legend_handles_labels()[0]
    columns = len(handles) if len(handles) <= 9 else math.ceil(len(handles) / 2)  # more: two rows, within the width
    legend = fig.legend(handles=handles, loc="lower center", ncol=columns, fontsize=8, frameon=False)
    busy = {s.client for s in segments if s.start < until and s.end > start}  # a task in the window shown,
    busy |= {f.client for f in failures if start <= f.time <= until}  # as "worked" counts one over the run
    who = _who(chosen, clients, worked, busy)
    ax.set_title(f"{run_label(run_dir)}: {who}, virtual s {start:,.0f} to {until:,.0f}")
    fig.set_layout_engine(RowLayout([ax], below=legend))
    return fig


def bar_collection(bars: list[tuple[float, float, float, float, str]]) -> PolyCollection:
    """One collection of the timeline's bars ``(bottom, height, start, end, kind)``, drawn in the given
    order in the colour of their kind: the rectangles ``broken_barh`` draws with one call per row and
    colour (to the bit: top ``bottom + height``, right ``start + (end - start)``), as one artist: the
    timeline has two (offline periods, task phases) instead of one per row and colour (up to 80, each
    with its own autoscale update and draw call)."""
    vertices = np.zeros((len(bars), 4, 2))
    for i, (y0, height, a, b, _) in enumerate(bars):
        x1, y1 = a + (b - a), y0 + height
        vertices[i] = ((a, y0), (a, y1), (x1, y1), (x1, y0))
    colors = [COLORS[kind] for *_, kind in bars]
    return PolyCollection(vertices, facecolors=colors, edgecolors=colors, linewidths=0)


def _who(chosen: list[int], clients: int | list[int] | None, worked: set[int], busy: set[int]) -> str:
    """What the title says of the rows: how they were chosen, and how many of them had a task in the
    window shown (``busy``; ``worked``: a task at any time of the run)."""
    if isinstance(clients, list):
        return f"{len(chosen)} chosen clients"
    never = sum(c not in worked for c in chosen)
    elsewhere = sum(c in worked and c not in busy for c in chosen)  # e.g. offline throughout the window
    parts = [f"{len(chosen) - never - elsewhere} clients that worked"]
    parts += [f"{elsewhere} with no task in this window"] if elsewhere else []
    parts += [f"{never} that never did"] if never else []
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{listed}, spread over their speeds"


FIGURE = RunFigure(
    "timeline",
    lambda run: named(run.timeline_name, draw_timeline(run.run_dir, run.window, run.clients, run.table)),
    order=20,
)
