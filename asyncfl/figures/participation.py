"""``participation.png``: delivered updates against device speed, and the outcome of attempts by
speed group (from clients.csv)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure  # (object API: no pyplot, no global backend)
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from asyncfl.figures.aggregate import SCATTER_ALL_UP_TO, group_sums, speed_groups, speed_label, visible_points
from asyncfl.figures.common import COLORS, ClientTable, RunFigure, named, read_clients, run_label, spread_ties
from asyncfl.figures.layout import RowLayout


def draw_participation(run_dir: Path, clients: ClientTable | None = None) -> Figure | None:
    """``clients``: clients.csv's columns (default: read from ``run_dir``)."""
    clients = read_clients(run_dir) if clients is None else clients
    if not clients.rows:
        return None
    speed = clients["samples_per_s"].astype(float)
    delivered = clients["participations"].astype(float)
    p = clients["availability_p"].astype(float)
    fig = Figure(figsize=(12, 4.2))
    (left, right) = fig.subplots(1, 2)
    beside: dict = {}
    varied = np.isfinite(p).all() and np.ptp(p) > 0
    speed_shown = spread_ties(speed)
    size = 24 if clients.rows <= 2000 else 2  # 10^5 clients: small dots
    shown = slice(None)
    if clients.rows > SCATTER_ALL_UP_TO:  # 10^6 dots cost seconds to draw; most lie under others
        shown = visible_points(speed_shown, delivered, log_x=bool(speed_shown.min() > 0))
    if varied:
        dots = left.scatter(speed_shown[shown], delivered[shown], c=p[shown], cmap="viridis", s=size,
                            edgecolor="none", vmin=p.min(), vmax=p.max())  # fmt: skip
        bar = beside[left] = [fig.add_axes((0, 0, 1, 1))]  # placed by RowLayout
        fig.colorbar(dots, cax=bar[0], label="availability p (long-run fraction online)")
    else:
        left.scatter(speed_shown[shown], delivered[shown], color="#4c72b0", s=size, edgecolor="none")
    left.set_xscale("log")
    decades = np.log10(speed.max() / speed.min()) if speed.min() > 0 else math.inf
    left.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if decades <= 3.5 else (1.0,), numticks=12))
    left.xaxis.set_major_formatter(FuncFormatter(lambda v, _: speed_label(v)))
    left.xaxis.set_minor_formatter(NullFormatter())
    left.yaxis.set_major_locator(MaxNLocator(integer=True))
    left.set_xlabel("device speed (samples/s, log scale; equal speeds spread apart)")
    left.set_ylabel("delivered updates")
    left.grid(alpha=0.3)
    beside[right] = [_outcomes_by_speed(right, clients, speed)]
    fig.suptitle(f"{run_label(run_dir)}: participation against device speed")
    fig.set_layout_engine(RowLayout((left, right), width_ratios=(1, 1.15), beside=beside))
    return fig


def _outcomes_by_speed(ax, clients: ClientTable, speed: np.ndarray):
    """Stacked share of attempts per outcome, clients grouped by speed (slowest left): one group per
    distinct speed when there are at most five (speed tiers), speed quintiles otherwise."""
    labels_of, names = speed_groups(speed)
    outcomes = ["participations", "failed_offline", "failed_battery", "failed_deadline"]
    labels = ["delivered", "failed: offline", "failed: battery", "failed: deadline"]
    colors = ["#55a868", COLORS["offline"], "#8172b2", COLORS["failed"]]
    for key, label, color in (("failed_charging", "failed: not charging", "#937860"),
                              ("failed_network", "failed: left unmetered network", "#da8bc3")):  # fmt: skip
        if key in clients:  # population.eligibility
            outcomes.append(key), labels.append(label), colors.append(color)
    attempts = group_sums(labels_of, clients["attempts"], len(names))
    bottom = np.zeros(len(names))
    for key, label, color in zip(outcomes, labels, colors):
        counts = group_sums(labels_of, clients[key], len(names))
        share = np.divide(counts, attempts, out=np.zeros_like(counts), where=attempts > 0)
        ax.bar(range(len(names)), share, bottom=bottom, color=color, label=label)
        bottom += share
    ax.set_xticks(range(len(names)), names, fontsize=8)
    ax.set_xlabel("speed group (samples/s), slowest to fastest")
    ax.set_ylabel("share of attempts (rest: still running)")
    ax.set_ylim(0, 1)
    return ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)


FIGURE = RunFigure(
    "participation", lambda run: named("participation.png", draw_participation(run.run_dir, run.table)), order=40
)
