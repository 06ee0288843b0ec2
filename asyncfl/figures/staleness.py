"""``staleness.png``: histogram of the staleness of every aggregated update."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure  # (object API: no pyplot, no global backend)
from matplotlib.ticker import MaxNLocator

from asyncfl.figures.common import RunFigure, named, run_label
from asyncfl.figures.layout import RowLayout
from asyncfl.figures.timeline_files import update_staleness


def draw_staleness(run_dir: Path) -> Figure | None:
    """Histogram of the staleness of every aggregated update; none when every update is fresh
    (tau = 0: a sync run whose late updates are dropped), as one bar would say nothing."""
    tau = update_staleness(run_dir)
    if not len(tau) or not tau.any():
        return None
    counts = np.bincount(tau)  # one bar per staleness value: 10^6 updates cost no more than 10
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    top = len(counts) - 1
    ax.bar(np.arange(len(counts)), counts, width=1.0, color="#4c72b0", edgecolor="white")
    mean = float(tau.mean())
    ax.axvline(mean, color="black", ls="--", lw=1, label=f"mean {mean:.2f}")
    ax.set_xlabel("staleness τ of an aggregated update (versions)")
    ax.set_ylabel("updates")
    ax.set_xlim(-0.5, max(top, 1) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend()
    ax.set_title(f"{run_label(run_dir)}: {len(tau):,} updates, max τ = {top}")
    fig.set_layout_engine(RowLayout([ax]))
    return fig


FIGURE = RunFigure("staleness", lambda run: named("staleness.png", draw_staleness(run.run_dir)), order=30)
