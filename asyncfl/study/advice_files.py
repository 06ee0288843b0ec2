"""advise's outputs: one row per setting read back from its run directory (the columns are described
in :mod:`asyncfl.sweep.advise`), written as ``advice.csv``, ``advice.md`` and ``advice.png``."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from asyncfl.output.reading import load_table, read_summary
from asyncfl.output.tables import markdown, write_csv
from asyncfl.output.writing import write_atomic

QUARTILES = 4


# ------------------------------------------------------------------ reading the runs


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    if not sorted_values:
        return math.nan
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def speed_quartiles(clients: pd.DataFrame) -> pd.Series:
    """Quartile (0 = slowest) of every client (the index) by rank of samples_per_s (ties: lower id first)."""
    ranked = clients.sort_values(["samples_per_s", "client"])["client"].to_numpy()
    return pd.Series(np.minimum(QUARTILES - 1, np.arange(len(ranked)) * QUARTILES // len(ranked)), index=ranked)


def advice_row(values: dict[str, Any], label: str, run_dir: Path, horizon_s: float) -> dict[str, Any]:
    """One row of advice.csv: the setting's grid ``values`` and what its run directory shows."""
    summary = read_summary(run_dir)
    rounds, updates, clients = (load_table(run_dir / f"{name}.csv") for name in ("rounds", "updates", "clients"))
    hours = summary["virtual_time_s"] / 3600.0
    staleness = sorted(updates["staleness"].astype(float).tolist())
    per_quartile = updates["client"].map(speed_quartiles(clients)).value_counts()
    if "deadline_s" in values and len(rounds) > 1 and rounds["time"].iloc[-1] >= horizon_s * (1 - 1e-12):
        rounds_whole = rounds.iloc[:-1]  # a sync round open at the horizon is closed there, cut short
    else:
        rounds_whole = rounds
    lengths = (rounds_whole["time"] - rounds_whole["started"]).tolist()
    n = len(updates)
    row: dict[str, Any] = dict(values)
    row.update({
        "virtual_time_s": summary["virtual_time_s"], "aggregations": len(rounds), "updates": n,
        "updates_per_hour": n / hours if hours > 0 else math.nan,
        "mean_round_s": statistics.fmean(lengths) if lengths else math.nan,
        **{f"share_q{q + 1}": int(per_quartile.get(q, 0)) / n if n else math.nan for q in range(QUARTILES)},
        "staleness_mean": statistics.fmean(staleness) if staleness else math.nan,
        "staleness_p50": quantile(staleness, 0.5), "staleness_p90": quantile(staleness, 0.9),
        "staleness_max": staleness[-1] if staleness else math.nan,
        "never_heard_share": int((clients["participations"] == 0).sum()) / len(clients) if len(clients) else math.nan,
        "run_dir": label,
    })  # fmt: skip
    return row


# ------------------------------------------------------------------ writing


def write_advice(out: Path, rows: list[dict[str, Any]], horizon_s: float, horizon_from: str) -> list[Path]:
    write_csv(out / "advice.csv", rows, digits=None)
    write_atomic(out / "advice.md", advice_markdown(rows, horizon_s, horizon_from))
    draw_advice(out / "advice.png", rows, horizon_s)
    return [out / "advice.csv", out / "advice.md", out / "advice.png"]


def short_runs(rows: list[dict[str, Any]], horizon_s: float) -> list[dict[str, Any]]:
    """Runs that ended before the horizon (nothing left to happen, e.g. an availability trace ran out)."""
    return [r for r in rows if r["virtual_time_s"] < horizon_s * (1 - 1e-9)]


def _fmt(value: Any, digits: int = 1) -> str:
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:,.{digits}f}"
    return str(value)


def advice_markdown(rows: list[dict[str, Any]], horizon_s: float, horizon_from: str) -> str:
    grid_cols = [c for c in ("deadline_s", "k", "concurrency") if c in rows[0]]
    sync = "deadline_s" in rows[0]
    head = grid_cols + [
        "virtual s",
        "aggregations",
        "updates / virtual h",
        "mean round (s)" if sync else "mean time between aggregations (s)",
        "updates by speed quartile (slowest → fastest, %)",
        "staleness mean / p50 / p90 / max",
        "never heard (%)",
    ]
    table = []
    for r in rows:
        cells = [_fmt(r[c], 0) if isinstance(r[c], int) else f"{r[c]:g}" for c in grid_cols]
        shares = " / ".join(_fmt(100 * r[f"share_q{q + 1}"], 0) for q in range(QUARTILES))
        stale = " / ".join(_fmt(r[c], 2 if c == "staleness_mean" else 1) for c in
                           ("staleness_mean", "staleness_p50", "staleness_p90", "staleness_max"))  # fmt: skip
        cells += [f"{r['virtual_time_s']:,.6g}", f"{r['aggregations']:,}",
                  _fmt(r["updates_per_hour"], 0), _fmt(r["mean_round_s"], 2), shares, stale,
                  _fmt(100 * r["never_heard_share"], 1)]  # fmt: skip
        table.append(dict(zip(head, cells)))
    what = "deadline" if sync else "K"
    cut = " (a round still open at the end is closed there and left out of the mean round)" if sync else ""
    held = (
        f"**Held fixed: the virtual time**, {horizon_s:,.6g} s for every setting, from {horizon_from}; the "
        f"number of aggregations is what differs{cut}. "
    )
    short = short_runs(rows, horizon_s)
    if short:
        held += (
            f"**Not every run lasted that long:** {', '.join(r['run_dir'] for r in short)} ended early (nothing "
            "left to happen), so their shares cover less time. "
        )
    note = (
        f"\n{held}One timing-only run per {what} (no training). Updates are the aggregated ones (updates.csv); "
        "speed quartiles rank clients by `samples_per_s` (q1 = slowest quarter; 25 % each = every speed heard "
        "equally); never heard = clients with no aggregated update in the run.\n"
    )
    return markdown(table) + note


def draw_advice(path: Path, rows: list[dict[str, Any]], horizon_s: float) -> None:
    from matplotlib.figure import Figure  # the object API: no pyplot, no global backend to switch

    sync = "deadline_s" in rows[0]
    x_key = "deadline_s" if sync else "k"
    groups: dict[Any, list[dict]] = {}
    for r in rows:
        groups.setdefault(r.get("concurrency"), []).append(r)
    fig = Figure(figsize=(16, 3.8))
    axes = fig.subplots(1, 4)
    panels = (
        ("updates_per_hour", "updates per virtual hour", 1.0),
        ("never_heard_share", "clients never heard from (%)", 100.0),
        ("mean_round_s", "mean round length (virtual s)", 1.0)
        if sync
        else ("staleness_p90", "staleness p90 (versions)", 1.0),
        ("aggregations", f"aggregations in {horizon_s:,.6g} virtual s", 1.0),
    )
    for ax, (key, label, scale) in zip(axes, panels):
        for conc, items in groups.items():
            xs = [r[x_key] for r in items]
            ys = [scale * r[key] for r in items]
            ax.plot(xs, ys, marker="o", label=None if conc is None else f"concurrency {conc}")
        ax.set_xlabel("deadline (virtual s)" if sync else "K (updates per aggregation)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        if len(groups) > 1:
            ax.legend(fontsize=8)
    axes[0].set_ylim(bottom=0)
    axes[1].set_ylim(0, max(5.0, 110.0 * max(r["never_heard_share"] for r in rows)))
    axes[3].set_ylim(bottom=0)
    short = short_runs(rows, horizon_s)
    length = f"every run {horizon_s:,.6g} virtual s" + (
        f"; {len(short)} ended early: " + ", ".join(f"{r['run_dir']} {r['virtual_time_s']:,.6g} s" for r in short)
        if short
        else ""
    )
    what = "sync deadline" if sync else "K-async K"
    fig.suptitle(f"advice: {what} (timing-only runs, no training; {length})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
