"""``client_accuracy.png``: the final model's accuracy over clients, with FedAR's Table 3 statistics
(in %, also in ``client_accuracy.csv`` and ``.md``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure  # (object API: no pyplot, no global backend)
from matplotlib.ticker import FuncFormatter, MaxNLocator

from asyncfl.figures.common import ClientTable, RunFigure, named, read_clients, run_label, spread_ties
from asyncfl.figures.layout import RowLayout
from asyncfl.output.client_statistics import bias_stats
from asyncfl.output.csv_text import clean
from asyncfl.output.writing import write_atomic, write_columns


def _client_accuracies(
    run_dir: Path, clients: ClientTable | None = None
) -> tuple[np.ndarray, np.ndarray | None, dict[str, float]]:
    """The accuracies of the clients that have one (clients.csv), the sizes of their test splits
    (None: the file has no test_samples) and FedAR's Table 3 statistics of them (in %)."""
    clients = read_clients(run_dir) if clients is None else clients
    if "accuracy" not in clients:
        return np.zeros(0), None, {}
    accuracies = clients["accuracy"].astype(float)
    scored = ~np.isnan(accuracies)
    sizes = clients["test_samples"].astype(float)[scored] if "test_samples" in clients else None
    return accuracies[scored], sizes, bias_stats(accuracies[scored])


def write_client_accuracy_tables(run_dir: Path, clients: ClientTable | None = None) -> None:
    """client_accuracy.csv and .md: the statistics in percent, as in FedAR's Table 3."""
    _, _, stats = _client_accuracies(run_dir, clients)
    write_columns(run_dir / "client_accuracy.csv", {k: [clean(v)] for k, v in stats.items()}, digits=None)
    row = bias_table_row(run_label(run_dir), stats)  # the layout of asyncfl.output.tables.markdown, one row
    lines = ["| " + " | ".join(row) + " |", "|" + "---|" * len(row), "| " + " | ".join(row.values()) + " |"]
    write_atomic(run_dir / "client_accuracy.md", "\n".join(lines) + "\n")


def draw_client_accuracy(run_dir: Path, clients: ClientTable | None = None) -> Figure | None:
    """The final model's accuracy over clients in fractions, like every other accuracy axis (left),
    and against the size of each client's local test split (right): a client with 6 test samples
    can only score 0, 1/6, ..., 1, so a spike at 1.0 is often small splits, not good models."""
    accuracies, sizes, stats = _client_accuracies(run_dir, clients)
    if not stats:
        return None
    fig = Figure(figsize=(11, 4) if sizes is not None else (6, 4))
    axes = fig.subplots(1, 2 if sizes is not None else 1, squeeze=False)[0]
    ax = axes[0]
    ax.hist(accuracies, bins=np.linspace(0, 1, 21), color="#4c72b0", edgecolor="white")
    lines = (("mean", "mean", "-", "black"), ("worst10_mean", "worst 10 %", "--", "#c44e52"),
             ("best10_mean", "best 10 %", "-.", "#dd8452"))  # fmt: skip
    for key, label, style, color in lines:
        ax.axvline(stats[key] / 100, color=color, ls=style, lw=2, zorder=3, label=f"{label}: {stats[key] / 100:.3f}")
    ax.set_xlim(-0.03, 1.03)  # a mean of 1.0 (best 10 %) is drawn inside the frame, not on it
    ax.set_xlabel("accuracy of the final global model on the client's local test split")
    ax.set_ylabel("clients")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(f"{stats['clients']} clients, std {stats['std'] / 100:.3f}", fontsize="medium")
    if sizes is not None:
        right = axes[1]
        right.scatter(spread_ties(sizes), accuracies, s=14, color="#4c72b0", alpha=0.6, edgecolor="none")
        wide = sizes.min() > 0 and sizes.max() / sizes.min() > 30
        if wide:
            right.set_xscale("log")
            right.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        right.set_xlabel(f"test samples of the client ({'log scale; ' if wide else ''}equal sizes spread apart)")
        right.set_ylabel("accuracy on them")
        right.set_ylim(-0.03, 1.03)
        right.grid(alpha=0.3)
        perfect = sizes[accuracies == 1.0]
        at_one = f"; at 1.0: {len(perfect)}, median {np.median(perfect):g} samples" if len(perfect) else ""
        right.set_title(f"test split: median {np.median(sizes):g} samples ({sizes.min():g} to {sizes.max():g}){at_one}",
                        fontsize="medium")  # fmt: skip
    fig.suptitle(f"{run_label(run_dir)}: final model's accuracy per client")
    fig.set_layout_engine(RowLayout(axes))
    return fig


def bias_table_row(label: str, stats: dict[str, float]) -> dict[str, str]:
    """One row of FedAR's Table 3 layout: Mean (%) +- std, Var, Worst 10 %, Best 10 %."""
    return {
        "run": label,
        "Mean (%)": f"{stats['mean']:.1f} ± {stats['std']:.1f}",
        "Var": f"{stats['var']:.1f}",
        "Worst 10%": f"{stats['worst10_mean']:.1f} ± {stats['worst10_std']:.1f}",
        "Best 10%": f"{stats['best10_mean']:.1f} ± {stats['best10_std']:.1f}",
    }


FIGURE = RunFigure(
    "client_accuracy",
    lambda run: named("client_accuracy.png", draw_client_accuracy(run.run_dir, run.table)),
    writes_beside=lambda run: write_client_accuracy_tables(run.run_dir, run.table),
    order=50,
)
