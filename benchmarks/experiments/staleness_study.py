"""The staleness study of FedHist (fedhist.txt, Tables I-II, Figs. 3 and 5) on a virtual clock.

Covers: FedHist vs FedBuff vs FedAsync vs synchronous FedAvg with a deadline, for N/K = 10 and
N/K = 100 (staleness) and Dirichlet beta = 0.3, 1.0 and IID, on accuracy versus *virtual wall-clock
time* and on rounds to a target accuracy (the paper's Table II counts rounds only).

Scenario files: scenarios/papers/fedhist_nk10.yaml and fedhist_nk100.yaml (FedHist).  The other
algorithms are the same scenario (same population, data, horizon, target) with only ``algorithm``
and ``server`` replaced:
  fedbuff  K-async, same K, (1 + tau)^-0.5
  fedasync K-async, K = 1 (FedAsync mixes one update at a time), mixing 0.6, (1 + tau)^-0.5
  fedavg   sync rounds over all clients with a deadline (late updates dropped)

    python benchmarks/experiments/staleness_study.py                  # the whole study, ~15-25 min on 2 CPU cores
    python benchmarks/experiments/staleness_study.py --settings nk10 --betas 0.3 --seeds 0 1 2
    python benchmarks/experiments/staleness_study.py --fairness       # Fig. 5: the isolated class over time

Prints a Markdown table (mean over seeds; a dash = target not reached in the horizon) and writes
runs under --out (default runs/staleness_study) plus study.csv and accuracy_vs_time.png there (--fairness:
class9_vs_time.png).  It is an early, untuned pilot (no tuning, no declared claims): the docs publish the
tuned reproductions of benchmarks/experiments/reproduce_papers.py instead, and none of its figures.
Finished runs are reused (delete the run directory to recompute).
"""

from __future__ import annotations

import argparse
import copy
import csv
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models: one thread avoids oversubscription

import torch  # noqa: E402

from asyncfl.config import read_scenario, validate_scenario  # noqa: E402
from asyncfl.output.reading import read_summary  # noqa: E402
from asyncfl.runner.start import run_scenario  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {"nk10": "scenarios/papers/fedhist_nk10.yaml", "nk100": "scenarios/papers/fedhist_nk100.yaml"}
BETAS = {"0.3": {"kind": "dirichlet", "alpha": 0.3}, "1.0": {"kind": "dirichlet", "alpha": 1.0}, "iid": {"kind": "iid"}}
ALGORITHMS = ("fedhist", "fedbuff", "fedasync", "fedavg")
SYNC_DEADLINE_S = {"nk10": 4.0, "nk100": 8.0}  # ~80th percentile of one task's duration (virtual seconds)


def variant(raw: dict, algorithm: str, setting: str) -> dict:
    """The base scenario with only ``algorithm`` / ``server`` (and the evaluation cadence) replaced."""
    raw = copy.deepcopy(raw)
    server = raw["server"]
    if algorithm == "fedbuff":
        raw["algorithm"] = {"name": "fedbuff"}
    elif algorithm == "fedasync":
        raw["algorithm"] = {"name": "fedasync", "keep_versions": 4 * server["concurrency"]}  # = max_staleness
        raw["server"] = {**server, "k": 1, "max_staleness": 4 * server["concurrency"]}
        raw["eval"] = {**raw["eval"], "every_rounds": raw["eval"]["every_rounds"] * server["k"]}  # same per update
    elif algorithm == "fedavg":
        raw["algorithm"] = {"name": "fedavg"}
        raw["server"] = {"mode": "sync", "deadline_s": SYNC_DEADLINE_S[setting]}
        raw["eval"] = {**raw["eval"], "every_rounds": 1}
    return raw


def updates_to_target(run: Path, target: float) -> int | None:
    total = 0
    with open(run / "metrics.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            total += int(row["updates"])
            if row["test_accuracy"] and float(row["test_accuracy"]) >= target:
                return total
    return None


def run_one(setting: str, beta: str, algorithm: str, seed: int, out: Path) -> dict:
    raw = read_scenario(ROOT / SETTINGS[setting])
    raw["data"] = {**raw["data"], "partition": BETAS[beta]}
    raw["seed"] = seed
    raw["name"] = f"{setting}_beta{beta}_{algorithm}_s{seed}"
    run_dir = out / raw["name"]
    if not (run_dir / "summary.json").is_file():
        run_scenario(validate_scenario(variant(raw, algorithm, setting), source=raw["name"]), run_dir)

    summary = read_summary(run_dir)
    target = summary["target_accuracy"]
    return {
        "setting": setting,
        "beta": beta,
        "algorithm": algorithm,
        "seed": seed,
        "time_to_target_s": summary["time_to_target_s"],
        "rounds_to_target": summary["rounds_to_target"],
        "updates_to_target": updates_to_target(run_dir, target),
        "final_accuracy": summary["final_accuracy"],
        "best_accuracy": summary["best_accuracy"],
        "rounds": summary["rounds"],
        "staleness_mean": summary["staleness_mean"],
        "target": target,
        "run_dir": str(run_dir),
    }


def _mean(values: list) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "-"
    text = f"{statistics.fmean(got):.3g}" if isinstance(got[0], float) else f"{statistics.fmean(got):.0f}"
    return text if len(got) == len(values) else f"{text} ({len(got)}/{len(values)})"


def table(rows: list[dict]) -> str:
    lines = [
        "| N/K | beta | algorithm | time to target (virtual s) | rounds to target | updates to target "
        "| final accuracy | mean staleness |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    keys = sorted({(r["setting"], r["beta"], r["algorithm"]) for r in rows}, key=_order)
    for setting, beta, algorithm in keys:
        group = [r for r in rows if (r["setting"], r["beta"], r["algorithm"]) == (setting, beta, algorithm)]
        final = [r["final_accuracy"] for r in group]
        stale = [r["staleness_mean"] for r in group]
        lines.append(
            f"| {setting[2:]} | {beta} | {algorithm} | {_mean([r['time_to_target_s'] for r in group])} "
            f"| {_mean([r['rounds_to_target'] for r in group])} | {_mean([r['updates_to_target'] for r in group])} "
            f"| {statistics.fmean(final):.3f} | {_mean(stale)} |"
        )
    return "\n".join(lines)


def _order(key: tuple[str, str, str]) -> tuple:
    setting, beta, algorithm = key
    return (list(SETTINGS).index(setting), list(BETAS).index(beta), ALGORITHMS.index(algorithm))


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = [s for s in SETTINGS if any(r["setting"] == s for r in rows)]
    betas = [b for b in BETAS if any(r["beta"] == b for r in rows)]
    fig, axes = plt.subplots(
        len(settings),
        len(betas),
        figsize=(4.2 * len(betas), 3.4 * len(settings)),
        squeeze=False,
        constrained_layout=True,
    )
    for ax, (setting, beta) in zip(axes.flat, [(s, b) for s in settings for b in betas]):
        for i, algorithm in enumerate(ALGORITHMS):
            runs = [r for r in rows if (r["setting"], r["beta"], r["algorithm"]) == (setting, beta, algorithm)]
            for j, r in enumerate(runs):
                with open(Path(r["run_dir"]) / "metrics.csv", newline="") as handle:
                    pts = [(float(m["time"]), float(m["test_accuracy"])) for m in csv.DictReader(handle)
                           if m["test_accuracy"]]  # fmt: skip
                ax.plot(*zip(*pts), color=f"C{i}", lw=1.2, alpha=0.8, label=algorithm if j == 0 else None)
        if runs:
            ax.axhline(runs[0]["target"], color="grey", ls=":", lw=1, label="target")
        ax.set_title(f"N/K = {setting[2:]}, beta = {beta}")
        ax.set_xlabel("virtual wall-clock time (s)")
        ax.set_ylabel("test accuracy")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.savefig(path, dpi=110)
    plt.close(fig)


FAIRNESS = "scenarios/papers/fedhist_fairness.yaml"
FAIRNESS_DEADLINE_S = 2.5  # sync: a fast client's task takes ~1.7 s, a slow (class-9) client's ~3.3 s


def fairness_raw(algorithm: str, seed: int) -> dict:
    """The fairness scenario for one algorithm and seed (before validation)."""
    raw = read_scenario(ROOT / FAIRNESS)
    raw["seed"], raw["name"] = seed, f"fairness_{algorithm}_s{seed}"
    raw = variant(raw, algorithm, "nk10")
    if algorithm == "fedavg":
        raw["server"]["deadline_s"] = FAIRNESS_DEADLINE_S
    if algorithm != "fedhist":
        raw["algorithm"]["record_weights"] = True
    return raw


def fairness_study(seeds: list[int], out: Path) -> str:
    """Fig. 5: accuracy on the class held only by slow clients, for every algorithm."""
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for algorithm in ALGORITHMS:
        for seed in seeds:
            raw = fairness_raw(algorithm, seed)
            run_dir = out / raw["name"]
            if not (run_dir / "summary.json").is_file():
                run_scenario(validate_scenario(raw, source=raw["name"]), run_dir)
            with open(run_dir / "metrics.csv", newline="") as handle:
                metrics = [m for m in csv.DictReader(handle) if m["test_accuracy"]]
            horizon = float(raw["stop"]["virtual_time_s"])
            late = [m for m in metrics if float(m["time"]) >= 0.75 * horizon]
            rows.append({
                "algorithm": algorithm,
                "seed": seed,
                "class9_last_quarter": statistics.fmean(float(m["accuracy_class_9"]) for m in late),
                "class9_final": float(metrics[-1]["accuracy_class_9"]),
                "overall_final": float(metrics[-1]["test_accuracy"]),
                "curve": [(float(m["time"]), float(m["accuracy_class_9"])) for m in metrics],
            })  # fmt: skip
    _plot_fairness(rows, out / "class9_vs_time.png")
    lines = [
        "| algorithm | class-9 accuracy, mean over the last quarter | class-9 accuracy, final "
        "| overall accuracy, final |",
        "| --- | --- | --- | --- |",
    ]
    for algorithm in ALGORITHMS:
        group = [r for r in rows if r["algorithm"] == algorithm]
        cells = [
            statistics.fmean(r[k] for r in group) for k in ("class9_last_quarter", "class9_final", "overall_final")
        ]
        lines.append(f"| {algorithm} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    return "\n".join(lines)


def _plot_fairness(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8), constrained_layout=True)
    for i, algorithm in enumerate(ALGORITHMS):
        for j, r in enumerate(x for x in rows if x["algorithm"] == algorithm):
            ax.plot(*zip(*r["curve"]), color=f"C{i}", lw=1.2, alpha=0.8, label=algorithm if j == 0 else None)
    ax.set_xlabel("virtual wall-clock time (s)")
    ax.set_ylabel("test accuracy on class 9")
    ax.set_title("class 9 only on 5 half-speed clients (Fig. 5 setting)")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--betas", nargs="+", default=list(BETAS), choices=list(BETAS))
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=ALGORITHMS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "staleness_study")
    parser.add_argument("--fairness", action="store_true", help="run the Fig. 5 experiment instead")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.fairness:
        print(fairness_study(args.seeds, args.out.parent / "fairness_study"))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for setting in args.settings:
        for beta in args.betas:
            for algorithm in args.algorithms:
                for seed in args.seeds:
                    rows.append(run_one(setting, beta, algorithm, seed, args.out))
                    r = rows[-1]
                    print(f"{r['setting']} beta={beta} {algorithm} seed={seed}: t*={r['time_to_target_s']} "
                          f"final={r['final_accuracy']:.3f}", file=sys.stderr, flush=True)  # fmt: skip
    with open(args.out / "study.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, args.out / "accuracy_vs_time.png")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
