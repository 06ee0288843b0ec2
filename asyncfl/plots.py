"""Figures of a run, drawn from the files in its run directory (so they can be re-rendered later)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure  # the object API: no pyplot, no global backend to switch (PNGs via Agg)

from asyncfl.run_files import read_config, read_table

MARKERS_UP_TO = 200  # points per line drawn with markers; more would merge into a solid band


def accuracy_limits(values: Sequence[float]) -> tuple[float, float]:
    """y range for accuracies: the data's range plus 5 % of it each side (at least 0.02), kept in
    [0, 1], so that the part of the curve that moves is not squashed into a band of a 0-1 axis."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    pad = max(0.05 * (hi - lo), 0.02)
    return max(0.0, lo - pad), min(1.0, hi + pad)


def run_label(run_dir: Path) -> str:
    """What a figure's title calls the run: ``scenario, seed N``, and inside a sweep
    (``<sweep>/<variant>/seed<N>/`` beside study.yaml) ``study / variant, seed N``, from config.yaml
    and the directory's place; the directory's own name (a timestamp) says nothing."""
    config = read_config(run_dir)
    name, seed = config.get("name", run_dir.name), config.get("seed")
    in_sweep = re.fullmatch(r"seed(\d+)", run_dir.name) and (run_dir.parent.parent / "study.yaml").is_file()
    if in_sweep:
        name = f"{name} / {run_dir.parent.name}"
    return name if seed is None else f"{name}, seed {seed}"


def run_title(run_dir: Path) -> str:
    """``label: algorithm (mode, K)``, see :func:`run_label`."""
    config = read_config(run_dir)
    if not config:
        return run_label(run_dir)
    server = config.get("server") or {}
    mode = server.get("mode", "sync")
    detail = f"k_async, K={server.get('k')}" if mode == "k_async" else mode
    return f"{run_label(run_dir)}: {(config.get('algorithm') or {}).get('name', '?')} ({detail})"


def run_start(run_dir: Path):
    """The run's ``clock.start_time`` as a datetime in the offset it names (UTC when it names none),
    or None when the run has no time of day."""
    text = (read_config(run_dir).get("clock") or {}).get("start_time")
    if not text:
        return None
    from datetime import datetime, timezone

    moment = datetime.fromisoformat(str(text))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def time_of_day_axis(ax, run_dir: Path, start=None) -> bool:
    """Label ``ax``'s x axis (virtual seconds) as time of day when the run has ``clock.start_time``:
    ticks on whole clock steps (1, 5, 10, 15, 30 min, 1, 2, 3, 6, 12 or 24 h: at most about 12 ticks),
    labelled HH:MM in the offset start_time names (UTC by default), with the day under midnight.
    Call it after the data are drawn (it reads the axis limits)."""
    start = start if start is not None else run_start(run_dir)
    if start is None:
        return False
    from datetime import timedelta

    from matplotlib.ticker import FuncFormatter, MultipleLocator

    lo, hi = ax.get_xlim()
    span = max(hi - lo, 1e-9)
    steps = (60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
    step = next((h for h in steps if span / h <= 12), 86400 * math.ceil(span / 86400 / 12))
    of_day = start.hour * 3600 + start.minute * 60 + start.second + start.microsecond / 1e6
    ax.xaxis.set_major_locator(MultipleLocator(step, offset=-(of_day % step)))  # ticks on whole clock steps

    def label(x: float, _pos) -> str:
        moment = start + timedelta(seconds=x)
        if moment.hour == 0 and moment.minute == 0:  # midnight: name the day
            return moment.strftime("%H:%M\n%a %d %b")
        return moment.strftime("%H:%M")

    ax.xaxis.set_major_formatter(FuncFormatter(label))
    zone = start.strftime("%z")
    zone = "UTC" if zone in ("+0000", "") else f"UTC{zone[:3]}:{zone[3:]}"
    ax.set_xlabel(f"time of day ({zone}); virtual second 0 = {start.strftime('%Y-%m-%d %H:%M')}")
    return True


def draw_progress(run_dir: Path) -> tuple[str, Figure]:
    """``accuracy_vs_time.png``, or ``updates_vs_time.png`` for a run without any accuracy
    (``timing_only``): the file name and the figure."""
    metrics = read_table(run_dir / "metrics.csv")
    metrics = metrics[metrics["test_accuracy"].notna()] if "test_accuracy" in metrics else metrics.iloc[:0]
    if not len(metrics) and (run_dir / "rounds.csv").is_file():
        return "updates_vs_time.png", draw_timing(run_dir)
    return "accuracy_vs_time.png", draw_accuracy(run_dir)


def plot_accuracy_vs_time(run_dir: Path) -> Path:
    """Draw :func:`draw_progress`'s figure into the run directory; returns its path."""
    name, fig = draw_progress(run_dir)
    fig.savefig(run_dir / name, dpi=120)
    return run_dir / name


def draw_accuracy(run_dir: Path) -> Figure:
    """Test accuracy against virtual wall-clock seconds (left) and against rounds (right)."""
    metrics = read_table(run_dir / "metrics.csv")
    rows = metrics[metrics["test_accuracy"].notna()] if "test_accuracy" in metrics else metrics.iloc[:0]
    fig = Figure(figsize=(10, 4), layout="constrained")
    (ax_time, ax_round) = fig.subplots(1, 2)
    accuracy = rows["test_accuracy"].to_numpy(dtype=float) if len(rows) else np.array([])
    if len(rows):
        marker = "." if len(rows) <= MARKERS_UP_TO else None
        ax_time.plot(rows["time"].to_numpy(dtype=float), accuracy, marker=marker, lw=1.5)
        ax_round.plot(rows["round"].to_numpy(dtype=float), accuracy, marker=marker, lw=1.5, color="C1")
    ax_time.set_xlabel("virtual wall-clock time (s)")
    ax_round.set_xlabel("aggregations (rounds / versions)")
    for ax in (ax_time, ax_round):
        ax.set_ylabel("test accuracy")
        ax.set_ylim(*accuracy_limits(accuracy))
        ax.grid(alpha=0.3)
    time_of_day_axis(ax_time, run_dir)
    fig.suptitle(run_title(run_dir))
    return fig


FAILURES = (
    ("failed_offline", "offline"), ("failed_battery", "battery"), ("failed_deadline", "deadline"),
    ("failed_charging", "not charging"), ("failed_network", "left unmetered network"),
)  # fmt: skip


def draw_timing(run_dir: Path) -> Figure:
    """Timing-only runs: updates received and failed per aggregation (left), and the virtual length
    of every round / interval between async aggregations (right), both against virtual time (as
    time of day when the run has ``clock.start_time``).  A day of 5-minute rounds is thousands of
    points: then lines without markers, so that the shape stays readable."""
    rounds = read_table(run_dir / "rounds.csv")
    fig = Figure(figsize=(11, 4), layout="constrained")
    (ax_updates, ax_length) = fig.subplots(1, 2, sharex=True)
    if len(rounds):
        t = rounds["time"].to_numpy(dtype=float)
        many = len(rounds) > MARKERS_UP_TO
        style = {"marker": None, "lw": 0.7} if many else {"marker": ".", "lw": 1.5}
        ax_updates.plot(t, rounds["received"].to_numpy(dtype=float), label="received", **style)
        for key, label in FAILURES:
            if key in rounds and rounds[key].any():
                ax_updates.plot(t, rounds[key].to_numpy(dtype=float), label=f"failed: {label}", **style)
        ax_updates.legend(fontsize="small")
        lengths = t - rounds["started"].to_numpy(dtype=float)
        ax_length.plot(t, lengths, color="k", **style)
        for ax in (ax_updates, ax_length):
            ax.set_xlabel("virtual wall-clock time (s), at each aggregation")
            time_of_day_axis(ax, run_dir)
        ax_length.set_title(f"{len(rounds):,} aggregations", fontsize="medium")
    else:
        for ax in (ax_updates, ax_length):
            ax.text(0.5, 0.5, "no aggregation happened", ha="center", va="center", transform=ax.transAxes)
            ax.set_xlabel("virtual wall-clock time (s)")
    ax_updates.set_ylabel("updates per aggregation")
    ax_length.set_ylabel("virtual s since the previous aggregation")
    for ax in (ax_updates, ax_length):
        ax.grid(alpha=0.3)
    fig.suptitle(f"{run_title(run_dir)}, timing only")
    return fig
