"""Aggregate runs over seeds: accuracy curves with a band, time to target, per-client bias statistics.

Everything here reads run directories (metrics.csv, summary.json, clients.csv; CSVs with pandas) and
returns rows or DataFrames, so tables and figures can be redrawn from files alone.  Statistics over seeds
use numpy's mean and std on the values themselves (not pandas' grouped kernels, whose summation order
differs in the last bit), so the tables' numbers do not depend on the pandas version.

Curves over seeds.  Each run's accuracy is known only where it was evaluated.  Between two
evaluations a run is credited with its latest evaluated accuracy (a step function: the accuracy of
the most recently evaluated model), and it *covers* an abscissa x up to its last evaluation.  The
common grid is the union of every run's evaluation points; at each x the statistics are over the
runs that cover it (column ``seeds``).  The band is mean +- one sample standard deviation (ddof=1;
0 with a single run).  A run that diverged (summary status ``diverged``) stopped early because its model
broke, not because its clock ran out: it covers every x past its end with its last evaluated accuracy,
as its final accuracy counts in the report, so the mean does not quietly drop the seeds that broke.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from asyncfl.output.client_statistics import bias_stats
from asyncfl.output.reading import has_table, load_table, read_summary
from asyncfl.output.run_directory import ENDED
from asyncfl.study.measures import column_label

AXES = ("time", "round")  # virtual seconds | aggregations
TAIL_SHARE = 0.25  # "last quarter": evaluations at x >= 0.75 x the run's last evaluated x


CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values with the half-width of its confidence interval (NaN when n < 2)."""

    n: int
    mean: float
    half_width: float

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Mean ± t_{(1+c)/2, n-1} · s / √n over the finite ``values``."""
    v = np.array([x for x in values if x is not None and math.isfinite(x)], dtype=np.float64)
    if not len(v):
        return Interval(0, math.nan, math.nan)
    if len(v) == 1:
        return Interval(1, float(v[0]), math.nan)
    quantile = stats.t.ppf(0.5 + confidence / 2, len(v) - 1)
    return Interval(len(v), float(v.mean()), float(quantile * v.std(ddof=1) / math.sqrt(len(v))))


def paired_values(values: Mapping[int, float], baseline: Mapping[int, float]) -> list[float]:
    """``values[s] - baseline[s]`` over the seeds s where both are finite, in seed order."""
    common = sorted(s for s in values.keys() & baseline.keys() if _finite(values[s]) and _finite(baseline[s]))
    return [values[s] - baseline[s] for s in common]


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


@dataclass(frozen=True)
class RunRecord:
    """One run of a comparison: its label (variant), seed and directory."""

    label: str
    seed: int | None
    path: Path


def evaluations(run_dir: Path) -> pd.DataFrame:
    """The rows of metrics.csv with a test accuracy (an evaluation)."""
    metrics = load_table(run_dir / "metrics.csv")
    return metrics[metrics["test_accuracy"].notna()]


def accuracy_points(run_dir: Path, axis: str) -> tuple[np.ndarray, np.ndarray]:
    """(x, accuracy) at every evaluation of a run, x in virtual seconds (``time``) or aggregations."""
    rows = evaluations(run_dir)
    return rows[axis].to_numpy(np.float64), rows["test_accuracy"].to_numpy(np.float64)


def step_value(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The latest y with x <= at (NaN before the first point and after the last)."""
    if not len(x):
        return np.full(len(at), np.nan)
    idx = np.searchsorted(x, at, side="right") - 1
    out = np.where(idx >= 0, y[np.clip(idx, 0, None)], np.nan)
    return np.where(at <= x[-1], out, np.nan)


def held_value(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """:func:`step_value`, with the last y kept after the last point (a run that ended broken stays broken)."""
    return np.where(at > x[-1], y[-1], step_value(x, y, at))


def band(curves: Sequence[tuple[np.ndarray, np.ndarray]], held: Sequence[bool] = ()) -> list[dict[str, float]]:
    """Mean, sample std, min and max over ``curves`` on the union of their x (see module docstring);
    ``held[i]``: curve i keeps its last value to the end of the grid (a diverged run)."""
    held = list(held) or [False] * len(curves)
    kept = [(x, y, hold) for (x, y), hold in zip(curves, held, strict=True) if len(x)]
    if not kept:
        return []
    grid = np.unique(np.concatenate([x for x, _, _ in kept]))
    values = np.stack([held_value(x, y, grid) if hold else step_value(x, y, grid) for x, y, hold in kept])
    rows = []
    for j, x in enumerate(grid):
        v = values[:, j][~np.isnan(values[:, j])]
        if len(v):
            rows.append({"x": float(x), "seeds": len(v), "accuracy_mean": float(np.mean(v)),
                         "accuracy_std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0,
                         "accuracy_min": float(np.min(v)),
                         "accuracy_max": float(np.max(v))})  # fmt: skip
    return rows


def comparison_rows(records: Sequence[RunRecord]) -> pd.DataFrame:
    """comparison.csv: one row per (variant, axis, x) with the band statistics over seeds."""
    labels = list(dict.fromkeys(r.label for r in records))
    diverged = {r.path: read_summary(r.path, required=False).get("status") == "diverged" for r in records}
    return pd.DataFrame([
        {"variant": label, "axis": axis, **row} for label in labels for axis in AXES
        for row in band([accuracy_points(r.path, axis) for r in records if r.label == label],
                        [diverged[r.path] for r in records if r.label == label])
    ])  # fmt: skip


def run_rows(records: Sequence[RunRecord]) -> list[dict]:
    """runs.csv: one row per run with its summary."""
    rows = []
    for r in records:
        s = read_summary(r.path, required=False)
        rows.append({
            "variant": r.label, "seed": r.seed if r.seed is not None else s.get("seed", ""),
            "status": s.get("status", "missing"), "final_accuracy": s.get("final_accuracy"),
            "best_accuracy": s.get("best_accuracy"), "virtual_time_s": s.get("virtual_time_s"),
            "rounds": s.get("rounds"), "updates": s.get("updates"), "staleness_mean": s.get("staleness_mean"),
            "real_seconds": s.get("real_seconds"), "run_dir": str(r.path),
        })  # fmt: skip
    return rows


def mean_std(values: Sequence[float] | pd.Series) -> tuple[float, float]:
    """Mean and sample std of the values that are not None or NaN; the std of one value is NaN (a
    single seed says nothing about the spread, and 0 would claim there is none)."""
    v = pd.Series(values, dtype=np.float64).dropna().to_numpy()
    if not len(v):
        return math.nan, math.nan
    return float(np.mean(v)), float(np.std(v, ddof=1)) if len(v) > 1 else math.nan


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def run_measures(run_dir: Path, targets: Sequence[float], columns: Sequence[str] = ()) -> dict[str, float]:
    """Every measure of one run (NaN where it has none, e.g. a target not reached; all NaN for a run that has
    not ended, whose summary.json is missing or says running or interrupted): final, last-quarter
    and best accuracy, the virtual time and aggregations of the first evaluation >= each target, and the
    last-quarter mean of each metrics.csv column of ``columns`` (claims' ``last_quarter:<column>``).  A run
    that diverged stopped with a broken model that would have stayed broken to the horizon: its last quarter
    is its last evaluation, not the evaluations before it broke."""
    summary, rows = read_summary(run_dir, required=False), evaluations(run_dir)
    ended = summary.get("status") in ENDED
    if not ended:  # cut short (killed, interrupted, failed): its partial tables would enter some measures only
        summary, rows = {}, rows.iloc[:0]
    tail = 0.0 if summary.get("status") == "diverged" else TAIL_SHARE
    out = {
        "final accuracy": _number(summary.get("final_accuracy")),
        "last-quarter accuracy": tail_accuracy(run_dir, tail) if ended else math.nan,
        "best accuracy": _number(summary.get("best_accuracy")),
    }
    for target in targets:
        hit = rows[rows["test_accuracy"] >= target].head(1)
        out[f"time to {target:g} (virtual s)"] = float(hit["time"].iloc[0]) if len(hit) else math.nan
        out[f"rounds to {target:g}"] = float(int(hit["round"].iloc[0])) if len(hit) else math.nan
    for column in columns:
        out[column_label(column)] = tail_mean(rows, column, tail)
    return out


def tail_mean(rows: pd.DataFrame, column: str, share: float = TAIL_SHARE) -> float:
    """Mean of ``column`` over the evaluations in the last ``share`` of the run by virtual time (as
    :func:`tail_accuracy`); NaN where the run has no such column or no value there."""
    if column not in rows or not len(rows):
        return math.nan
    x = rows["time"].to_numpy(np.float64)
    values = rows[column].to_numpy(np.float64)[x >= (1 - share) * x[-1]]
    values = values[~np.isnan(values)]
    return float(np.mean(values)) if len(values) else math.nan


def tail_accuracy(run_dir: Path, share: float = TAIL_SHARE) -> float:
    """Mean of the evaluated accuracies in the last ``share`` of the run (by virtual time); less noisy than
    the single final evaluation."""
    x, y = accuracy_points(run_dir, "time")
    return float(np.mean(y[x >= (1 - share) * x[-1]])) if len(x) else math.nan


def measures_by_run(
    records: Sequence[RunRecord], targets: Sequence[float], columns: Sequence[str] = ()
) -> pd.DataFrame:
    """One row per run: variant, seed and every measure of :func:`run_measures`."""
    rows = [{"variant": r.label, "seed": r.seed, **run_measures(r.path, targets, columns)} for r in records]
    return pd.DataFrame(rows)


def seed_keys(seeds: pd.Series) -> list[int]:
    """A variant's runs keyed by seed, a run without one by its position among them (as the horizons are)."""
    return [i if pd.isna(s) else int(s) for i, s in enumerate(seeds)]


def _at_horizon(values: pd.Series, keys: Sequence[int], horizons: Mapping[int, float] | None) -> pd.Series:
    """``values`` with each miss (NaN) as its run's horizon (``horizons``: key -> horizon; a run without one
    stays NaN); unchanged without horizons."""
    if horizons is None:
        return values
    return values.fillna(pd.Series([horizons.get(k, math.nan) for k in keys], index=values.index, dtype=np.float64))


def time_to_target_rows(
    records: Sequence[RunRecord],
    targets: Sequence[float],
    horizons: Mapping[str, Mapping[str, Mapping[int, float]]] | None = None,
) -> list[dict]:
    """time_to_target.csv: per variant and target, how many seeds reached it, and how fast.

    With ``horizons`` (axis "time" / "round" -> variant -> seed -> the run's horizon in virtual s / rounds,
    :func:`asyncfl.study.censoring.run_horizons`) a seed that never reached the target counts at its horizon,
    so the means and stds of the time (rounds) to target are over every seed: restricted means, as in
    report.csv.  Without, they are over the seeds that reached it.  A std over one seed is empty."""
    time_at, round_at = ((horizons or {}).get(axis) for axis in AXES)
    rows = []
    for label, runs in measures_by_run(records, targets).groupby("variant", sort=False):
        final, best = mean_std(runs["final accuracy"]), mean_std(runs["best accuracy"])
        keys = seed_keys(runs["seed"])
        for target in targets:
            times, rounds = runs[f"time to {target:g} (virtual s)"], runs[f"rounds to {target:g}"]
            t = mean_std(_at_horizon(times, keys, None if time_at is None else time_at.get(label, {})))
            r = mean_std(_at_horizon(rounds, keys, None if round_at is None else round_at.get(label, {})))
            rows.append({
                "variant": label, "target": target, "seeds": len(runs), "reached": int(times.notna().sum()),
                "time_to_target_mean_s": t[0], "time_to_target_std_s": t[1],
                "rounds_to_target_mean": r[0], "rounds_to_target_std": r[1],
                "final_accuracy_mean": final[0], "final_accuracy_std": final[1],
                "best_accuracy_mean": best[0], "best_accuracy_std": best[1],
            })  # fmt: skip
    return rows


def default_targets(records: Sequence[RunRecord]) -> list[float]:
    """Without explicit targets: the scenario's stop.target_accuracy if every run has the same one,
    otherwise 90 % of the best mean final accuracy over variants (rounded down to 0.01)."""
    summaries = [read_summary(r.path, required=False) for r in records]
    declared = {s.get("target_accuracy") for s in summaries}
    if len(declared) == 1 and None not in declared:
        return [float(declared.pop())]
    finals = pd.Series([_number(s.get("final_accuracy")) for s in summaries])
    means = finals.groupby([r.label for r in records], sort=False).agg(lambda v: mean_std(v)[0]).dropna()
    return [math.floor(90 * means.max()) / 100] if len(means) else []


def bias_rows(records: Sequence[RunRecord]) -> pd.DataFrame:
    """client_accuracy.csv of a comparison: FedAR Table 3 per variant, each statistic averaged over seeds."""
    stats = pd.DataFrame([
        {"variant": r.label, **bias_stats(load_table(r.path / "clients.csv").get("accuracy", []))} for r in records
        if has_table(r.path / "clients.csv")
    ])  # fmt: skip
    if "clients" not in stats:
        return pd.DataFrame()
    groups = stats.dropna(subset="clients").drop(columns="clients").groupby("variant", sort=False)
    table = groups.agg(lambda v: float(np.mean(v.to_numpy()))).reset_index()
    table.insert(1, "seeds", groups.size().to_numpy())
    return table
