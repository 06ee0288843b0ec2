"""Fused batched LSTM training against the one-by-one reference, side by side in one process.

Covers: ``asyncfl.learn.fused_lstm.LstmFusedTrainer`` (a cohort's character LSTMs as one ``bmm`` per time
step) against ``SequentialTrainer`` (torch's own LSTM, one client after the other) on LEAF's Shakespeare model.
Scenario: ``--clients`` roles of ``data.dataset: shakespeare`` (role_seed 0), one job each of ``--steps``
local steps of batch ``--batch`` (LEAF: 10) from the same base (``--bases distinct``: one copy of it per job,
as jobs from different model versions arrive in K-async, so no step runs on shared weights); the windows are
LEAF's 80 characters.  Both trainers get one warm-up job first; then each trains the whole cohort
``--repeats`` times, the two trainers taking turns (a shared machine's load changes over a run), and the
deltas are compared (largest absolute difference).  Prints one line per trainer (least and median time)
and the ratios of the least and of the median times.

    python benchmarks/performance/bench_lstm.py                       # 100 clients, 1 step, 256 units, CPU
    python benchmarks/performance/bench_lstm.py --device cuda --steps 5

Keep it short on a shared machine: the sequential side costs 0.1 s per client-step on a quiet core and
0.3-0.4 s at load average 10, per repeat.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from asyncfl.config.schema import Data
from asyncfl.learn.federation import build_federation
from asyncfl.learn.fused_lstm import LstmFusedTrainer
from asyncfl.learn.models import build_model
from asyncfl.learn.models.lstm_shakespeare import LstmShakespeare
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Training


def timed(trainer, base, jobs) -> tuple[float, list]:
    cuda = (base if isinstance(base, torch.Tensor) else base[0]).device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    results = trainer.run(base, jobs)
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (asyncfl's default here: 1)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each trainer, taking turns")
    parser.add_argument(
        "--bases", choices=["shared", "distinct"], default="shared", help="one base for all jobs or a copy each"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    data = Data(dataset="shakespeare", clients=args.clients, test_fraction=0.1)
    fed = build_federation(data, 0, device)
    torch.manual_seed(0)
    model = build_model("lstm_shakespeare", (80,), 80, params=LstmShakespeare(units=args.units)).to(device)
    base = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    training = Training(batch_size=args.batch, lr=0.8)
    trainers = {
        "sequential": SequentialTrainer(model, fed, training, 0),
        "fused": LstmFusedTrainer(model, fed, training, 0),
    }
    jobs = [TrainingJob(k, 0, 0, args.steps) for k in range(args.clients)]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")  # before: the runs add their own
    bases = base if args.bases == "shared" else [base.clone() for _ in jobs]
    for trainer in trainers.values():  # warm-up: imports and first allocations are not the steady rate
        timed(trainer, base, jobs[:1])
    seconds, results = {name: [] for name in trainers}, {}
    for _ in range(args.repeats):
        for name, trainer in trainers.items():
            took, results[name] = timed(trainer, bases, jobs)
            seconds[name].append(took)
    gap = max(float((a.delta - b.delta).abs().max()) for a, b in zip(results["sequential"], results["fused"]))
    print(
        f"device {device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else os.cpu_count()} "
        f"{'GPU' if device.type == 'cuda' else 'cores'}), threads {args.threads}, load average before {load:.1f}; "
        f"{args.clients} clients x {args.steps} steps of batch {args.batch}, LSTM 2 x {args.units}, {args.bases} "
        f"bases, fused chunk {trainers['fused'].chunk_size}, {args.repeats} repeats"
    )
    least = {name: min(times) for name, times in seconds.items()}
    median = {name: statistics.median(times) for name, times in seconds.items()}
    client_steps = args.clients * args.steps
    for name in trainers:
        print(
            f"  {name:10s} least {least[name]:8.2f} s, median {median[name]:8.2f} s  "
            f"({1000 * least[name] / client_steps:.1f} ms per client-step at least)"
        )
    print(
        f"  ratio sequential / fused: {least['sequential'] / least['fused']:.2f}x (least), "
        f"{median['sequential'] / median['fused']:.2f}x (median); largest delta gap {gap:.2e}; "
        f"load average after {os.getloadavg()[0] if hasattr(os, 'getloadavg') else float('nan'):.1f}"
    )


if __name__ == "__main__":
    main()
