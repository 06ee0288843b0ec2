"""``time_breakdown.png``: where virtual time went (downloading, computing kept / thrown away,
uploading, idle, offline) per speed group, from clients.csv."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure  # (object API: no pyplot, no global backend)

from asyncfl.figures.aggregate import group_means, speed_groups
from asyncfl.figures.common import COLORS, ClientTable, RunFigure, named, read_clients, run_label
from asyncfl.figures.layout import RowLayout
from asyncfl.output.columns import TIME_BREAKDOWN_COLUMNS  # clients.csv's: they add up to the run

BREAKDOWN = (
    ("download_s", "downloading", COLORS["download"]),
    ("compute_s", "computing, kept (update delivered or still running)", COLORS["compute"]),
    ("lost_compute_s", "computing, thrown away (task failed)", COLORS["failed"]),
    ("upload_s", "uploading", COLORS["upload"]),
    ("idle_s", "idle (online, no task)", "#f0e6b8"),
    ("offline_s", "offline / not eligible", COLORS["offline"]),
)


def draw_time_breakdown(run_dir: Path, clients: ClientTable | None = None) -> Figure | None:
    """Mean share of the run each speed group spent downloading, computing (the part of it whose
    task then failed apart, in red: work thrown away), uploading, idle and offline (clients.csv's time
    columns, which add up to the run's virtual length per client), and the same in virtual seconds
    per client on the right axis.  ``clients``: clients.csv's columns (default: read from ``run_dir``)."""
    clients = read_clients(run_dir) if clients is None else clients
    if not clients.rows or any(key not in clients for key in TIME_BREAKDOWN_COLUMNS):
        return None  # a run directory from before these columns
    speed = clients["samples_per_s"].astype(float)
    groups, names = speed_groups(speed)
    count = len(names)
    seconds = {key: clients[key].astype(float) for key in TIME_BREAKDOWN_COLUMNS}
    length = float(np.median(sum(seconds.values())))
    if not length > 0:
        return None
    parts = BREAKDOWN
    if "lost_compute_s" in clients:  # computing: what was kept apart from what was thrown away
        seconds["lost_compute_s"] = clients["lost_compute_s"].astype(float)
        seconds["compute_s"] = seconds["compute_s"] - seconds["lost_compute_s"]
    else:  # a run directory from before lost_compute_s: computing as one part
        parts = [(key, "computing", color) if key == "compute_s" else (key, label, color)
                 for key, label, color in BREAKDOWN if key != "lost_compute_s"]  # fmt: skip
    fig = Figure(figsize=(10, 4.4))
    ax = fig.subplots()
    bottom = np.zeros(count)
    for key, label, color in parts:
        share = group_means(groups, seconds[key], count) / length
        ax.bar(range(count), share, bottom=bottom, color=color, label=label, edgecolor="white", lw=0.5)
        for i, (b, v) in enumerate(zip(bottom, share)):
            if v >= 0.06:
                ax.text(i, b + v / 2, f"{100 * v:.0f}%", ha="center", va="center", fontsize=8)
        bottom += share
    ax.set_xticks(range(count), names, fontsize=8)
    ax.set_xlabel("speed group (samples/s), slowest to fastest")
    ax.set_ylabel("share of the run (mean over the group's clients)")
    ax.set_ylim(0, 1)
    right = ax.secondary_yaxis("right", functions=(lambda f: f * length, lambda s: s / length))
    right.set_ylabel("virtual seconds per client")
    legend = fig.legend(fontsize=8, loc="center right", frameon=False)
    ax.set_title(f"{run_label(run_dir)}: where {length:,.0f} virtual s went, per speed group")
    fig.set_layout_engine(RowLayout([ax], right=legend))
    return fig


FIGURE = RunFigure(
    "time_breakdown", lambda run: named("time_breakdown.png", draw_time_breakdown(run.run_dir, run.table)), order=60
)
