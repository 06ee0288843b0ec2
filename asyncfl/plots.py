"""Figures of a run, drawn from the files in its run directory (so they can be re-rendered later)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import yaml
from matplotlib.figure import Figure  # the object API: no pyplot, no global backend to switch (PNGs via Agg)

from asyncfl.results import read_csv


def _floats(rows: list[dict[str, str]], key: str) -> list[float]:
    return [float(r[key]) if r[key] != "" else float("nan") for r in rows]


def accuracy_limits(values: Sequence[float]) -> tuple[float, float]:
    """y range for accuracies: the data's range plus 5 % of it each side (at least 0.02), kept in
    [0, 1], so that the part of the curve that moves is not squashed into a band of a 0-1 axis."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    pad = max(0.05 * (hi - lo), 0.02)
    return max(0.0, lo - pad), min(1.0, hi + pad)


def run_title(run_dir: Path, name: str | None = None) -> str:
    """``name: algorithm (mode, K)``, from the run's config.yaml; ``name`` defaults to the scenario's."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        return name or run_dir.name
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    server = config.get("server", {})
    mode = server.get("mode", "sync")
    detail = f"k_async, K={server.get('k')}" if mode == "k_async" else mode
    return f"{name or config.get('name', run_dir.name)}: {config.get('algorithm', {}).get('name', '?')} ({detail})"


def run_start(run_dir: Path):
    """The run's ``clock.start_time`` as a datetime in the offset it names (UTC when it names none),
    or None when the run has no time of day."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        return None
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    text = (config.get("clock") or {}).get("start_time")
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


def plot_accuracy_vs_time(run_dir: Path, title: str | None = None) -> Path:
    """Test accuracy against virtual wall-clock seconds (and against rounds, on a second axis below).

    A run without any accuracy (``timing_only``) gets :func:`plot_timing` instead; the path of the
    figure drawn is returned either way."""
    rows = [r for r in read_csv(run_dir / "metrics.csv") if r["test_accuracy"] != ""]
    if not rows and (run_dir / "rounds.csv").is_file():
        return plot_timing(run_dir, title)
    out = run_dir / "accuracy_vs_time.png"
    fig = draw_accuracy(run_dir, rows, title)
    fig.savefig(out, dpi=120)
    return out


def draw_accuracy(run_dir: Path, rows: list[dict[str, str]], title: str | None = None) -> Figure:
    fig = Figure(figsize=(10, 4), layout="constrained")
    (ax_time, ax_round) = fig.subplots(1, 2)
    accuracy = _floats(rows, "test_accuracy")
    if rows:
        ax_time.plot(_floats(rows, "time"), accuracy, marker=".", lw=1.5)
        ax_round.plot(_floats(rows, "round"), accuracy, marker=".", lw=1.5, color="C1")
    ax_time.set_xlabel("virtual wall-clock time (s)")
    ax_round.set_xlabel("aggregations (rounds / versions)")
    for ax in (ax_time, ax_round):
        ax.set_ylabel("test accuracy")
        ax.set_ylim(*accuracy_limits(accuracy))
        ax.grid(alpha=0.3)
    time_of_day_axis(ax_time, run_dir)
    fig.suptitle(run_title(run_dir, title))
    return fig


FAILURES = (
    ("failed_offline", "offline"), ("failed_battery", "battery"), ("failed_deadline", "deadline"),
    ("failed_charging", "not charging"), ("failed_network", "left unmetered network"),
)  # fmt: skip


def plot_timing(run_dir: Path, title: str | None = None) -> Path:
    """Timing-only runs: updates received and failed per aggregation against virtual time (left), and
    the virtual length of every round / interval between async aggregations (right)."""
    rows = read_csv(run_dir / "rounds.csv")
    out = run_dir / "updates_vs_time.png"
    fig = Figure(figsize=(10, 4), layout="constrained")
    (ax_updates, ax_length) = fig.subplots(1, 2)
    if rows:
        t = _floats(rows, "time")
        ax_updates.plot(t, _floats(rows, "received"), marker=".", lw=1.5, label="received")
        for key, label in FAILURES:
            if key not in rows[0]:
                continue
            values = _floats(rows, key)
            if any(values):
                ax_updates.plot(t, values, marker=".", lw=1, label=f"failed: {label}")
        ax_updates.legend(fontsize="small")
        lengths = [end - start for end, start in zip(t, _floats(rows, "started"))]
        ax_length.plot(_floats(rows, "round"), lengths, marker=".", lw=1.5, color="k")
    else:
        for ax in (ax_updates, ax_length):
            ax.text(0.5, 0.5, "no aggregation happened", ha="center", va="center", transform=ax.transAxes)
    ax_updates.set_xlabel("virtual wall-clock time (s)")
    if rows:
        time_of_day_axis(ax_updates, run_dir)
    ax_updates.set_ylabel("updates per aggregation")
    ax_length.set_xlabel("aggregations (rounds / versions)")
    ax_length.set_ylabel("virtual s since the previous aggregation")
    for ax in (ax_updates, ax_length):
        ax.grid(alpha=0.3)
    fig.suptitle(f"{run_title(run_dir, title)}, timing only")
    fig.savefig(out, dpi=120)
    return out
