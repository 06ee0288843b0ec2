"""``python -m asyncfl advise``: pick a sync deadline or a K-async K before training anything.

The scenario runs once per grid value in ``timing_only`` mode (the clock world alone: no data set,
no model, no training) through the sweep's job runner (:func:`asyncfl.study.jobs.run_locally`), each
into an ordinary run directory.  The advice is then read from those files, never re-simulated:

``updates_per_hour``     aggregated updates (rows of updates.csv) per virtual hour (summary.json's
                         ``virtual_time_s``)
``mean_round_s``         mean of ``time - started`` over rounds.csv: a sync round's length, or in
                         K-async the time between two aggregations
``share_q1`` .. ``q4``   share of the aggregated updates sent by each speed quartile (clients.csv
                         ``samples_per_s``, ranked slowest first, ties by client id; 0.25 each = every
                         speed heard equally; q1 = the slowest quarter)
``staleness_*``          mean, median (p50), 90th percentile (p90, linear interpolation) and max of
                         updates.csv ``staleness``
``never_heard_share``    share of clients with no aggregated update (clients.csv ``participations`` = 0)

Outputs: ``advice.csv`` (those columns per setting), ``advice.md`` (the same as a Markdown table) and
``advice.png`` (updates per hour and never-heard share against the grid value).
"""

from __future__ import annotations

import copy
import json
import math
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from asyncfl.config import ConfigError, apply_override, read_scenario, validate_scenario
from asyncfl.config.runnable import check_runnable
from asyncfl.results import new_run_dir, refuse_used_out, write_atomic
from asyncfl.study.tables import markdown, write_csv

MAX_SETTINGS = 200
OPTION = {"deadline_s": "--deadline value", "k": "--k", "concurrency": "--concurrency"}
QUARTILES = 4
# what every advice run sets: the clock world only, and no file the advice does not read
TIMING_KEYS = {
    "timing_only": True,
    "output.plot": False,
    "output.events": "none",
    "checkpoint.every_rounds": None,
    "checkpoint.every_virtual_s": None,
    "eval.per_client": False,
}


@dataclass(frozen=True)
class Setting:
    label: str  # run directory name, e.g. deadline_5 or k10_c20
    values: dict[str, Any]  # grid columns of advice.csv, e.g. {"deadline_s": 5.0}
    overrides: dict[str, Any]  # dotted scenario keys


# ------------------------------------------------------------------ the grid


def parse_deadlines(text: str) -> list[float]:
    """``start:stop:step`` (stop included when the steps land on it), e.g. 5:60:5."""
    allowed = "START:STOP:STEP with 0 < START <= STOP and STEP > 0, e.g. 5:60:5"
    parts = text.split(":")
    try:
        start, stop, step = (float(p) for p in parts) if len(parts) == 3 else (math.nan,) * 3
    except ValueError:
        start = stop = step = math.nan
    if not all(math.isfinite(x) for x in (start, stop, step)) or not (0 < start <= stop and step > 0):
        raise ConfigError(f"--deadline {text!r}: expected {allowed} (seconds).")
    count = math.floor((stop - start) / step + 1e-9) + 1
    if count > MAX_SETTINGS:
        raise ConfigError(f"--deadline {text!r}: {count} settings; at most {MAX_SETTINGS} (take a larger STEP).")
    return [_clean(start + i * step) for i in range(count)]


def parse_int_list(option: str, text: str) -> list[int]:
    """``1,5,10,20``: distinct integers >= 1."""
    items = [t.strip() for t in text.split(",")]
    if not items or any(not re.fullmatch(r"\d+", t) or int(t) < 1 for t in items):
        raise ConfigError(f"{option} {text!r}: expected a comma-separated list of integers >= 1, e.g. 1,5,10,20.")
    values = [int(t) for t in items]
    if len(set(values)) != len(values):
        raise ConfigError(f"{option} {text!r}: a value is repeated.")
    if len(values) > MAX_SETTINGS:
        raise ConfigError(f"{option} {text!r}: {len(values)} values; at most {MAX_SETTINGS}.")
    return values


def _clean(x: float) -> float:
    return float(f"{x:.10g}")


def _num(x: float) -> str:
    return f"{x:g}"


def grid(mode: str, deadline: str | None, k: str | None, concurrency: str | None) -> list[Setting]:
    """The settings to run, checked against the scenario's server mode."""
    if (deadline is None) == (k is None):
        raise ConfigError("advise: give exactly one of --deadline START:STOP:STEP (sync) or --k LIST (k_async).")
    if deadline is not None:
        if concurrency is not None:
            raise ConfigError("--concurrency: only with --k (k_async); a sync scenario has no concurrency.")
        if mode != "sync":
            raise ConfigError(f"--deadline: applies to sync scenarios; this one has server.mode {mode} (use --k).")
        return [
            Setting(f"deadline_{_num(d)}", {"deadline_s": d}, {"server.deadline_s": d})
            for d in parse_deadlines(deadline)
        ]
    if mode != "k_async":
        raise ConfigError(f"--k: applies to k_async scenarios; this one has server.mode {mode} (use --deadline).")
    ks = parse_int_list("--k", k)
    cs = parse_int_list("--concurrency", concurrency) if concurrency is not None else [None]
    if len(ks) * len(cs) > MAX_SETTINGS:
        raise ConfigError(f"--k x --concurrency: {len(ks) * len(cs)} settings; at most {MAX_SETTINGS}.")
    settings = []
    for c in cs:
        for kk in ks:
            if c is None:
                settings.append(Setting(f"k{kk}", {"k": kk}, {"server.k": kk}))
            else:
                settings.append(
                    Setting(f"k{kk}_c{c}", {"k": kk, "concurrency": c}, {"server.k": kk, "server.concurrency": c})
                )
    return settings


# ------------------------------------------------------------------ running


def _set(raw: dict, dotted: str, value: Any) -> None:
    apply_override(raw, f"{dotted}={json.dumps(value)}")


def plan(path: Path, overrides: list[str], deadline: str | None, k: str | None, concurrency: str | None):
    """(settings, validated scenarios as JSON data, scenario name) for the grid."""
    from asyncfl.study.spec import is_study

    raw = read_scenario(path)
    for item in overrides:
        apply_override(raw, item)
    if is_study(raw):
        raise ConfigError(f"{path}: advise runs one scenario; this file is a study (compare: / seeds:).")
    base = validate_scenario(copy.deepcopy(raw), source=str(path))
    settings = grid(base.server.mode, deadline, k, concurrency)
    scenarios = []
    for setting in settings:
        variant = copy.deepcopy(raw)
        for key, value in {**TIMING_KEYS, **setting.overrides}.items():
            _set(variant, key, value)
        option = ", ".join(f"{OPTION[key]} {value:g}" for key, value in setting.values.items())
        scenario = validate_scenario(variant, source=f"{path} with {option}")
        scenarios.append(scenario)
    check_runnable(scenarios[0])
    return settings, [s.model_dump(mode="json") for s in scenarios], base.name


def run_advice(
    path: Path,
    overrides: list[str],
    deadline: str | None = None,
    k: str | None = None,
    concurrency: str | None = None,
    out: Path | None = None,
    quiet: bool = False,
) -> Path:
    """Run the grid and write advice.csv / .md / .png into the output directory (returned)."""
    from asyncfl.study.jobs import Job, run_locally

    settings, scenarios, name = plan(path, overrides, deadline, k, concurrency)
    if out is not None:
        refuse_used_out(out)
        out.mkdir(parents=True, exist_ok=True)
    else:
        out = new_run_dir(Path(scenarios[0]["output"]["dir"]), f"{name}_advice")
    log = (lambda msg: None) if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    jobs = [Job(s.label, sc["seed"], sc, out / s.label) for s, sc in zip(settings, scenarios)]
    log(f"advise {out}: {len(jobs)} timing-only run(s)")
    failures = run_locally(jobs, log)
    if failures:
        job, error = failures[0]
        raise ConfigError(f"advise: the run {job.variant} failed: {error}")
    rows = [advice_row(s, out / s.label) for s in settings]
    write_advice(out, rows, settings)
    return out


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


def advice_row(setting: Setting, run_dir: Path) -> dict[str, Any]:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    rounds, updates, clients = (pd.read_csv(run_dir / f"{name}.csv") for name in ("rounds", "updates", "clients"))
    hours = summary["virtual_time_s"] / 3600.0
    staleness = sorted(updates["staleness"].astype(float).tolist())
    per_quartile = updates["client"].map(speed_quartiles(clients)).value_counts()
    lengths = (rounds["time"] - rounds["started"]).tolist()
    n = len(updates)
    row: dict[str, Any] = dict(setting.values)
    row.update({
        "virtual_time_s": summary["virtual_time_s"], "aggregations": len(rounds), "updates": n,
        "updates_per_hour": n / hours if hours > 0 else math.nan,
        "mean_round_s": statistics.fmean(lengths) if lengths else math.nan,
        **{f"share_q{q + 1}": int(per_quartile.get(q, 0)) / n if n else math.nan for q in range(QUARTILES)},
        "staleness_mean": statistics.fmean(staleness) if staleness else math.nan,
        "staleness_p50": quantile(staleness, 0.5), "staleness_p90": quantile(staleness, 0.9),
        "staleness_max": staleness[-1] if staleness else math.nan,
        "never_heard_share": int((clients["participations"] == 0).sum()) / len(clients) if len(clients) else math.nan,
        "run_dir": setting.label,
    })  # fmt: skip
    return row


# ------------------------------------------------------------------ writing


def write_advice(out: Path, rows: list[dict[str, Any]], settings: list[Setting]) -> list[Path]:
    write_csv(out / "advice.csv", rows, digits=None)
    write_atomic(out / "advice.md", advice_markdown(rows))
    draw_advice(out / "advice.png", rows)
    return [out / "advice.csv", out / "advice.md", out / "advice.png"]


def _fmt(value: Any, digits: int = 1) -> str:
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:,.{digits}f}"
    return str(value)


def advice_markdown(rows: list[dict[str, Any]]) -> str:
    grid_cols = [c for c in ("deadline_s", "k", "concurrency") if c in rows[0]]
    sync = "deadline_s" in rows[0]
    head = grid_cols + [
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
        cells += [_fmt(r["updates_per_hour"], 0), _fmt(r["mean_round_s"], 2), shares, stale,
                  _fmt(100 * r["never_heard_share"], 1)]  # fmt: skip
        table.append(dict(zip(head, cells)))
    what = "deadline" if sync else "K"
    note = (
        f"\nOne timing-only run per {what} (no training). Updates are the aggregated ones (updates.csv); speed "
        "quartiles rank clients by `samples_per_s` (q1 = slowest quarter; 25 % each = every speed heard "
        "equally); never heard = clients with no aggregated update in the run.\n"
    )
    return markdown(table) + note


def draw_advice(path: Path, rows: list[dict[str, Any]]) -> None:
    from matplotlib.figure import Figure  # the object API: no pyplot, no global backend to switch

    sync = "deadline_s" in rows[0]
    x_key = "deadline_s" if sync else "k"
    groups: dict[Any, list[dict]] = {}
    for r in rows:
        groups.setdefault(r.get("concurrency"), []).append(r)
    fig = Figure(figsize=(13, 3.8))
    axes = fig.subplots(1, 3)
    panels = (
        ("updates_per_hour", "updates per virtual hour", 1.0),
        ("never_heard_share", "clients never heard from (%)", 100.0),
        ("mean_round_s", "mean round length (virtual s)", 1.0)
        if sync
        else ("staleness_p90", "staleness p90 (versions)", 1.0),
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
    fig.suptitle("advice: " + ("sync deadline" if sync else "K-async K") + " (timing-only runs, no training)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
