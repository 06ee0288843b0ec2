"""``participation.png``: delivered updates against device speed, and the outcome of attempts by
speed group (from clients.csv)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # (object API: no pyplot, no global backend)
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from asyncfl.figures.common import COLORS, read_clients, run_label, spread_ties


def draw_participation(run_dir: Path) -> Figure | None:
    clients = read_clients(run_dir)
    if not len(clients):
        return None
    speed = clients["samples_per_s"].to_numpy(dtype=float)
    delivered = clients["participations"].to_numpy(dtype=float)
    p = clients["availability_p"].to_numpy(dtype=float)
    fig = Figure(figsize=(12, 4.2), layout="constrained")
    (left, right) = fig.subplots(1, 2, width_ratios=(1, 1.15))
    varied = np.isfinite(p).all() and np.ptp(p) > 0
    speed_shown = spread_ties(speed)
    size = 24 if len(clients) <= 2000 else 2  # 10^5 clients: small dots
    if varied:
        dots = left.scatter(speed_shown, delivered, c=p, cmap="viridis", s=size, edgecolor="none")
        fig.colorbar(dots, ax=left, label="availability p (long-run fraction online)")
    else:
        left.scatter(speed_shown, delivered, color="#4c72b0", s=size, edgecolor="none")
    left.set_xscale("log")
    decades = np.log10(speed.max() / speed.min()) if speed.min() > 0 else math.inf
    left.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if decades <= 3.5 else (1.0,), numticks=12))
    left.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _speed(v)))
    left.xaxis.set_minor_formatter(NullFormatter())
    left.yaxis.set_major_locator(MaxNLocator(integer=True))
    left.set_xlabel("device speed (samples/s, log scale; equal speeds spread apart)")
    left.set_ylabel("delivered updates")
    left.grid(alpha=0.3)
    _outcomes_by_speed(right, clients, speed)
    fig.suptitle(f"{run_label(run_dir)}: participation against device speed")
    return fig


def _outcomes_by_speed(ax, clients: pd.DataFrame, speed: np.ndarray) -> None:
    """Stacked share of attempts per outcome, clients grouped by speed (slowest left): one group per
    distinct speed when there are at most five (speed tiers), speed quintiles otherwise."""
    groups, names = speed_groups(speed)
    outcomes = ["participations", "failed_offline", "failed_battery", "failed_deadline"]
    labels = ["delivered", "failed: offline", "failed: battery", "failed: deadline"]
    colors = ["#55a868", COLORS["offline"], "#8172b2", COLORS["failed"]]
    for key, label, color in (("failed_charging", "failed: not charging", "#937860"),
                              ("failed_network", "failed: left unmetered network", "#da8bc3")):  # fmt: skip
        if key in clients:  # population.eligibility
            outcomes.append(key), labels.append(label), colors.append(color)
    attempts = np.array([clients["attempts"].to_numpy()[g].sum() for g in groups], dtype=float)
    bottom = np.zeros(len(groups))
    for key, label, color in zip(outcomes, labels, colors):
        counts = np.array([clients[key].to_numpy()[g].sum() for g in groups], dtype=float)
        share = np.divide(counts, attempts, out=np.zeros_like(counts), where=attempts > 0)
        ax.bar(range(len(groups)), share, bottom=bottom, color=color, label=label)
        bottom += share
    ax.set_xticks(range(len(groups)), names, fontsize=8)
    ax.set_xlabel("speed group (samples/s), slowest to fastest")
    ax.set_ylabel("share of attempts (rest: still running)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)


def speed_groups(speed: np.ndarray) -> tuple[list[np.ndarray], list[str]]:
    """Clients grouped by speed (slowest first): one group per distinct speed when there are at most
    five (speed tiers), speed quintiles otherwise; with tick labels."""
    distinct = np.unique(speed)
    if len(distinct) <= 5:
        groups = [np.nonzero(speed == v)[0] for v in distinct]
        names = [f"{v:g}" for v in distinct]
    else:
        groups = np.array_split(np.argsort(speed, kind="stable"), 5)
        names = [f"{_speed(speed[g].min())} to {_speed(speed[g].max())}" for g in groups]
    return groups, [f"{name}\n{len(g):,} clients" for name, g in zip(names, groups)]


def _speed(v: float) -> str:
    """A speed as a short tick label: 0.5, 12, 1.5k."""
    return f"{v / 1000:.3g}k" if v >= 1000 else f"{v:.3g}" if v < 10 else f"{v:.0f}"
