"""Client local steps per second: sequential, batched (torch.func vmap) and fused trainers, side by side in one process.

Covers: logreg, mlp and lenet5 on digits (8x8 images), cohorts of 10, 100 and 1,000 jobs sharing one
base model, 10 local steps of batch 32 (plain SGD, the default training section).  The fused trainer
exists for Linear/ReLU chains only (logreg, mlp); ``auto`` is what ``trainer.executor: auto`` picks.
Scenario: 30 clients (about 38 training samples each, so every batch is full); a cohort of J jobs
cycles over them with increasing attempt numbers (distinct minibatch streams).  Sequential speed
does not depend on the cohort size, so it is timed on at most ``--seq-jobs`` jobs.  Sequential and
batched alternate ``--repeats`` times and the best time of each is kept (the machine is shared).

    python benchmarks/performance/bench_trainer.py [--models logreg mlp lenet5] [--cohorts 10 100 1000] [--device cuda]

Writes the table to ``docs/results/trainer.md``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from asyncfl.config.schema import Data
from asyncfl.learn.batched import BatchedTrainer, FusedTrainer, fused_layers
from asyncfl.learn.executors import make_trainer
from asyncfl.learn.federation import build_federation
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Trainer, Training

STEPS = 10  # local steps per job
RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results" / "trainer.md"


def timed(trainer, base, jobs) -> float:
    start = time.perf_counter()
    trainer.run(base, jobs)
    return time.perf_counter() - start


def bench(model_name: str, cohort: int, args, fed, device) -> dict:
    torch.manual_seed(0)
    model = build_model(model_name, fed.input_shape, fed.num_classes).to(device)
    base = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    training = Training(local_steps=STEPS)
    jobs = [TrainingJob(j % fed.num_clients, 0, j // fed.num_clients, STEPS) for j in range(cohort)]
    seq_jobs = jobs[: args.seq_jobs]
    trainers = {
        "sequential": SequentialTrainer(model, fed, training, 0),
        "batched": BatchedTrainer(model, fed, training, 0),
    }
    if fused_layers(model) is not None:
        trainers["fused"] = FusedTrainer(model, fed, training, 0)
    for trainer in trainers.values():  # warm-up: one-time imports and allocations are not the steady rate
        trainer.run(base, jobs[:2])
    best = {k: float("inf") for k in trainers}
    for _ in range(args.repeats):
        for name, trainer in trainers.items():
            use = seq_jobs if isinstance(trainer, SequentialTrainer) else jobs
            best[name] = min(best[name], timed(trainer, base, use) / (len(use) * STEPS))
    rate = {k: 1.0 / v for k, v in best.items()}
    auto = make_trainer(model, fed, training, 0, Trainer(executor="auto"), device)
    auto_is = getattr(auto, "kernel", "sequential").replace("vmap", "batched")
    return {"model": model_name, "cohort": cohort, **rate, "auto_is": auto_is, "auto": rate[auto_is]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["logreg", "mlp", "lenet5"])
    parser.add_argument("--cohorts", nargs="+", type=int, default=[10, 100, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seq-jobs", type=int, default=50)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    fed = build_federation(Data(dataset="digits", clients=30), 0, device)
    header = (
        f"Client local steps per second on {device} ({torch.get_num_threads()} torch threads), digits, "
        f"{STEPS} local steps of batch 32, cohorts of {', '.join(f'{c:,}' for c in args.cohorts)} jobs from one "
        f"base, best of {args.repeats} alternating runs in one process:"
    )
    print(header)
    rows = []
    for model_name in args.models:
        for cohort in args.cohorts:
            r = bench(model_name, cohort, args, fed, device)
            rows.append(r)
            fused = f"{r['fused']:,.0f}" if "fused" in r else "–"
            print(
                f"{r['model']:8} {r['cohort']:>6} sequential {r['sequential']:>9,.0f} batched {r['batched']:>9,.0f} "
                f"fused {fused:>9} auto {r['auto']:>9,.0f} ({r['auto_is']})",
                flush=True,
            )
    lines = [
        header,
        "",
        "| model | cohort | sequential | batched (vmap) | fused | auto picks | auto / sequential |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fused = f"{r['fused']:,.0f}" if "fused" in r else "–"
        lines.append(
            f"| {r['model']} | {r['cohort']:,} | {r['sequential']:,.0f} | {r['batched']:,.0f} | {fused} | "
            f"{r['auto_is']} | {r['auto'] / r['sequential']:.1f}× |"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
