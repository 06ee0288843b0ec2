"""Figures of a run, drawn from the files in its run directory (so they can be re-rendered later)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and CI
import matplotlib.pyplot as plt  # noqa: E402

from asyncfl.results import read_csv  # noqa: E402


def _floats(rows: list[dict[str, str]], key: str) -> list[float]:
    return [float(r[key]) if r[key] != "" else float("nan") for r in rows]


def plot_accuracy_vs_time(run_dir: Path, title: str | None = None) -> Path:
    """Test accuracy against virtual wall-clock seconds (and against rounds, on a second axis below)."""
    rows = [r for r in read_csv(run_dir / "metrics.csv") if r["test_accuracy"] != ""]
    out = run_dir / "accuracy_vs_time.png"
    fig, (ax_time, ax_round) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    if rows:
        ax_time.plot(_floats(rows, "time"), _floats(rows, "test_accuracy"), marker=".", lw=1.5)
        ax_round.plot(_floats(rows, "round"), _floats(rows, "test_accuracy"), marker=".", lw=1.5, color="C1")
    ax_time.set_xlabel("virtual wall-clock time (s)")
    ax_round.set_xlabel("aggregations (rounds / versions)")
    for ax in (ax_time, ax_round):
        ax.set_ylabel("test accuracy")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    fig.suptitle(title or run_dir.parent.name)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
