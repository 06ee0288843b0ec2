"""The progress figure of a run: ``accuracy_vs_time.png`` (test accuracy against virtual time and
rounds), or ``updates_vs_time.png`` for a timing-only run (updates and round lengths)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure  # the object API: no pyplot, no global backend to switch (PNGs via Agg)

from asyncfl.figures.common import RunFigure, accuracy_limits, run_title, save_figure, time_of_day_axis
from asyncfl.figures.layout import RowLayout
from asyncfl.output.reading import has_table, read_columns

MARKERS_UP_TO = 200  # points per line drawn with markers; more would merge into a solid band


def draw_progress(run_dir: Path) -> tuple[str, Figure]:
    """``accuracy_vs_time.png``, or ``updates_vs_time.png`` for a run without any accuracy
    (``timing_only``): the file name and the figure."""
    if not len(_evaluations(run_dir)["time"]) and has_table(run_dir / "rounds.csv"):
        return "updates_vs_time.png", draw_timing(run_dir)
    return "accuracy_vs_time.png", draw_accuracy(run_dir)


def plot_accuracy_vs_time(run_dir: Path) -> Path:
    """Draw :func:`draw_progress`'s figure into the run directory; returns its path."""
    name, fig = draw_progress(run_dir)
    save_figure(fig, run_dir / name)
    return run_dir / name


def _evaluations(run_dir: Path) -> dict[str, np.ndarray]:
    """metrics.csv's time, round and test_accuracy at the evaluations (the lines with an accuracy)."""
    metrics = read_columns(run_dir / "metrics.csv")
    accuracy = metrics.get("test_accuracy", np.full(len(metrics["time"]), np.nan))
    evaluated = ~np.isnan(accuracy)
    return {"time": metrics["time"][evaluated], "round": metrics["round"][evaluated], "accuracy": accuracy[evaluated]}


def draw_accuracy(run_dir: Path) -> Figure:
    """Test accuracy against virtual wall-clock seconds (left) and against rounds (right)."""
    rows = _evaluations(run_dir)
    fig = Figure(figsize=(10, 4))
    (ax_time, ax_round) = fig.subplots(1, 2)
    accuracy = rows["accuracy"]
    if len(accuracy):
        marker = "." if len(accuracy) <= MARKERS_UP_TO else None
        ax_time.plot(rows["time"], accuracy, marker=marker, lw=1.5)
        ax_round.plot(rows["round"], accuracy, marker=marker, lw=1.5, color="C1")
    ax_time.set_xlabel("virtual wall-clock time (s)")
    ax_round.set_xlabel("aggregations (rounds / versions)")
    for ax in (ax_time, ax_round):
        ax.set_ylabel("test accuracy")
        ax.set_ylim(*accuracy_limits(accuracy))
        ax.grid(alpha=0.3)
    time_of_day_axis(ax_time, run_dir)
    fig.suptitle(run_title(run_dir))
    fig.set_layout_engine(RowLayout((ax_time, ax_round)))
    return fig


FAILURES = (
    ("failed_offline", "offline"), ("failed_battery", "battery"), ("failed_deadline", "deadline"),
    ("failed_charging", "not charging"), ("failed_network", "left unmetered network"),
    ("failed_cancelled", "cancelled (over-selection)"),
)  # fmt: skip


def draw_timing(run_dir: Path) -> Figure:
    """Timing-only runs: updates received and failed per aggregation (left), and the virtual length
    of every round / interval between async aggregations (right), both against virtual time (as
    time of day when the run has ``clock.start_time``).  A day of 5-minute rounds is thousands of
    points: then lines without markers, so that the shape stays readable."""
    rounds = read_columns(run_dir / "rounds.csv")
    fig = Figure(figsize=(11, 4))
    (ax_updates, ax_length) = fig.subplots(1, 2, sharex=True)
    t = rounds["time"]
    if len(t):
        many = len(t) > MARKERS_UP_TO
        style = {"marker": None, "lw": 0.7} if many else {"marker": ".", "lw": 1.5}
        ax_updates.plot(t, rounds["received"], label="received", **style)
        for key, label in FAILURES:
            if key in rounds and np.any(np.nan_to_num(rounds[key]) != 0):  # some failed (an empty cell: none)
                ax_updates.plot(t, rounds[key], label=f"failed: {label}", **style)
        ax_updates.legend(fontsize="small")
        lengths = t - rounds["started"]
        ax_length.plot(t, lengths, color="k", **style)
        for ax in (ax_updates, ax_length):
            ax.set_xlabel("virtual wall-clock time (s), at each aggregation")
            time_of_day_axis(ax, run_dir)
        ax_length.set_title(f"{len(t):,} aggregations", fontsize="medium")
    else:
        for ax in (ax_updates, ax_length):
            ax.text(0.5, 0.5, "no aggregation happened", ha="center", va="center", transform=ax.transAxes)
            ax.set_xlabel("virtual wall-clock time (s)")
    ax_updates.set_ylabel("updates per aggregation")
    ax_length.set_ylabel("virtual s since the previous aggregation")
    for ax in (ax_updates, ax_length):
        ax.grid(alpha=0.3)
    fig.suptitle(f"{run_title(run_dir)}, timing only")
    fig.set_layout_engine(RowLayout((ax_updates, ax_length)))
    return fig


FIGURE = RunFigure("accuracy", lambda run: draw_progress(run.run_dir), order=10)
