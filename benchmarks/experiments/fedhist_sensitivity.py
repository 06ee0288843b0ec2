"""Sensitivity of FedHist to the hyperparameters the paper leaves open: alpha, lambda, gamma, sim_T, h.

Covers: one-at-a-time sweeps around the defaults (alpha 0.1, lam 0.1, gamma 0.3, sim_t 0.1, history 5)
on scenarios/papers/fedhist_nk10.yaml (N/K = 10, Dirichlet beta = 0.3, digits), short horizon, a few
seeds.  Writes docs/figures/fedhist_sensitivity.png and docs/figures/fedhist_sensitivity.csv.

    python benchmarks/experiments/fedhist_sensitivity.py                 # 34 short runs, ~20 min on 2 CPU cores
    python benchmarks/experiments/fedhist_sensitivity.py --seeds 0 1 2 --horizon 20
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models: one thread avoids oversubscription

import torch  # noqa: E402

from asyncfl.config import read_yaml, validate_scenario  # noqa: E402
from asyncfl.output.reading import read_summary  # noqa: E402
from asyncfl.runner.start import run_scenario  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "scenarios/papers/fedhist_nk10.yaml"
SWEEPS = {
    "alpha": [0.0, 0.1, 0.3, 0.6],
    "lam": [0.0, 0.1, 0.3, 1.0],
    "gamma": [0.1, 0.3, 1.0],
    "sim_t": [-0.2, 0.1, 0.5],
    "history": [1, 5, 20],
}
DEFAULTS = {"alpha": 0.1, "lam": 0.1, "gamma": 0.3, "sim_t": 0.1, "history": 5}
LABELS = {
    "alpha": "EGS alpha (eq. 7)",
    "lam": "HAA lambda (eq. 8)",
    "gamma": "utility EMA gamma (eq. 13)",
    "sim_t": "similarity threshold sim_T (eq. 11)",
    "history": "history h (rounds)",
}


def run(key: str, value: float, seed: int, horizon: float, out: Path) -> dict:
    raw = read_yaml(BASE)
    raw["seed"], raw["name"] = seed, f"{key}_{value}_s{seed}"
    raw["algorithm"] = {**raw["algorithm"], key: value}
    raw["stop"] = {**raw["stop"], "virtual_time_s": horizon}
    run_dir = out / raw["name"]
    if not (run_dir / "summary.json").is_file():
        run_scenario(validate_scenario(raw, source=raw["name"]), run_dir)
    summary = read_summary(run_dir)
    with open(run_dir / "metrics.csv", newline="") as handle:
        accuracies = [float(m["test_accuracy"]) for m in csv.DictReader(handle) if m["test_accuracy"]]
    return {
        "parameter": key,
        "value": value,
        "seed": seed,
        "final_accuracy": statistics.fmean(accuracies[-5:]),  # last 5 evaluations: less noisy than one
        "time_to_target_s": summary["time_to_target_s"],
        "target": summary["target_accuracy"],
    }


def plot(rows: list[dict], path: Path, horizon: float) -> None:
    """Two rows of panels (accuracy at the horizon; time to target), one column per parameter.  The
    x axis lists the values tested (evenly spaced); a run that never reached the target counts as
    the horizon and is drawn as an open marker."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(SWEEPS), figsize=(3.3 * len(SWEEPS), 5.6), constrained_layout=True)
    target = rows[0]["target"]
    metrics = [
        ("final_accuracy", "test accuracy at the horizon"),
        ("time_to_target_s", f"time to {target:.0%} (virtual s)"),
    ]
    for col, key in enumerate(SWEEPS):
        values = SWEEPS[key]
        xs = list(range(len(values)))
        for row, (metric, label) in enumerate(metrics):
            ax = axes[row][col]
            per_seed: dict[int, dict] = {}
            for r in rows:
                if r["parameter"] == key:
                    per_seed.setdefault(r["seed"], {})[r["value"]] = r[metric]
            for points in per_seed.values():
                ys = [horizon if points[v] is None else points[v] for v in values]
                ax.plot(xs, ys, color="grey", lw=0.8, alpha=0.5)
                missed = [(x, horizon) for x, v in zip(xs, values) if points[v] is None]
                if missed:
                    ax.plot(*zip(*missed), ls="", marker="o", mfc="none", color="grey", label=None)
            means = [statistics.fmean(horizon if p[v] is None else p[v] for p in per_seed.values()) for v in values]
            ax.plot(xs, means, color="C0", lw=2, marker="o", label=f"mean of {len(per_seed)} seeds")
            default = values.index(DEFAULTS[key])
            ax.axvline(default, color="C3", ls=":", lw=1, label="default")
            ax.set_xticks(xs, [f"{v:g}" for v in values])
            ax.set_xlabel(LABELS[key])
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
            if col == 0:
                ax.legend(fontsize=7)
    fig.suptitle(
        f"FedHist sensitivity: digits, N/K = 10, Dirichlet 0.3, {horizon:g} virtual s per run "
        "(grey: single seeds; open circle: target not reached, shown at the horizon)"
    )
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--horizon", type=float, default=10.0, help="virtual seconds per run")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "fedhist_sensitivity")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for key, values in SWEEPS.items():
        for value in values:
            for seed in args.seeds:
                rows.append(run(key, value, seed, args.horizon, args.out))
                print(f"{key}={value} seed={seed}: acc={rows[-1]['final_accuracy']:.3f}", file=sys.stderr, flush=True)
    with open(ROOT / "docs" / "figures" / "fedhist_sensitivity.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, ROOT / "docs" / "figures" / "fedhist_sensitivity.png", args.horizon)
    return 0


if __name__ == "__main__":
    sys.exit(main())
