"""Figures of one run, drawn from its run directory alone (see :mod:`asyncfl.study.timeline` for
the files they read; none re-parses events.jsonl); those from clients.csv are drawn by
:mod:`asyncfl.study.client_figures`.

``accuracy_vs_time.png`` test accuracy against virtual time and rounds (``updates_vs_time.png`` when
                         timing only), see :mod:`asyncfl.plots`
``timeline.png``         per-client timeline (download / compute / upload / offline / failed) for a
                         readable subset of the recorded clients, spread over the range of device speeds
``staleness.png``        histogram of the staleness of every aggregated update (none when all are 0)
``participation.png``    delivered updates against device speed, and the outcome of attempts by
                         speed group
``client_accuracy.png``  distribution of the final model's accuracy over clients, with FedAR's
                         Table 3 statistics (in %, also in ``client_accuracy.csv`` and ``.md``)
``time_breakdown.png``   where virtual time went (downloading, computing kept / thrown away,
                         uploading, idle, offline) per speed group, from clients.csv
``timezones.png``        delivered updates per hour by the clients' time zone (``population.timezones``),
                         from updates.csv, rounds.csv and clients.csv
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure  # (object API: no pyplot, no global backend)
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from asyncfl.config import ConfigError
from asyncfl.plots import draw_progress, run_label, run_title, time_of_day_axis
from asyncfl.study.client_figures import (
    COLORS,
    draw_client_accuracy,
    draw_participation,
    draw_time_breakdown,
    draw_timezones,
    read_clients,
    write_client_accuracy_tables,
)
from asyncfl.study.timeline import (
    NotRecorded,
    aggregation_times,
    offline_periods,
    task_segments,
    timeline_clients,
    update_staleness,
)

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
    table = read_clients(run_dir)
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


def _save(fig, path: Path, title: str) -> Path:
    fig.savefig(path, dpi=120, metadata={"Title": title})  # the PNG says which run it shows
    return path
