"""Realistic models at speed (issue 48, item 4): client local steps per second of the sequential trainer and
of the batched one, side by side in one process, for ResNet-18 (GroupNorm), LEAF's FEMNIST CNN and LEAF's
Shakespeare LSTM, cohorts of 10 and 100 jobs, with one torch thread and with torch's default.

Each model runs at its paper's sizes: ResNet-18 on CIFAR-shaped 3x32x32 images, batch 32, 10 classes;
``leaf_cnn`` on FEMNIST-shaped 1x28x28 images, batch 10, 62 classes; ``lstm_shakespeare`` (2 x 256 units) on
``data.dataset: shakespeare`` (LEAF's 80-character windows), batch 10.  The images are Gaussian noise built
here (nothing is downloaded; a step's cost does not depend on the pixels); a cohort of J jobs cycles over
the clients from one base model.  "batched" is the kernel ``auto`` would pick if it batched: the fused
convolution kernel for leaf_cnn, the fused LSTM for the LSTM, ``torch.func.vmap`` for ResNet-18, at the
trainer's default chunk size (``--chunk-size`` overrides it).  The sequential trainer's rate does not
depend on the cohort, so it is timed on at most ``--seq-jobs`` jobs; both trainers first warm up on one job,
then run ``--repeats`` times taking turns (best kept).  "gap" is the largest difference between the two
trainers' deltas over the jobs both computed; "auto" names what ``trainer.executor: auto`` picks.  "in CPU
time" is the same ratio in this process's CPU seconds (all its threads), which a busy machine's time slicing
does not inflate as it does wall-clock time.

    python benchmarks/performance/bench_realistic.py                  # CPU, about 10 minutes on 2 quiet cores
    python benchmarks/performance/bench_realistic.py --quick          # a smoke test: tiny inputs, seconds
    python benchmarks/performance/bench_realistic.py --device cuda --markdown docs/results/realistic_cuda.md
    python benchmarks/performance/bench_realistic.py --markdown docs/results/realistic.md

Prints the machine (CPU or GPU name, cores, load), torch's version and one line per model x cohort x
threads; ``--markdown FILE`` also writes the table there (with the machine's load, as every table in docs/).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from asyncfl.config.schema import Data
from asyncfl.learn.executors import auto_executor, float32_precision, make_trainer
from asyncfl.learn.federation import Federation, build_federation
from asyncfl.learn.fused_conv import conv_layers
from asyncfl.learn.fused_lstm import lstm_layers
from asyncfl.learn.models import build_model
from asyncfl.learn.models.lstm_shakespeare import LstmShakespeare
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Trainer, Training

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from benchmarks.tools.quiet_machine import add_force_argument, check_load, device_description  # noqa: E402


@dataclass(frozen=True)
class Workload:
    model: str
    batch: int
    steps: int  # local steps per job
    image: tuple[int, ...] = ()  # random images of this shape; () = the shakespeare data set
    classes: int = 10
    units: int = 256  # the LSTM's


FULL = {
    "resnet18": Workload("resnet18", batch=32, steps=1, image=(3, 32, 32)),
    "leaf_cnn": Workload("leaf_cnn", batch=10, steps=2, image=(1, 28, 28), classes=62),
    "lstm_shakespeare": Workload("lstm_shakespeare", batch=10, steps=1),
}
QUICK = {  # the same code paths at toy sizes
    "resnet18": Workload("resnet18", batch=4, steps=1, image=(3, 8, 8)),
    "leaf_cnn": Workload("leaf_cnn", batch=4, steps=2, image=(1, 28, 28), classes=62),
    "lstm_shakespeare": Workload("lstm_shakespeare", batch=4, steps=1, units=16),
}
CLIENTS = 20  # clients of random images: a cohort cycles over them with increasing attempt numbers


def image_federation(work: Workload, device: torch.device) -> Federation:
    """``CLIENTS`` clients of ``2 * batch`` Gaussian-noise images each, on ``device``."""
    gen = torch.Generator().manual_seed(0)
    total = CLIENTS * 2 * work.batch
    features = torch.randn(total, *work.image, generator=gen).to(device)
    labels = torch.randint(0, work.classes, (total,), generator=gen).to(device)
    train = list(torch.arange(total, device=device).view(CLIENTS, -1))
    return Federation(features, labels, train, [train[0][:0]] * CLIENTS, train[0][:0], work.classes, work.image)


def federation_for(work: Workload, device: torch.device) -> Federation:
    if work.image:
        return image_federation(work, device)
    return build_federation(Data(dataset="shakespeare", clients=CLIENTS, test_fraction=0.1), 0, device)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(trainer, base: torch.Tensor, jobs: list, device: torch.device) -> tuple[float, float, list]:
    """(wall seconds, this process's CPU seconds, results) of one ``trainer.run``."""
    sync(device)
    start, cpu = time.perf_counter(), time.process_time()
    results = trainer.run(base, jobs)
    sync(device)
    return time.perf_counter() - start, time.process_time() - cpu, results


def batched_kind(model: torch.nn.Module) -> str:
    """The batched kernel for ``model``: its fused one where it has one, else ``vmap``."""
    return "fused" if conv_layers(model) is not None or lstm_layers(model) is not None else "batched"


def bench(work: Workload, cohort: int, args, fed: Federation, device: torch.device) -> dict:
    torch.manual_seed(0)
    own = {"params": LstmShakespeare(units=work.units)} if work.model == "lstm_shakespeare" else {}
    model = build_model(work.model, fed.input_shape, fed.num_classes, **own).to(device)
    base = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    training = Training(local_steps=work.steps, batch_size=work.batch, lr=0.05)
    jobs = [TrainingJob(j % fed.num_clients, 0, j // fed.num_clients, work.steps) for j in range(cohort)]
    kind = batched_kind(model)
    trainers = {
        "sequential": SequentialTrainer(model, fed, training, 0),
        "batched": make_trainer(model, fed, training, 0, Trainer(executor=kind, chunk_size=args.chunk_size), device),
    }
    use = {"sequential": jobs[: args.seq_jobs], "batched": jobs}
    for trainer in trainers.values():  # warm-up: one-time imports, allocations, algorithm searches
        trainer.run(base, jobs[:1])
    best, best_cpu, results = {name: float("inf") for name in trainers}, {name: float("inf") for name in trainers}, {}
    for _ in range(args.repeats):
        for name, trainer in trainers.items():
            seconds, cpu_seconds, results[name] = timed(trainer, base, use[name], device)
            best[name], best_cpu[name] = min(best[name], seconds), min(best_cpu[name], cpu_seconds)
    rate = {name: len(use[name]) * work.steps / best[name] for name in trainers}
    cpu_rate = {name: len(use[name]) * work.steps / best_cpu[name] for name in trainers}
    gap = max(float((a.delta - b.delta).abs().max()) for a, b in zip(results["sequential"], results["batched"]))
    return {
        "model": work.model,
        "cohort": cohort,
        "threads": torch.get_num_threads(),
        "sequential": rate["sequential"],
        "batched": rate["batched"],
        "cpu_ratio": cpu_rate["batched"] / cpu_rate["sequential"],
        "kernel": f"{kind if kind == 'fused' else 'vmap'}, chunk {trainers['batched'].chunk_size}",
        "gap": gap,
        "auto": auto_executor(model, device),
    }


def row_text(r: dict) -> str:
    return (
        f"{r['model']:16} {r['cohort']:>4} threads {r['threads']:>2}  sequential {r['sequential']:8.2f}  "
        f"batched {r['batched']:8.2f} ({r['kernel']})  {r['batched'] / r['sequential']:5.2f}x "
        f"(CPU time: {r['cpu_ratio']:5.2f}x)  "
        f"gap {r['gap']:.1e}  auto: {r['auto']}"
    )


def markdown(header: str, rows: list[dict]) -> str:
    lines = [
        header,
        "",
        "| model | cohort | torch threads | sequential | batched | kernel | batched / sequential "
        "| in CPU time | largest delta gap | auto picks |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['cohort']} | {r['threads']} | {r['sequential']:,.2f} | {r['batched']:,.2f} | "
            f"{r['kernel']} | {r['batched'] / r['sequential']:.2f}× | {r['cpu_ratio']:.2f}× | {r['gap']:.1e} | "
            f"{r['auto']} |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=list(FULL), default=list(FULL))
    parser.add_argument("--cohorts", nargs="+", type=int, default=[10, 100])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 0], help="torch threads per pass (0: default)")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs of each trainer, taking turns")
    parser.add_argument("--seq-jobs", type=int, default=5, help="jobs the sequential trainer is timed on")
    parser.add_argument("--chunk-size", type=int, default=None, help="the batched trainer's chunk (default: its own)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (a GPU is optional)")
    parser.add_argument("--quick", action="store_true", help="toy sizes, cohorts 2 and 3, one thread: a smoke test")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table to this file")
    add_force_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.cohorts, args.seq_jobs, args.repeats, args.threads = [2, 3], 2, 1, [1]
    return args


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    load = check_load(args.force or args.markdown is None, str(args.markdown or "nothing"))
    device = torch.device(args.device)
    workloads = QUICK if args.quick else FULL
    default_threads = torch.get_num_threads()
    on = device_description(device, ", float32")
    header = (
        f"Client local steps per second on {on}, cohorts of {', '.join(map(str, args.cohorts))} jobs "
        f"from one base; sequential timed on {args.seq_jobs} jobs; best of {args.repeats}:"
    )
    print(header, flush=True)
    print(f"Machine: {load.reading()}, {default_threads} torch threads by default.", flush=True)
    rows = []
    with float32_precision(Trainer()):  # the precision runs train in (trainer.tf32: false)
        for threads in args.threads:
            torch.set_num_threads(threads or default_threads)
            for name in args.models:
                fed = federation_for(workloads[name], device)
                for cohort in args.cohorts:
                    rows.append(bench(workloads[name], cohort, args, fed, device))
                    print(row_text(rows[-1]), flush=True)
    torch.set_num_threads(default_threads)
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown(header, rows) + load.note(), encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
