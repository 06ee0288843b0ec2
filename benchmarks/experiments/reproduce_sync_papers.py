"""Reproduce the client-unavailability papers' comparisons (scenarios/papers/{fedar,fedau,fl_fdms}_*.yaml).

Covers: FedAR (fedar.md section 6: FedAR vs MIFA vs FedVARP vs FedAvg vs FedAvg-known-p, p_min 0.1 / 0.5),
FedAU (fedau-slides.md: FedAU vs average-participating vs average-all vs known-p vs MIFA vs FedVARP under
Bernoulli / Markovian / cyclic participation correlated with the labels) and FL-FDMS (fl-fdms.md section 5:
Full vs Dropout vs Stale vs FL-FDMS at alpha 0.3 / 0.5 / 0.7).

    python benchmarks/experiments/reproduce_sync_papers.py all                 # offline (digits), minutes per paper
    python benchmarks/experiments/reproduce_sync_papers.py fedar --data mnist  # the *_mnist.yaml variants (data there)

Prints one Markdown table per paper: final test accuracy (mean of the last three evaluations, in
brackets the single final evaluation) for each method and setting.  Runs go to --out.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ROOT / "scenarios" / "papers"

FEDAR_METHODS = {
    "FedAR": "{name: fedar}",
    "MIFA": "{name: mifa}",
    "FedVARP": "{name: fedvarp}",
    "FedAvg": "{name: fedavg}",
    "FedAvg-known-p (IS)": "{name: fedavg_known_p}",
    "FedAU (K=50)": "{name: fedau}",
    "FL-FDMS": "{name: fl_fdms}",
}
FEDAU_METHODS = {
    "FedAU (K=inf)": "{name: fedau, cutoff: null}",
    "FedAU (K=50)": "{name: fedau, cutoff: 50}",
    "Average participating": "{name: fedavg}",
    "Average all": "{name: fedavg, weighting: all_clients}",
    "Known participation statistics": "{name: fedavg_known_p}",
    "MIFA": "{name: mifa}",
    "FedVARP": "{name: fedvarp}",
}
FL_FDMS_METHODS = {
    "Dropout (fedavg)": ["algorithm={name: fedavg}"],
    "Stale (mifa)": ["algorithm={name: mifa}"],
    "FL-FDMS": ["algorithm={name: fl_fdms, record_weights: true}"],
    "FL-FDMS + CR (0.5 Theta)": [
        "algorithm={name: fl_fdms, record_weights: true, elimination: {enabled: true, scale: 0.5}}"
    ],
}


def experiments(paper: str, data: str) -> list[tuple[str, str, str, list[str]]]:
    """(paper, setting, method, overrides) for every run; the scenario file is implied by paper/setting."""
    runs = []
    if paper == "fedar":
        for p_min in (0.1, 0.5):
            for method, algo in FEDAR_METHODS.items():
                overrides = [f"population.availability.p.low={p_min}", f"algorithm={algo}"]
                runs.append((f"fedar_{data}.yaml", f"p_min={p_min}", method, overrides))
    elif paper == "fedau":
        for pattern in ("bernoulli", "markov", "cyclic"):
            for method, algo in FEDAU_METHODS.items():
                runs.append((f"fedau_{data}_{pattern}.yaml", pattern, method, [f"algorithm={algo}"]))
    elif paper == "fl_fdms":
        for alpha in (0.3, 0.5, 0.7):
            for method, overrides in FL_FDMS_METHODS.items():
                dropout = f"population.availability.alpha={alpha}"
                runs.append((f"fl_fdms_{data}.yaml", f"alpha={alpha}", method, [dropout, *overrides]))
            full = ["population.availability={kind: always}", "algorithm={name: fedavg}"]
            runs.append((f"fl_fdms_{data}.yaml", f"alpha={alpha}", "Full", full))
    return runs


def run_one(job: tuple[str, str, str, list[str], list[str], Path]) -> dict:
    import torch

    from asyncfl.config import load_scenario
    from asyncfl.runner.start import run_scenario

    torch.set_num_threads(1)  # one core per run; --jobs runs side by side
    file, setting, method, overrides, extra, out = job
    scenario = load_scenario(PAPERS / file, [*overrides, *extra])
    started = time.perf_counter()
    run_dir = run_scenario(scenario, out, quiet=True)
    accuracies = [float(r["test_accuracy"]) for r in _rows(run_dir / "metrics.csv") if r["test_accuracy"]]
    return {
        "file": file,
        "setting": setting,
        "method": method,
        "final": accuracies[-1],
        "last3": statistics.fmean(accuracies[-3:]),
        "seconds": time.perf_counter() - started,
        "run_dir": str(run_dir),
        "seed": scenario.seed,
    }


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def fl_fdms_diagnostics(run_dir: Path, clusters: int) -> str:
    """Mean final similarity within vs across clusters, and similarity computations saved."""
    from asyncfl.learn.partition import cluster_of_clients

    rows = _rows(run_dir / "fl_fdms_similarity.csv")
    matrix = np.array([[float(v) if v else np.nan for k, v in r.items() if k != "client"] for r in rows])
    ids = cluster_of_clients(len(rows), clusters)
    same = ids[:, None] == ids[None, :]
    off_diagonal = ~np.eye(len(rows), dtype=bool)
    intra, inter = np.nanmean(matrix[same & off_diagonal]), np.nanmean(matrix[~same])
    log = _rows(run_dir / "fl_fdms_similarity_computations.csv")
    computed = sum(int(r["pairs_computed"]) for r in log)
    total = sum(int(r["pairs_all"]) for r in log)
    subs = _rows(run_dir / "weights.csv")
    dropped = [r for r in subs if r["substitute"] not in ("", "mean")]
    same_cluster = sum(ids[int(r["client"])] == ids[int(r["substitute"])] for r in dropped)
    return (
        f"similarity within clusters {intra:.3f} vs across {inter:.3f}; substitutes from the own cluster "
        f"{same_cluster}/{len(dropped)}; similarity computations {computed}/{total}"
    )


def table(results: list[dict], seeds: int) -> str:
    settings = list(dict.fromkeys(r["setting"] for r in results))
    methods = list(dict.fromkeys(r["method"] for r in results))
    lines = ["| method | " + " | ".join(settings) + " |", "|---" * (len(settings) + 1) + "|"]
    for method in methods:
        cells = []
        for setting in settings:
            rs = [r for r in results if r["method"] == method and r["setting"] == setting]
            if not rs:
                cells.append("")
                continue
            last3 = [r["last3"] for r in rs]
            spread = f" ± {statistics.stdev(last3):.3f}" if seeds > 1 else ""
            cells.append(f"{statistics.fmean(last3):.3f}{spread} ({statistics.fmean(r['final'] for r in rs):.3f})")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paper", choices=("fedar", "fedau", "fl_fdms", "all"))
    parser.add_argument("--data", default="digits", choices=("digits", "mnist", "cifar10"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--rounds", type=int, default=None, help="override stop.rounds")
    parser.add_argument("--jobs", type=int, default=2, help="runs side by side (one torch thread each)")
    parser.add_argument("--out", type=Path, default=Path("runs/reproduce_sync"))
    args = parser.parse_args(argv)
    papers = ("fedar", "fedau", "fl_fdms") if args.paper == "all" else (args.paper,)
    if args.data != "digits" and any(p == "fedau" for p in papers):
        print("fedau has offline (digits) scenarios only; running it on digits", file=sys.stderr)
    for paper in papers:
        data = "digits" if paper == "fedau" else args.data
        jobs = []
        for i, (file, setting, method, overrides) in enumerate(experiments(paper, data)):
            for seed in args.seeds:
                extra = [f"seed={seed}", "output.plot=false", "eval.per_client=false"]
                if args.rounds:
                    extra.append(f"stop.rounds={args.rounds}")
                jobs.append((file, setting, method, overrides, extra, args.out / paper / f"{i:02d}_seed{seed}"))
        started = time.perf_counter()
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(run_one, jobs))
        print(f"\n### {paper} ({data}; {len(jobs)} runs, {time.perf_counter() - started:.0f} s)\n")
        print(table(results, len(args.seeds)))
        if paper == "fl_fdms":
            for r in results:
                if r["method"].startswith("FL-FDMS") and r["seed"] == args.seeds[0]:
                    print(f"- {r['setting']} {r['method']}: {fl_fdms_diagnostics(Path(r['run_dir']), 5)}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
