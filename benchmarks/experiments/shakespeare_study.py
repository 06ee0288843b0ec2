"""The Shakespeare straggler study (issue 33): every variant of scenarios/shakespeare_stragglers.yaml over its
seeds, then who was cut off and the figure.

    python benchmarks/experiments/shakespeare_study.py [--executor ray]     # the study: 8 tuning + 28 runs
    python benchmarks/experiments/shakespeare_study.py --resume runs/shakespeare_stragglers/<stamp>   # finish it
    python benchmarks/experiments/shakespeare_study.py --analyse runs/shakespeare_stragglers/<stamp>  # no runs

Runs the study as ``python -m asyncfl scenarios/shakespeare_stragglers.yaml`` does (tuning runs first, then the
evaluation runs), into --out (default runs/shakespeare_stragglers/<timestamp>) or resuming --resume; the sweep
directory gets the usual comparison, tuning.csv, report.md and claims.md.  Then, from the runs' clients.csv,
prints per variant how the clients' delivered share of their tasks depends on their size (training windows),
and the share of all training windows held by clients that never delivered an update; draws
<docs>/figures/shakespeare_study.png (accuracy against virtual time, mean over seeds, beside always answering
the most frequent character; completion against client size), copies the claims table and the per-seed
pairs behind it into <docs>/figures/shakespeare_claims.md and <docs>/results/shakespeare_claims_seeds.*, and
prints the wall time.  Run ``python -m asyncfl report SWEEP_DIR`` first to test the claims with the current code.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from datetime import datetime
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

from asyncfl.learn.federation import build_federation  # noqa: E402
from asyncfl.study.compare import sweep_records  # noqa: E402
from asyncfl.study.spec import load_study  # noqa: E402
from asyncfl.sweep.study_sweep import run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
STUDY_FILE = ROOT / "scenarios" / "shakespeare_stragglers.yaml"
NAME = "shakespeare_stragglers"


def finished(sweep_dir: Path) -> list:
    """The sweep's runs that have ended (clients.csv is written at a run's end)."""
    return [r for r in sweep_records(sweep_dir) if (r.path / "clients.csv").is_file()]


def cut_offs(sweep_dir: Path) -> pd.DataFrame:
    """One row per (variant, seed, client): its training windows, tasks begun and updates delivered."""
    frames = []
    for record in finished(sweep_dir):
        clients = pd.read_csv(record.path / "clients.csv")
        frames.append(clients.assign(variant=record.label, seed=record.seed))
    return pd.concat(frames, ignore_index=True)


def summary(table: pd.DataFrame) -> list[str]:
    """Per variant (seeds pooled): delivered share of tasks by size tercile, Spearman's rho of size against
    the delivered share, and the share of training windows held by clients that never delivered."""
    lines = []
    edges = np.quantile(table["train_samples"].unique(), [1 / 3, 2 / 3])
    for variant, rows in table.groupby("variant", sort=False):
        share = rows["participations"] / rows["attempts"].where(rows["attempts"] > 0)
        tercile = np.digitize(rows["train_samples"], edges)
        by_size = [share[tercile == t].mean() for t in range(3)]
        rho = spearmanr(rows["train_samples"], share, nan_policy="omit").statistic
        silent = (rows["participations"] == 0) & (rows["attempts"] > 0)  # asked, and never delivered
        lost = rows.loc[silent, "train_samples"].sum() / rows["train_samples"].sum()
        lines.append(
            f"{variant}: delivered share of tasks by size tercile (small/mid/big) "
            f"{by_size[0]:.2f} / {by_size[1]:.2f} / {by_size[2]:.2f}; Spearman rho(size, delivered share) "
            f"{rho:.2f}; clients never delivered {int(silent.sum())} of {len(rows)} (seeds pooled), holding "
            f"{100 * lost:.1f}% of the training windows; never asked {int((rows['attempts'] == 0).sum())}; "
            f"tasks begun {int(rows['attempts'].sum())}, "
            f"deadline misses {int(rows['failed_deadline'].sum())}"
        )
    return lines


def majority_accuracy(scenario) -> float:
    """The test accuracy of always answering the test set's most frequent character (a space)."""
    fed = build_federation(scenario.data, scenario.seed, torch.device("cpu"))
    labels = fed.labels[fed.test_indices]
    return float(labels.bincount().max()) / len(labels)


def figure(sweep_dir: Path, table: pd.DataFrame, path: Path) -> None:
    study = load_study(sweep_dir / "study.yaml")
    base = study.runs[0].scenario  # every variant shares the horizon and the sync variants' deadline
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    grid = np.linspace(0, base.stop.virtual_time_s, 61)
    for variant in dict.fromkeys(r.label for r in finished(sweep_dir)):
        curves = []
        for record in (r for r in finished(sweep_dir) if r.label == variant):
            metrics = pd.read_csv(record.path / "metrics.csv").dropna(subset=["test_accuracy"])
            curves.append(np.interp(grid, metrics["time"], metrics["test_accuracy"], left=np.nan))
        mean, std = np.nanmean(curves, 0), np.nanstd(curves, 0)
        left.plot(grid, mean, label=f"{variant} ({len(curves)} seeds)")
        left.fill_between(grid, mean - std, mean + std, alpha=0.2)
    left.axhline(majority_accuracy(base), color="grey", linestyle=":", label="always the most frequent character")
    left.set(xlabel="virtual time (s)", ylabel="test accuracy (next character)", title="accuracy per virtual second")
    left.legend()
    for variant in ("sync_epochs", "sync_steps"):
        chosen = table[table["variant"] == variant]
        rows = chosen.groupby("client").agg(
            train_samples=("train_samples", "first"),
            participations=("participations", "sum"),
            attempts=("attempts", "sum"),
        )  # a client's size is the same in every seed (its device is not)
        right.scatter(rows["train_samples"], rows["participations"] / rows["attempts"], label=variant, alpha=0.7)
    right.set(xscale="log", xlabel="client's training windows", ylabel="delivered share of its tasks",
              title=f"who the {base.server.deadline_s:g} s deadline cuts off (seeds pooled)")  # fmt: skip
    right.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def publish_claims(sweep_dir: Path, docs: Path) -> list[Path]:
    """The sweep's claims table (claims.md, included by docs/findings/shakespeare.md) and the per-seed pairs
    behind it (claims_seeds.md/.csv, linked from there) copied into ``docs``; nothing without claims."""
    copies = {"claims.md": docs / "figures" / "shakespeare_claims.md",
              "claims_seeds.md": docs / "results" / "shakespeare_claims_seeds.md",
              "claims_seeds.csv": docs / "results" / "shakespeare_claims_seeds.csv"}  # fmt: skip
    if not (sweep_dir / "claims.md").is_file():
        return []
    for source, target in copies.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sweep_dir / source, target)
    return list(copies.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="the sweep directory (new or empty)")
    parser.add_argument("--resume", type=Path, help="a sweep directory of this study: finish its runs")
    parser.add_argument("--executor", choices=("local", "ray"), default="local")
    parser.add_argument("--analyse", type=Path, help="an existing sweep directory: analyse it, run nothing")
    parser.add_argument("--docs", type=Path, default=ROOT / "docs")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    failures = []
    if args.analyse is not None:
        sweep_dir = args.analyse
    else:
        study = load_study(STUDY_FILE)
        out = None if args.resume else args.out or ROOT / "runs" / NAME / datetime.now().strftime("%Y%m%d-%H%M%S")
        result = run_sweep(study, resume=args.resume, out=out, executor=args.executor)
        sweep_dir, failures = result.sweep_dir, result.failures
    wall_s = time.perf_counter() - start
    table = cut_offs(sweep_dir)
    for line in summary(table):
        print(line)
    figure(sweep_dir, table, args.docs / "figures" / "shakespeare_study.png")
    for written in publish_claims(sweep_dir, args.docs):
        print(written)
    print(f"{NAME}: sweep {sweep_dir}; wall time {wall_s:,.0f} s ({wall_s / 60:.1f} min)")
    for job, why in failures:
        print(f"FAILED {job.variant} seed{job.seed}: {why}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
