"""Client local steps per second: sequential vs batched trainer, side by side in one process.

Covers: logreg, mlp and lenet5 on digits (8x8 images), cohorts of 10, 100 and 1,000 jobs sharing one
base model, 10 local steps of batch 32 (plain SGD, the default training section).
Scenario: 30 clients (about 38 training samples each, so every batch is full); a cohort of J jobs
cycles over them with increasing attempt numbers (distinct minibatch streams).  Sequential speed
does not depend on the cohort size, so it is timed on at most ``--seq-jobs`` jobs.  Sequential and
batched alternate ``--repeats`` times and the best time of each is kept (the machine is shared).

    python benchmarks/bench_trainer.py [--models logreg mlp lenet5] [--cohorts 10 100 1000]
"""

from __future__ import annotations

import argparse
import time

import torch

from asyncfl.config.schema import Data, Trainer, Training
from asyncfl.learn.batched import BatchedTrainer
from asyncfl.learn.executors import make_trainer
from asyncfl.learn.federation import build_federation
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob

STEPS = 10  # local steps per job


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
        "auto": make_trainer(model, fed, training, 0, Trainer(executor="auto"), device),
    }
    best = {k: float("inf") for k in trainers}
    for _ in range(args.repeats):
        for name, trainer in trainers.items():
            use = seq_jobs if isinstance(trainer, SequentialTrainer) else jobs
            best[name] = min(best[name], timed(trainer, base, use) / (len(use) * STEPS))
    rate = {k: 1.0 / v for k, v in best.items()}
    return {"model": model_name, "cohort": cohort, **rate, "auto_is": type(trainers["auto"]).__name__}


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
    print(f"device={device} torch threads={torch.get_num_threads()}  (client local steps per second)")
    print(f"{'model':8} {'cohort':>6} {'sequential':>11} {'batched':>9} {'speedup':>8} {'auto':>9}  auto picks")
    for model_name in args.models:
        for cohort in args.cohorts:
            r = bench(model_name, cohort, args, fed, device)
            print(
                f"{r['model']:8} {r['cohort']:>6} {r['sequential']:>11,.0f} {r['batched']:>9,.0f} "
                f"{r['batched'] / r['sequential']:>7.1f}x {r['auto']:>9,.0f}  {r['auto_is']}",
                flush=True,
            )


if __name__ == "__main__":
    main()
