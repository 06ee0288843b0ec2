"""Comparison figures: accuracy against virtual wall-clock time and against rounds, mean over seeds
with a shaded band (mean +- one standard deviation, see :mod:`asyncfl.study.seed_statistics`)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # the object API: no pyplot, no global backend to switch

from asyncfl.figures.common import accuracy_limits, save_figure
from asyncfl.figures.layout import RowLayout

XLABELS = {
    "time": "virtual wall-clock time (s)",
    "round": "aggregations (sync rounds / async versions)",
}


def plot_comparison(
    table: pd.DataFrame, axis: str, path: Path, targets: Sequence[float] = (), title: str = ""
) -> Path | None:
    """One line per variant from the comparison.csv table's rows of ``axis``.  The line is drawn where
    every seed of the variant covers the abscissa; past that (some seeds ended earlier) it continues dotted."""
    rows = table[table["axis"] == axis] if len(table) else table
    if not len(rows):
        return None
    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    for i, (variant, mine) in enumerate(rows.groupby("variant", sort=False)):
        x, mean, std = (mine[c].to_numpy(dtype=float) for c in ("x", "accuracy_mean", "accuracy_std"))
        seeds = mine["seeds"].to_numpy()
        full = seeds == seeds.max()
        last_full = int(np.nonzero(full)[0].max()) + 1
        color = f"C{i % 10}"
        line = "-" if i < 10 else "--"  # past ten variants the colours repeat: dash the second round
        label = f"{variant} ({seeds.max()} seed{'s' if seeds.max() > 1 else ''})"
        ax.step(x[:last_full], mean[:last_full], where="post", color=color, ls=line, lw=1.8, label=label)
        ax.fill_between(
            x[:last_full], np.clip(mean - std, 0, 1)[:last_full], np.clip(mean + std, 0, 1)[:last_full],
            step="post", color=color, alpha=0.2, lw=0,
        )  # fmt: skip
        ax.plot(x[last_full - 1], mean[last_full - 1], "o", color=color, ms=4)
        if last_full < len(x):
            ax.step(x[last_full - 1 :], mean[last_full - 1 :], where="post", color=color, lw=1, ls=":")
    names = ", ".join(f"{t:g}" for t in targets)
    for j, target in enumerate(targets):
        ax.axhline(target, color="0.3", lw=0.8, ls="--", label=f"target accuracy {names}" if j == 0 else None)
    ax.set_xlabel(XLABELS[axis])
    ax.set_ylabel("test accuracy (mean ± std over seeds)")
    mean, std = rows["accuracy_mean"].to_numpy(dtype=float), rows["accuracy_std"].to_numpy(dtype=float)
    ax.set_ylim(*accuracy_limits([*(mean - std), *mean, *(mean + std), *targets]))  # the data's range, not 0-1
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=9)
    if title:
        ax.set_title(title)
    fig.set_layout_engine(RowLayout([ax]))
    save_figure(fig, path, dpi=130)
    return path
