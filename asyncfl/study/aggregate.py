"""Aggregate runs over seeds: accuracy curves with a band, time to target, per-client bias statistics.

Everything here reads run directories (metrics.csv, summary.json, clients.csv) and returns plain
rows, so tables and figures can be redrawn from files alone.

Curves over seeds.  Each run's accuracy is known only where it was evaluated.  Between two
evaluations a run is credited with its latest evaluated accuracy (a step function: the accuracy of
the most recently evaluated model), and it *covers* an abscissa x up to its last evaluation.  The
common grid is the union of every run's evaluation points; at each x the statistics are over the
runs that cover it (column ``seeds``).  The band is mean +- one sample standard deviation (ddof=1;
0 with a single run).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from asyncfl.results import read_csv

AXES = ("time", "round")  # virtual seconds | aggregations


@dataclass(frozen=True)
class RunRecord:
    """One run of a comparison: its label (variant), seed and directory."""

    label: str
    seed: int | None
    path: Path


def accuracy_points(run_dir: Path, axis: str) -> tuple[np.ndarray, np.ndarray]:
    """(x, accuracy) at every evaluation of a run, x in virtual seconds (``time``) or aggregations."""
    rows = [r for r in read_csv(run_dir / "metrics.csv") if r["test_accuracy"] not in ("", "nan")]
    x = np.array([float(r[axis]) for r in rows], dtype=np.float64)
    y = np.array([float(r["test_accuracy"]) for r in rows], dtype=np.float64)
    return x, y


def step_value(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The latest y with x <= at (NaN before the first point and after the last)."""
    if not len(x):
        return np.full(len(at), np.nan)
    idx = np.searchsorted(x, at, side="right") - 1
    out = np.where(idx >= 0, y[np.clip(idx, 0, None)], np.nan)
    return np.where(at <= x[-1], out, np.nan)


def band(curves: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[dict[str, float]]:
    """Mean, sample std, min and max over ``curves`` on the union of their x (see module docstring)."""
    curves = [(x, y) for x, y in curves if len(x)]
    if not curves:
        return []
    grid = np.unique(np.concatenate([x for x, _ in curves]))
    values = np.stack([step_value(x, y, grid) for x, y in curves])
    rows = []
    for j, x in enumerate(grid):
        v = values[:, j][~np.isnan(values[:, j])]
        if not len(v):
            continue
        std = float(np.std(v, ddof=1)) if len(v) > 1 else 0.0
        rows.append({
            "x": float(x), "seeds": len(v), "accuracy_mean": float(np.mean(v)), "accuracy_std": std,
            "accuracy_min": float(np.min(v)), "accuracy_max": float(np.max(v)),
        })  # fmt: skip
    return rows


def group(records: Iterable[RunRecord]) -> dict[str, list[RunRecord]]:
    """Records by label, labels in first-seen order."""
    out: dict[str, list[RunRecord]] = {}
    for record in records:
        out.setdefault(record.label, []).append(record)
    return out


def comparison_rows(records: Sequence[RunRecord]) -> list[dict]:
    """comparison.csv: one row per (variant, axis, x) with the band statistics over seeds."""
    rows = []
    for label, runs in group(records).items():
        for axis in AXES:
            for row in band([accuracy_points(r.path, axis) for r in runs]):
                rows.append({"variant": label, "axis": axis, **row})
    return rows


def first_reach(run_dir: Path, target: float) -> tuple[float, int] | None:
    """(virtual seconds, aggregations) of the first evaluation with accuracy >= target, or None."""
    for r in read_csv(run_dir / "metrics.csv"):
        if r["test_accuracy"] not in ("", "nan") and float(r["test_accuracy"]) >= target:
            return float(r["time"]), int(float(r["round"]))
    return None


def read_summary(run_dir: Path) -> dict:
    path = run_dir / "summary.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def run_rows(records: Sequence[RunRecord]) -> list[dict]:
    """runs.csv: one row per run with its summary."""
    rows = []
    for r in records:
        s = read_summary(r.path)
        rows.append({
            "variant": r.label, "seed": r.seed if r.seed is not None else s.get("seed", ""),
            "status": s.get("status", "missing"), "final_accuracy": s.get("final_accuracy"),
            "best_accuracy": s.get("best_accuracy"), "virtual_time_s": s.get("virtual_time_s"),
            "rounds": s.get("rounds"), "updates": s.get("updates"), "staleness_mean": s.get("staleness_mean"),
            "real_seconds": s.get("real_seconds"), "run_dir": str(r.path),
        })  # fmt: skip
    return rows


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    v = [x for x in values if x is not None and not math.isnan(x)]
    if not v:
        return math.nan, math.nan
    return float(np.mean(v)), float(np.std(v, ddof=1)) if len(v) > 1 else 0.0


def time_to_target_rows(records: Sequence[RunRecord], targets: Sequence[float]) -> list[dict]:
    """time_to_target.csv: per variant and target, how many seeds reached it, and how fast.

    Mean and std of the time (rounds) to target are over the seeds that reached it."""
    rows = []
    for label, runs in group(records).items():
        summaries = [read_summary(r.path) for r in runs]
        final = mean_std([s.get("final_accuracy") for s in summaries])
        best = mean_std([s.get("best_accuracy") for s in summaries])
        for target in targets:
            hits = [h for h in (first_reach(r.path, target) for r in runs) if h is not None]
            t, r = mean_std([h[0] for h in hits]), mean_std([h[1] for h in hits])
            rows.append({
                "variant": label, "target": target, "seeds": len(runs), "reached": len(hits),
                "time_to_target_mean_s": t[0], "time_to_target_std_s": t[1],
                "rounds_to_target_mean": r[0], "rounds_to_target_std": r[1],
                "final_accuracy_mean": final[0], "final_accuracy_std": final[1],
                "best_accuracy_mean": best[0], "best_accuracy_std": best[1],
            })  # fmt: skip
    return rows


def default_targets(records: Sequence[RunRecord]) -> list[float]:
    """Without explicit targets: the scenario's stop.target_accuracy if every run has the same one,
    otherwise 90 % of the best mean final accuracy over variants (rounded down to 0.01)."""
    declared = {read_summary(r.path).get("target_accuracy") for r in records}
    if len(declared) == 1 and None not in declared:
        return [float(declared.pop())]
    finals = [
        mean_std([read_summary(r.path).get("final_accuracy") for r in runs])[0] for runs in group(records).values()
    ]
    finals = [f for f in finals if not math.isnan(f)]
    return [math.floor(90 * max(finals)) / 100] if finals else []


def bias_stats(accuracies: Sequence[float]) -> dict[str, float]:
    """FedAR Table 3 over clients, in percent: mean +- std, variance (ddof=0, over clients), and the
    mean +- std of the worst and best 10 % of clients (at least one client each)."""
    a = np.sort(np.array([x for x in accuracies if not math.isnan(x)], dtype=np.float64)) * 100
    if not len(a):
        return {}
    k = max(1, math.ceil(0.1 * len(a)))
    worst, best = a[:k], a[-k:]
    return {
        "clients": len(a), "mean": float(a.mean()), "std": float(a.std()), "var": float(a.var()),
        "worst10_mean": float(worst.mean()), "worst10_std": float(worst.std()),
        "best10_mean": float(best.mean()), "best10_std": float(best.std()),
    }  # fmt: skip


def client_accuracies(run_dir: Path) -> list[float]:
    path = run_dir / "clients.csv"
    if not path.is_file():
        return []
    return [float(r["accuracy"]) if r["accuracy"] not in ("", "nan") else math.nan for r in read_csv(path)]


def bias_rows(records: Sequence[RunRecord]) -> list[dict]:
    """client_accuracy.csv of a comparison: FedAR Table 3 per variant, each statistic averaged over seeds."""
    rows = []
    for label, runs in group(records).items():
        stats = [s for s in (bias_stats(client_accuracies(r.path)) for r in runs) if s]
        if not stats:
            continue
        keys = [k for k in stats[0] if k != "clients"]
        rows.append({"variant": label, "seeds": len(stats), **{k: float(np.mean([s[k] for s in stats])) for k in keys}})
    return rows
