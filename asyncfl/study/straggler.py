"""Figures of one run, drawn from its run directory alone (see :mod:`asyncfl.study.timeline` for
the files they read; none re-parses events.jsonl).

``accuracy_vs_time.png`` test accuracy against virtual time and rounds (``updates_vs_time.png`` when
                         timing only), see :mod:`asyncfl.plots`
``timeline.png``         per-client timeline (download / compute / upload / offline / failed) for a
                         readable subset of the recorded clients, spread over the range of device speeds
``staleness.png``        histogram of the staleness of every aggregated update
``participation.png``    delivered updates against device speed, and the outcome of attempts by
                         speed group
``client_accuracy.png``  distribution of the final model's accuracy over clients, with FedAR's
                         Table 3 statistics (in %, also in ``client_accuracy.csv`` and ``.md``)
``time_breakdown.png``   where virtual time went (downloading, computing, uploading, idle, offline)
                         per speed group, from clients.csv
``timezones.png``        delivered updates per hour by the clients' time zone (``population.timezones``),
                         from updates.csv, rounds.csv and clients.csv
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # (object API: no pyplot, no global backend)
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from asyncfl.config import ConfigError
from asyncfl.plots import draw_progress, run_label, run_start, run_title, time_of_day_axis
from asyncfl.run_files import read_table
from asyncfl.study.aggregate import bias_stats
from asyncfl.study.tables import write_csv, write_markdown
from asyncfl.study.timeline import (
    NotRecorded,
    aggregation_times,
    offline_periods,
    task_segments,
    timeline_clients,
    update_staleness,
)

COLORS = {"download": "#4c72b0", "compute": "#dd8452", "upload": "#55a868", "offline": "#c8c8c8", "failed": "#c44e52"}
FAIL_MARKERS = {"offline": "x", "battery": "v", "deadline": "|", "charging": "^", "network": "s"}
TIMELINE_CLIENTS = 16  # rows in the timeline by default (of results.TIMELINE_SAMPLE recorded)
TIMELINE_AGGREGATIONS = 30  # default window: up to this many aggregations


def render_run_figures(
    run_dir: Path, window: tuple[float, float | None] | None = None, clients=None, timeline_name: str = "timeline.png"
) -> list[Path]:
    """Every figure whose data the run directory holds; returns the files written.  Every figure is
    drawn before any file is written, so a damaged file (a ConfigError naming it and the line) leaves
    every figure as it was rather than some redrawn and some stale.  A figure whose files an older
    run directory lacks is skipped with a note on stderr.  ``window`` and ``clients``: see
    :func:`draw_timeline`, which is written to ``timeline_name``."""
    if clients is not None:
        try:
            _timeline_rows(run_dir, {}, clients)  # a bad --clients fails before anything is drawn
        except NotRecorded:
            pass  # said below, when the timeline is skipped
    figures: dict[str, Figure] = dict([draw_progress(run_dir)])
    draws = (
        (timeline_name, lambda: draw_timeline(run_dir, window, clients)),
        ("staleness.png", lambda: draw_staleness(run_dir)),
        ("participation.png", lambda: draw_participation(run_dir)),
        ("client_accuracy.png", lambda: draw_client_accuracy(run_dir)),
        ("time_breakdown.png", lambda: draw_time_breakdown(run_dir)),
        ("timezones.png", lambda: draw_timezones(run_dir)),
    )
    for name, draw in draws:
        try:
            fig = draw()
        except NotRecorded as missing:
            print(f"note: {missing}", file=sys.stderr)
            continue
        if fig is not None:
            figures[name] = fig
    if "client_accuracy.png" in figures:
        write_client_accuracy_tables(run_dir)
    title = run_title(run_dir)
    return [_save(fig, run_dir / name, title) for name, fig in figures.items()]


def timeline_file(window: str | None, clients: str | None) -> str:
    """Where ``plot --window/--clients`` writes the timeline: beside timeline.png (the default view,
    kept), named after the options, e.g. ``timeline_100-400.png``, ``timeline_1000-end_8clients.png``."""
    if window is None and clients is None:
        return "timeline.png"
    name = "timeline"
    if window is not None:
        lo, hi = parse_window(window)
        name += f"_{lo:g}-{'end' if hi is None else f'{hi:g}'}"
    if clients is not None:
        rows = parse_clients(clients)
        name += f"_{rows}clients" if isinstance(rows, int) else "_clients" + "-".join(map(str, rows))
    return f"{name}.png"


def parse_window(text: str | None) -> tuple[float, float | None] | None:
    """``--window START:END`` in virtual seconds; either end may be left out (``:500``, ``1000:``)."""
    if text is None:
        return None
    problem = (
        f"--window {text}: expected START:END in virtual seconds with 0 <= START < END, e.g. 100:400, :500 or 1000:."
    )
    start, sep, end = text.partition(":")
    try:
        lo, hi = float(start or 0), (float(end) if end else None)
    except ValueError:
        raise ConfigError(problem) from None
    if not sep or not math.isfinite(lo) or lo < 0 or (hi is not None and not lo < hi < math.inf):
        raise ConfigError(problem)
    return lo, hi


def parse_clients(text: str | None) -> int | list[int] | None:
    """``--clients N`` (how many recorded clients, spread over speeds) or ``--clients 3,17,40`` (which)."""
    if text is None:
        return None
    problem = f"--clients {text}: expected a count (e.g. 8) or a comma-separated list of client ids (e.g. 3,17,40)."
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise ConfigError(problem) from None
    if any(v < (1 if len(values) == 1 else 0) for v in values):
        raise ConfigError(problem)
    return values[0] if "," not in text else list(dict.fromkeys(values))


def _clients(run_dir: Path) -> pd.DataFrame:
    path = run_dir / "clients.csv"
    return read_table(path) if path.is_file() else pd.DataFrame()


def spread_by_speed(speed: dict[int, float], count: int) -> list[int]:
    """Up to ``count`` of the clients in ``speed`` at evenly spaced ranks of device speed, fastest first."""
    ranked = sorted((v, c) for c, v in speed.items())
    if len(ranked) > count:
        ranked = [ranked[round(i)] for i in np.linspace(0, len(ranked) - 1, count)]
    return [c for _, c in reversed(ranked)]


def _timeline_rows(run_dir: Path, speed: dict[int, float], clients: int | list[int] | None) -> list[int]:
    recorded = timeline_clients(run_dir)
    if isinstance(clients, list):
        unknown = [c for c in clients if c not in recorded]
        if unknown:
            raise ConfigError(
                f"--clients: client(s) {', '.join(map(str, unknown))} are not on this run's timeline; it recorded "
                f"the tasks of clients {', '.join(map(str, recorded))} (spread over device speeds)."
            )
        return sorted(clients, key=lambda c: -speed.get(c, 0.0))
    count = TIMELINE_CLIENTS if clients is None else clients
    if clients is not None and count > len(recorded):
        raise ConfigError(f"--clients {count}: this run recorded the tasks of {len(recorded)} clients; ask for fewer.")
    return spread_by_speed({c: speed.get(c, math.nan) for c in recorded}, count)


def draw_timeline(
    run_dir: Path, window: tuple[float, float | None] | None = None, clients: int | list[int] | None = None
) -> Figure | None:
    """Timeline of the recorded clients' tasks.  ``window``: (start, end) virtual seconds (end None:
    the last recorded moment; default: from 0 to the 30th aggregation).  ``clients``: how many of the
    recorded clients (default 16) or which ones."""
    timeline_clients(run_dir)  # names every file an older run directory lacks
    segments, failures = task_segments(run_dir)
    if not segments and not failures:
        return None
    table = _clients(run_dir)
    speed = dict(zip(table["client"].astype(int), table["samples_per_s"].astype(float))) if len(table) else {}
    chosen = _timeline_rows(run_dir, speed, clients)
    aggregations = aggregation_times(run_dir)
    last = max([s.end for s in segments] + [f.time for f in failures] + aggregations)
    if window is None:
        start = 0.0
        until = aggregations[TIMELINE_AGGREGATIONS - 1] if len(aggregations) >= TIMELINE_AGGREGATIONS else last
        until = max(until, start + 1.0)  # a run that ended at once (nobody could work) still gets an axis
    else:
        start, until = window[0], window[1] if window[1] is not None else last
        if start >= until:
            raise ConfigError(f"--window {start:g}:: the run's records end at {last:,.1f} virtual s; start earlier.")
    offline = offline_periods(run_dir)
    row = {c: i for i, c in enumerate(chosen)}
    fig = Figure(figsize=(11, 0.42 * len(chosen) + 1.6), layout="constrained")
    ax = fig.subplots()
    for c in chosen:
        spans = [(a, b - a) for a, b in offline.get(c, []) if b > start and a < until]
        ax.broken_barh(spans, (row[c] - 0.4, 0.8), color=COLORS["offline"], lw=0)
    bars: dict[tuple[int, str], list[tuple[float, float]]] = {}  # one collection per row and colour
    for s in segments:
        if s.client in row and s.start < until and s.end > start:
            bars.setdefault((s.client, "failed" if s.failed else s.phase), []).append((s.start, s.end - s.start))
    for (client, kind), spans in bars.items():
        ax.broken_barh(spans, (row[client] - 0.3, 0.6), color=COLORS[kind], lw=0)
    for reason, marker in FAIL_MARKERS.items():
        pts = [
            (f.time, row[f.client])
            for f in failures
            if f.reason == reason and f.client in row and start <= f.time <= until
        ]
        if pts:
            ax.scatter(*zip(*pts), marker=marker, color="black", s=36, zorder=3, label=f"failed: {reason}")
    for t in aggregations:
        if start <= t <= until:
            ax.axvline(t, color="0.5", lw=0.5, alpha=0.5, zorder=0)
    ax.set_yticks(range(len(chosen)), [f"client {c} ({speed.get(c, math.nan):.0f} samples/s)" for c in chosen])
    ax.set_ylim(len(chosen) - 0.5, -0.5)  # fastest on top
    ax.set_xlim(start, until)
    ax.set_xlabel("virtual time (s); grey vertical lines: aggregations")
    if time_of_day_axis(ax, run_dir):
        ax.set_xlabel(f"{ax.get_xlabel()}; grey vertical lines: aggregations")
    legend = [Patch(color=COLORS[k], label=k) for k in ("download", "compute", "upload")]
    legend += [
        Patch(color=COLORS["failed"], label="work lost (task failed)"),
        Patch(color=COLORS["offline"], label="offline"),
        Patch(facecolor="white", edgecolor="0.6", label="idle (online, no task)"),
    ]
    handles = legend + ax.get_legend_handles_labels()[0]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8, frameon=False)
    ax.set_title(f"{run_label(run_dir)}: {len(chosen)} clients by speed, virtual s {start:,.0f} to {until:,.0f}")
    return fig


def draw_staleness(run_dir: Path) -> Figure | None:
    """Histogram of the staleness of every aggregated update; none when every update is fresh
    (tau = 0: a sync run whose late updates are dropped), as one bar would say nothing."""
    tau = update_staleness(run_dir)
    if not len(tau) or not tau.any():
        return None
    counts = np.bincount(tau)  # one bar per staleness value: 10^6 updates cost no more than 10
    fig = Figure(figsize=(6, 4), layout="constrained")
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
    return fig


def draw_participation(run_dir: Path) -> Figure | None:
    clients = _clients(run_dir)
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
    clients = _clients(run_dir)
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
    clients = _clients(run_dir)
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
    clients = _clients(run_dir)
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


def _save(fig, path: Path, title: str) -> Path:
    fig.savefig(path, dpi=120, metadata={"Title": title})  # the PNG says which run it shows
    return path
