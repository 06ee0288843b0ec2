"""Straggler-study figures of one run, drawn from its run directory alone.

``timeline.png``         per-client timeline (download / compute / upload / offline / failed) for a
                         readable subset of clients, spread over the range of device speeds
``staleness.png``        histogram of the staleness of every aggregated update
``participation.png``    delivered updates against device speed, and the outcome of attempts by
                         speed quintile
``client_accuracy.png``  distribution of the final model's accuracy over clients, with FedAR's
                         Table 3 statistics (also in ``client_accuracy.csv`` and ``.md``)
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

from asyncfl.results import read_csv  # noqa: E402
from asyncfl.study.aggregate import bias_stats, client_accuracies  # noqa: E402
from asyncfl.study.tables import write_csv, write_markdown  # noqa: E402
from asyncfl.study.timeline import (  # noqa: E402
    aggregation_times,
    offline_intervals,
    read_events,
    task_segments,
    update_staleness,
)

COLORS = {"download": "#4c72b0", "compute": "#dd8452", "upload": "#55a868", "offline": "#c8c8c8", "failed": "#c44e52"}
FAIL_MARKERS = {"offline": "x", "battery": "v", "deadline": "|"}
TIMELINE_CLIENTS = 16  # rows in the timeline
TIMELINE_AGGREGATIONS = 30  # default window: up to this many aggregations


def render_run_figures(run_dir: Path) -> list[Path]:
    """Every straggler figure whose data the run directory holds; returns the files written."""
    out = []
    for draw in (plot_timeline, plot_staleness, plot_participation, plot_client_accuracy):
        path = draw(run_dir)
        if path is not None:
            out.append(path)
    return out


def _clients(run_dir: Path) -> list[dict[str, str]]:
    path = run_dir / "clients.csv"
    return read_csv(path) if path.is_file() else []


def timeline_subset(clients: list[dict[str, str]], logged: set[int], count: int = TIMELINE_CLIENTS) -> list[int]:
    """Up to ``count`` logged clients at evenly spaced ranks of device speed, fastest first."""
    ranked = sorted((float(c["samples_per_s"]), int(c["client"])) for c in clients if int(c["client"]) in logged)
    if len(ranked) > count:
        ranked = [ranked[round(i)] for i in np.linspace(0, len(ranked) - 1, count)]
    return [cid for _, cid in reversed(ranked)]


def plot_timeline(run_dir: Path, until: float | None = None) -> Path | None:
    events = read_events(run_dir)
    segments, failures = task_segments(events)
    if not segments and not failures:
        return None
    clients = _clients(run_dir)
    speed = {int(c["client"]): float(c["samples_per_s"]) for c in clients}
    chosen = timeline_subset(clients, {s.client for s in segments} | {f.client for f in failures})
    aggregations = aggregation_times(events)
    if until is None:
        end = max(s.end for s in segments) if segments else max(f.time for f in failures)
        until = aggregations[TIMELINE_AGGREGATIONS - 1] if len(aggregations) >= TIMELINE_AGGREGATIONS else end
    offline = offline_intervals(run_dir, chosen, until)
    row = {c: i for i, c in enumerate(chosen)}
    fig, ax = plt.subplots(figsize=(11, 0.42 * len(chosen) + 1.6), layout="constrained")
    for c, spans in offline.items():
        ax.broken_barh([(s, e - s) for s, e in spans], (row[c] - 0.4, 0.8), color=COLORS["offline"], lw=0)
    for s in segments:
        if s.client in row and s.start < until:
            color = COLORS["failed" if s.failed else s.phase]
            ax.broken_barh([(s.start, s.end - s.start)], (row[s.client] - 0.3, 0.6), color=color, lw=0)
    for reason, marker in FAIL_MARKERS.items():
        pts = [(f.time, row[f.client]) for f in failures if f.reason == reason and f.client in row and f.time <= until]
        if pts:
            ax.scatter(*zip(*pts), marker=marker, color="black", s=36, zorder=3, label=f"failed: {reason}")
    for t in aggregations:
        if t <= until:
            ax.axvline(t, color="0.5", lw=0.5, alpha=0.5, zorder=0)
    ax.set_yticks(range(len(chosen)), [f"client {c} ({speed.get(c, math.nan):.0f} samples/s)" for c in chosen])
    ax.invert_yaxis()
    ax.set_xlim(0, until)
    ax.set_xlabel("virtual time (s); grey vertical lines: aggregations")
    legend = [Patch(color=COLORS[k], label=k) for k in ("download", "compute", "upload")]
    legend += [
        Patch(color=COLORS["failed"], label="work lost (task failed)"),
        Patch(color=COLORS["offline"], label="offline"),
        Patch(facecolor="white", edgecolor="0.6", label="idle (online, no task)"),
    ]
    handles = legend + ax.get_legend_handles_labels()[0]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8, frameon=False)
    ax.set_title(f"{_title(run_dir)}: {len(chosen)} clients by speed, first {until:,.0f} virtual s")
    return _save(fig, run_dir / "timeline.png")


def plot_staleness(run_dir: Path) -> Path | None:
    events = read_events(run_dir)
    rounds_path = run_dir / "rounds.csv"
    if not events or not rounds_path.is_file():
        return None
    tau = update_staleness(events, read_csv(rounds_path))
    if not tau:
        return None
    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    top = max(tau)
    ax.hist(tau, bins=np.arange(-0.5, top + 1.5, 1), color="#4c72b0", edgecolor="white")
    mean = float(np.mean(tau))
    ax.axvline(mean, color="black", ls="--", lw=1, label=f"mean {mean:.2f}")
    ax.set_xlabel("staleness τ of an aggregated update (versions)")
    ax.set_ylabel("updates")
    ax.set_xlim(-0.5, max(top, 1) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend()
    ax.set_title(f"{_title(run_dir)}: {len(tau)} updates, max τ = {top}")
    return _save(fig, run_dir / "staleness.png")


def plot_participation(run_dir: Path) -> Path | None:
    clients = _clients(run_dir)
    if not clients:
        return None
    speed = np.array([float(c["samples_per_s"]) for c in clients])
    delivered = np.array([int(c["participations"]) for c in clients])
    p = np.array([float(c["availability_p"]) if c["availability_p"] != "" else math.nan for c in clients])
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    varied = np.isfinite(p).all() and np.ptp(p) > 0
    speed_shown = _spread_ties(speed)
    if varied:
        dots = left.scatter(speed_shown, delivered, c=p, cmap="viridis", s=24, edgecolor="none")
        fig.colorbar(dots, ax=left, label="availability p (long-run fraction online)")
    else:
        left.scatter(speed_shown, delivered, color="#4c72b0", s=24, edgecolor="none")
    left.set_xscale("log")
    left.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    left.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    left.xaxis.set_minor_formatter(NullFormatter())
    left.yaxis.set_major_locator(MaxNLocator(integer=True))
    left.set_xlabel("device speed (samples/s, log scale; equal speeds spread apart)")
    left.set_ylabel("delivered updates")
    left.grid(alpha=0.3)
    _outcomes_by_speed(right, clients, speed)
    fig.suptitle(f"{_title(run_dir)}: participation against device speed")
    return _save(fig, run_dir / "participation.png")


def _outcomes_by_speed(ax, clients: list[dict[str, str]], speed: np.ndarray) -> None:
    """Stacked share of attempts per outcome, clients grouped by speed (slowest left): one group per
    distinct speed when there are at most five (speed tiers), speed quintiles otherwise."""
    distinct = np.unique(speed)
    if len(distinct) <= 5:
        groups = [np.nonzero(speed == v)[0] for v in distinct]
        names = [f"{v:g}\n({len(g)} clients)" for v, g in zip(distinct, groups)]
    else:
        groups = np.array_split(np.argsort(speed, kind="stable"), 5)
        names = [f"{speed[g].min():.0f}-{speed[g].max():.0f}\n({len(g)} clients)" for g in groups]
    outcomes = ("participations", "failed_offline", "failed_battery", "failed_deadline")
    labels = ("delivered", "failed: offline", "failed: battery", "failed: deadline")
    colors = ("#55a868", COLORS["offline"], "#8172b2", COLORS["failed"])
    bottom = np.zeros(len(groups))
    for key, label, color in zip(outcomes, labels, colors):
        counts = np.array([sum(int(clients[i][key]) for i in g) for g in groups], dtype=float)
        attempts = np.array([sum(int(clients[i]["attempts"]) for i in g) for g in groups], dtype=float)
        share = np.divide(counts, attempts, out=np.zeros_like(counts), where=attempts > 0)
        ax.bar(range(len(groups)), share, bottom=bottom, color=color, label=label)
        bottom += share
    ax.set_xticks(range(len(groups)), names)
    ax.set_xlabel("speed group (samples/s), slowest to fastest")
    ax.set_ylabel("share of attempts (rest: still running)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)


def _spread_ties(speed: np.ndarray) -> np.ndarray:
    """Clients of one speed tier side by side (within +-6 %) instead of on top of each other."""
    out = speed.astype(np.float64).copy()
    for v in np.unique(speed):
        idx = np.nonzero(speed == v)[0]
        if len(idx) > 1:
            out[idx] = v * np.exp(np.linspace(-0.06, 0.06, len(idx)))
    return out


def plot_client_accuracy(run_dir: Path) -> Path | None:
    accuracies = [a for a in client_accuracies(run_dir) if not math.isnan(a)]
    stats = bias_stats(accuracies)
    if not stats:
        return None
    write_csv(run_dir / "client_accuracy.csv", [stats])
    write_markdown(run_dir / "client_accuracy.md", [bias_table_row(_title(run_dir), stats)])
    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    ax.hist(np.array(accuracies) * 100, bins=np.linspace(0, 100, 21), color="#4c72b0", edgecolor="white")
    lines = (("mean", "mean", "-"), ("worst10_mean", "worst 10 %", "--"), ("best10_mean", "best 10 %", ":"))
    for key, label, style in lines:
        ax.axvline(stats[key], color="black", ls=style, lw=1.2, label=f"{label}: {stats[key]:.1f} %")
    ax.set_xlabel("accuracy of the final global model on the client's local test data (%)")
    ax.set_ylabel("clients")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(f"{_title(run_dir)}: {stats['clients']} clients, variance {stats['var']:.1f} %²")
    return _save(fig, run_dir / "client_accuracy.png")


def bias_table_row(label: str, stats: dict[str, float]) -> dict[str, str]:
    """One row of FedAR's Table 3 layout: Mean (%) +- std, Var, Worst 10 %, Best 10 %."""
    return {
        "run": label,
        "Mean (%)": f"{stats['mean']:.1f} ± {stats['std']:.1f}",
        "Var": f"{stats['var']:.1f}",
        "Worst 10%": f"{stats['worst10_mean']:.1f} ± {stats['worst10_std']:.1f}",
        "Best 10%": f"{stats['best10_mean']:.1f} ± {stats['best10_std']:.1f}",
    }


def _title(run_dir: Path) -> str:
    parts = run_dir.resolve().parts
    if parts[-1].startswith("seed") and len(parts) >= 2:
        return f"{parts[-2]} {parts[-1]}"
    return parts[-1]


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
