"""Client local steps per second on a GPU: sequential, batched (torch.func vmap) and fused trainers for
LeNet-5 and ResNet-18 (GroupNorm) over a cohort of 1,000 clients, side by side in one process.

Data: random CIFAR-shaped images (3x32x32, 10 classes) built here on the device, ``--samples``
per client, so nothing is downloaded; a client's result does not depend on what its pixels are.
Every trainer gets the same cohort of jobs from one base model and ``--steps`` local steps of
batch ``--batch``.  The batched trainers run the whole cohort (in chunks: ``--chunk-size``, else
the trainer's memory budget, 1 GB by its rough estimate: a few ResNet-18 clients, so on a large
GPU also try ``--chunk-size 50``); the sequential one, whose rate does not depend on the cohort, runs
the first ``--seq-jobs`` jobs.  Each variant runs once to warm up (cuDNN's algorithm search,
allocations), then ``--repeats`` times; the best time is kept.  The fused trainer exists for
LeNet-5 only (a Sequential chain); ResNet-18 is batched with vmap or sequential.  A variant that
runs out of device memory is reported as such and the others still run.

    python benchmarks/performance/bench_gpu.py                        # CUDA, 1,000 clients
    python benchmarks/performance/bench_gpu.py --device cpu --tiny    # the tiny CPU configuration (tests run it)

Prints one line per model and the ratios against the sequential trainer; with ``--out`` also a
Markdown table.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from asyncfl.learn.batched import BatchedTrainer
from asyncfl.learn.executors import float32_precision
from asyncfl.learn.federation import Federation
from asyncfl.learn.fused_conv import ConvFusedTrainer, conv_layers
from asyncfl.learn.models import build_model, parameter_count
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Trainer, Training

TINY = {"clients": 3, "samples": 4, "steps": 2, "batch": 2, "image": (3, 8, 8), "seq_jobs": 1, "repeats": 1}


def image_federation(clients: int, samples: int, image: tuple[int, ...], device: torch.device) -> Federation:
    """``clients`` clients of ``samples`` random images each, every tensor on ``device``."""
    gen = torch.Generator().manual_seed(0)
    total = clients * samples
    features = torch.randn(total, *image, generator=gen).to(device)
    labels = torch.randint(0, 10, (total,), generator=gen).to(device)
    train = list(torch.arange(total, device=device).view(clients, samples))
    return Federation(features, labels, train, [train[0][:0]] * clients, train[0][:0], 10, tuple(image))


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def client_steps_per_s(trainer, base: torch.Tensor, jobs: list, repeats: int, device: torch.device) -> float | str:
    """Best rate over ``repeats`` runs after one warm-up run, or why there is none."""
    try:
        trainer.run(base, jobs[: max(2, len(jobs) // 10)])
        best = float("inf")
        for _ in range(repeats):
            sync(device)
            start = time.perf_counter()
            trainer.run(base, jobs)
            sync(device)
            best = min(best, time.perf_counter() - start)
    except torch.OutOfMemoryError:
        return "out of memory"
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return sum(job.steps for job in jobs) / best


def bench(name: str, fed: Federation, args, device: torch.device) -> dict:
    torch.manual_seed(0)
    model = build_model(name, fed.input_shape, fed.num_classes).to(device)
    base = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    training = Training(local_steps=args.steps, batch_size=args.batch)
    jobs = [TrainingJob(c, 0, 0, args.steps) for c in range(fed.num_clients)]
    trainers = {
        "sequential": (SequentialTrainer(model, fed, training, 0), jobs[: args.seq_jobs]),
        "batched": (BatchedTrainer(model, fed, training, 0, args.chunk_size), jobs),
    }
    if conv_layers(model) is not None:
        trainers["fused"] = (ConvFusedTrainer(model, fed, training, 0, args.chunk_size), jobs)
    rates = {kind: client_steps_per_s(t, base, use, args.repeats, device) for kind, (t, use) in trainers.items()}
    chunk = trainers["batched"][0].chunk_size
    return {"model": name, "params": parameter_count(model), "chunk": chunk, **rates}


def cell(value) -> str:
    return f"{value:,.0f}" if isinstance(value, float) else str(value or "–")


def render(rows: list[dict], header: str) -> str:
    def ratio(row: dict, kind: str) -> str:
        value, seq = row.get(kind), row["sequential"]
        both = isinstance(value, float) and isinstance(seq, float)
        return f"{value / seq:.1f}×" if both else "–"

    lines = [
        header,
        "",
        "| model | parameters | vmap chunk | sequential | batched (vmap) | fused | batched / seq | fused / seq |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['params']:,} | {r['chunk']} | {cell(r['sequential'])} | {cell(r['batched'])} | "
            f"{cell(r.get('fused'))} | {ratio(r, 'batched')} | {ratio(r, 'fused')} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--models", nargs="+", default=["lenet5", "resnet18"])
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=64, help="images per client")
    parser.add_argument("--steps", type=int, default=5, help="local steps per job")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--image", type=int, nargs=3, default=[3, 32, 32])
    parser.add_argument("--seq-jobs", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=None, help="clients per batched call (default: budget)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tiny", action="store_true", help=f"a configuration that runs in seconds on a CPU: {TINY}")
    parser.add_argument("--out", type=Path, help="also write the Markdown table here")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: 1 with --device cpu)")
    parser.add_argument("--tf32", action="store_true", help="TF32 on CUDA, as trainer.tf32: true (default: float32)")
    args = parser.parse_args(argv)
    if args.tiny:
        for key, value in TINY.items():
            setattr(args, key, value)
    device = torch.device(args.device)
    if args.threads or device.type == "cpu":  # one thread: what asyncfl pins for small CPU models
        torch.set_num_threads(args.threads or 1)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("no CUDA device here; use --device cpu --tiny for the CPU configuration")
    fed = image_federation(args.clients, args.samples, tuple(args.image), device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    header = (
        f"Client local steps per second on {name} ({device}), {args.clients:,} clients of {args.samples} random "
        f"{'x'.join(map(str, args.image))} images, {args.steps} local steps of batch {args.batch}, cohort of "
        f"{args.clients:,} jobs from one base (sequential timed on {args.seq_jobs}), best of {args.repeats}"
        f"{', TF32' if args.tf32 else ', float32'}:"
    )
    print(header, flush=True)
    rows = []
    for model_name in args.models:
        with float32_precision(Trainer(tf32=args.tf32)):  # the precision a run uses (trainer.tf32)
            row = bench(model_name, fed, args, device)
        rows.append(row)
        print(
            f"{model_name:9} sequential {cell(row['sequential'])} batched {cell(row['batched'])} "
            f"fused {cell(row.get('fused'))} client-steps/s",
            flush=True,
        )
    table = render(rows, header)
    print(table)
    if args.out:
        args.out.write_text(table, encoding="utf-8")
    return table


if __name__ == "__main__":
    main()
