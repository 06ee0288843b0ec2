"""End to end: one scenario with the sequential and the batched trainer, and the share of run time
spent outside training (simulation, aggregation, evaluation, recording), in one process.

    python benchmarks/bench_overhead.py [scenarios/k_async.yaml] [--threads N] [--repeats 1]

Training time is the time spent inside the trainers' ``run``; everything else is overhead.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import torch

from asyncfl.config import load_scenario
from asyncfl.learn.batched import BatchedTrainer
from asyncfl.learn.trainer import SequentialTrainer
from asyncfl.runner import run_scenario

TRAINING = [0.0]


def _timed(run):
    def wrapper(self, base, jobs):
        start = time.perf_counter()
        try:
            return run(self, base, jobs)
        finally:
            TRAINING[0] += time.perf_counter() - start

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default="scenarios/k_async.yaml")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    for cls in (SequentialTrainer, BatchedTrainer):
        cls.run = _timed(cls.run)
    print(f"{args.scenario}: torch threads={torch.get_num_threads()}")
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.repeats):
        for executor in ("sequential", "batched", "auto"):
            scenario = load_scenario(Path(args.scenario), [f"trainer.executor={executor}", "output.plot=false"])
            out = Path(tempfile.mkdtemp()) / "run"
            TRAINING[0] = 0.0
            start = time.perf_counter()
            run_scenario(scenario, out)
            total = time.perf_counter() - start
            shutil.rmtree(out.parent)
            if executor not in best or total < best[executor][0]:
                best[executor] = (total, TRAINING[0])
    for executor, (total, training) in best.items():
        print(
            f"{executor:10} run {total:7.1f} s  training {training:7.1f} s  outside training "
            f"{total - training:6.1f} s ({(total - training) / total:5.1%})"
        )
    print(f"speed-up batched vs sequential: {best['sequential'][0] / best['batched'][0]:.1f}x")


if __name__ == "__main__":
    main()
