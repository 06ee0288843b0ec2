"""The run figures drawn from clients.csv (see :mod:`asyncfl.study.straggler` for the others):
participation against device speed, where virtual time went per speed group, participation by time
zone, and the final model's accuracy over clients with FedAR's Table 3 statistics."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # (object API: no pyplot, no global backend)
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from asyncfl.plots import run_label, run_start, time_of_day_axis
from asyncfl.run_files import read_table
from asyncfl.study.aggregate import bias_stats
from asyncfl.study.tables import write_csv, write_markdown

COLORS = {"download": "#4c72b0", "compute": "#dd8452", "upload": "#55a868", "offline": "#c8c8c8", "failed": "#c44e52"}


def read_clients(run_dir: Path) -> pd.DataFrame:
    """clients.csv (an empty table when the run directory has none)."""
    path = run_dir / "clients.csv"
    return read_table(path) if path.is_file() else pd.DataFrame()


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
    speed_shown = _spread_ties(speed)
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


BREAKDOWN = (
    ("download_s", "downloading", COLORS["download"]),
    ("compute_s", "computing, kept (update delivered or still running)", COLORS["compute"]),
    ("lost_compute_s", "computing, thrown away (task failed)", COLORS["failed"]),
    ("upload_s", "uploading", COLORS["upload"]),
    ("idle_s", "idle (online, no task)", "#f0e6b8"),
    ("offline_s", "offline / not eligible", COLORS["offline"]),
)
TIME_COLUMNS = ("download_s", "compute_s", "upload_s", "idle_s", "offline_s")  # clients.csv: they add up to the run


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


def draw_time_breakdown(run_dir: Path) -> Figure | None:
    """Mean share of the run each speed group spent downloading, computing (the part of it whose
    task then failed apart, in red: work thrown away), uploading, idle and offline (clients.csv's time
    columns, which add up to the run's virtual length per client), and the same in virtual seconds
    per client on the right axis."""
    clients = read_clients(run_dir)
    if not len(clients) or any(key not in clients for key in TIME_COLUMNS):
        return None  # a run directory from before these columns
    speed = clients["samples_per_s"].to_numpy(dtype=float)
    groups, names = speed_groups(speed)
    seconds = {key: clients[key].to_numpy(dtype=float) for key in TIME_COLUMNS}
    length = float(np.median(sum(seconds.values())))
    if not length > 0:
        return None
    parts = BREAKDOWN
    if "lost_compute_s" in clients:  # computing: what was kept apart from what was thrown away
        seconds["lost_compute_s"] = clients["lost_compute_s"].to_numpy(dtype=float)
        seconds["compute_s"] = seconds["compute_s"] - seconds["lost_compute_s"]
    else:  # a run directory from before lost_compute_s: computing as one part
        parts = [(key, "computing", color) if key == "compute_s" else (key, label, color)
                 for key, label, color in BREAKDOWN if key != "lost_compute_s"]  # fmt: skip
    fig = Figure(figsize=(10, 4.4), layout="constrained")
    ax = fig.subplots()
    bottom = np.zeros(len(groups))
    for key, label, color in parts:
        share = np.array([seconds[key][g].mean() / length for g in groups])
        ax.bar(range(len(groups)), share, bottom=bottom, color=color, label=label, edgecolor="white", lw=0.5)
        for i, (b, v) in enumerate(zip(bottom, share)):
            if v >= 0.06:
                ax.text(i, b + v / 2, f"{100 * v:.0f}%", ha="center", va="center", fontsize=8)
        bottom += share
    ax.set_xticks(range(len(groups)), names, fontsize=8)
    ax.set_xlabel("speed group (samples/s), slowest to fastest")
    ax.set_ylabel("share of the run (mean over the group's clients)")
    ax.set_ylim(0, 1)
    right = ax.secondary_yaxis("right", functions=(lambda f: f * length, lambda s: s / length))
    right.set_ylabel("virtual seconds per client")
    fig.legend(fontsize=8, loc="outside right center", frameon=False)
    ax.set_title(f"{run_label(run_dir)}: where {length:,.0f} virtual s went, per speed group")
    return fig


def draw_timezones(run_dir: Path) -> Figure | None:
    """Delivered (aggregated) updates per hour of virtual time, one line per client time zone (up to
    six, the most populous; the others pooled), x axis as time of day when the run has a start time:
    the waves of a diurnal population, shifted by the zones' offsets."""
    clients = read_clients(run_dir)
    if not len(clients) or "utc_offset_h" not in clients or not (run_dir / "updates.csv").is_file():
        return None
    rounds, updates = read_table(run_dir / "rounds.csv"), read_table(run_dir / "updates.csv")
    if not len(rounds) or not len(updates):
        return None
    times = rounds.set_index("round")["time"]
    offsets = clients.set_index("client")["utc_offset_h"]
    zone = offsets.reindex(updates["client"]).to_numpy(dtype=float)
    t = updates["version"].map(times).to_numpy(dtype=float)
    end = float(times.max())
    bins = np.arange(0.0, end + 3600.0, 3600.0)
    counts = clients["utc_offset_h"].value_counts()
    shown = list(counts.index[:6])
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    ax = fig.subplots()
    for z in sorted(shown):
        hist, _ = np.histogram(t[zone == z], bins=bins)
        n = int(counts[z])
        ax.stairs(hist / n * 1000, bins, lw=1.6, label=f"UTC{z:+g} ({n:,} clients)")
    rest = ~np.isin(zone, shown)
    if rest.any():
        n = int(counts[~counts.index.isin(shown)].sum())
        hist, _ = np.histogram(t[rest], bins=bins)
        ax.stairs(hist / n * 1000, bins, lw=1.2, color="0.5", label=f"other zones ({n:,} clients)")
    ax.set_xlim(0, bins[-1])
    ax.set_xlabel("virtual time (s)")
    time_of_day_axis(ax, run_dir)
    ax.set_ylabel("delivered updates per hour\nper 1,000 clients of the zone")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    start = run_start(run_dir)
    when = "" if start is not None else " (no clock.start_time: virtual second 0 is midnight UTC)"
    ax.set_title(f"{run_label(run_dir)}: participation by client time zone{when}")
    return fig


def _speed(v: float) -> str:
    """A speed as a short tick label: 0.5, 12, 1.5k."""
    return f"{v / 1000:.3g}k" if v >= 1000 else f"{v:.3g}" if v < 10 else f"{v:.0f}"


def _spread_ties(speed: np.ndarray) -> np.ndarray:
    """Clients of one speed tier side by side (within +-6 %, in id order) instead of on top of each
    other; vectorised, as 10^5 clients of distinct speeds are common."""
    _, tier, sizes = np.unique(speed, return_inverse=True, return_counts=True)
    order = np.argsort(tier, kind="stable")
    rank = np.empty(len(speed))
    rank[order] = np.arange(len(speed)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    size = sizes[tier]
    spread = np.where(size > 1, -0.06 + 0.12 * rank / np.maximum(size - 1, 1), 0.0)
    return speed.astype(np.float64) * np.exp(spread)


def _client_accuracies(run_dir: Path) -> tuple[pd.DataFrame, dict[str, float]]:
    """The clients with an accuracy (clients.csv) and FedAR's Table 3 statistics of them (in %)."""
    clients = read_clients(run_dir)
    if "accuracy" not in clients:
        return clients.iloc[:0], {}
    scored = clients[clients["accuracy"].notna()]
    return scored, bias_stats(scored["accuracy"].to_numpy(dtype=float))


def write_client_accuracy_tables(run_dir: Path) -> None:
    """client_accuracy.csv and .md: the statistics in percent, as in FedAR's Table 3."""
    _, stats = _client_accuracies(run_dir)
    write_csv(run_dir / "client_accuracy.csv", [stats])
    write_markdown(run_dir / "client_accuracy.md", [bias_table_row(run_label(run_dir), stats)])


def draw_client_accuracy(run_dir: Path) -> Figure | None:
    """The final model's accuracy over clients in fractions, like every other accuracy axis (left),
    and against the size of each client's local test split (right): a client with 6 test samples
    can only score 0, 1/6, ..., 1, so a spike at 1.0 is often small splits, not good models."""
    scored, stats = _client_accuracies(run_dir)
    if not stats:
        return None
    accuracies = scored["accuracy"].to_numpy(dtype=float)
    sizes = scored["test_samples"].to_numpy(dtype=float) if "test_samples" in scored else None
    fig = Figure(figsize=(11, 4) if sizes is not None else (6, 4), layout="constrained")
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
        right.scatter(_spread_ties(sizes), accuracies, s=14, color="#4c72b0", alpha=0.6, edgecolor="none")
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
