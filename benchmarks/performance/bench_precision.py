"""``trainer.precision: bfloat16`` against float32 (issue 48, item 4's lower-precision lever): client local steps
per second, final test accuracy and the largest delta difference after one job, side by side, for an MLP, the
FLGo CNN (``cnn2d``) and ResNet-18 (GroupNorm) on ``digits`` (8x8 images; nothing is downloaded).

For each model and precision:

* speed: ``trainer.executor: auto``'s trainer (in bfloat16 the fused convolution kernel is out, so ``cnn2d``
  runs on ``vmap`` there: the "executor" column names what ran) trains a cohort of ``--cohort`` jobs of
  ``--steps`` local steps from one base, after a one-job warm-up, best of ``--repeats``; the rate is client
  steps per wall second and per CPU second of this process (a busy machine's time slicing skews wall time);
* accuracy: the same scenario run end to end (sync FedAvg, ``--clients`` clients, ``--per-round`` a round,
  ``--rounds`` rounds, ``--steps`` local steps, seed 0, every run file and figure written, as a user runs it),
  its last test accuracy in metrics.csv and its wall time;
* delta gap: one job (client 0, ``--steps`` steps) in both precisions from the same base: the largest
  ``|delta_bf16 - delta_f32|`` over the largest ``|delta_f32|``.

    python benchmarks/performance/bench_precision.py            # CPU, a few minutes on 2 quiet cores
    python benchmarks/performance/bench_precision.py --quick    # a smoke test: seconds
    python benchmarks/performance/bench_precision.py --device cuda --markdown docs/results/precision_cuda.md
    python benchmarks/performance/bench_precision.py --markdown FILE --force   # on a busy machine, marked so

bfloat16 pays where the hardware computes it natively (AMX on recent Xeons, tensor cores on GPUs); elsewhere
autocast's casts can make it slower than float32.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

from asyncfl.config import validate_scenario
from asyncfl.config.schema import Data
from asyncfl.learn.executors import float32_precision, make_trainer
from asyncfl.learn.federation import build_federation
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import TrainingJob
from asyncfl.learn.training import Trainer, Training
from asyncfl.output.reading import read_csv
from asyncfl.runner.start import run_scenario

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from benchmarks.tools.quiet_machine import add_force_argument, check_load, device_description  # noqa: E402

MODELS = ["mlp", "cnn2d", "resnet18"]
PRECISIONS = ["float32", "bfloat16"]


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def speed(trainer, base: torch.Tensor, jobs: list, device: torch.device, repeats: int) -> tuple[float, float]:
    """(client steps per wall second, per CPU second) of ``trainer`` on ``jobs``, best of ``repeats``."""
    trainer.run(base, jobs[:1])  # warm-up: imports, allocations, algorithm searches
    wall = cpu = float("inf")
    for _ in range(repeats):
        sync(device)
        start, cpu_start = time.perf_counter(), time.process_time()
        trainer.run(base, jobs)
        sync(device)
        wall, cpu = min(wall, time.perf_counter() - start), min(cpu, time.process_time() - cpu_start)
    steps = sum(job.steps for job in jobs)
    return steps / wall, steps / cpu


def whole_run(name: str, precision: str, args, device: torch.device) -> tuple[float, float]:
    """(last test accuracy, wall seconds) of the scenario run in ``precision`` as a user runs it: every run file
    and figure written."""
    scenario = validate_scenario(
        {
            "seed": 0,
            "device": device.type,
            "data": {"dataset": "digits", "clients": args.clients},
            "model": {"name": name},
            "training": {"local_steps": args.steps, "batch_size": args.batch, "lr": args.lr},
            "trainer": {"precision": precision},
            "server": {"mode": "sync", "clients_per_round": args.per_round},
            "stop": {"rounds": args.rounds},
        },
        source="bench_precision",
    )
    with tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        run_dir = run_scenario(scenario, Path(tmp) / f"{name}_{precision}", quiet=True)
        seconds = time.perf_counter() - began
        return float(read_csv(run_dir / "metrics.csv")[-1]["test_accuracy"]), seconds


def bench(name: str, args, device: torch.device) -> dict:
    fed = build_federation(Data(dataset="digits", clients=args.clients), 0, device)
    torch.manual_seed(0)
    model = build_model(name, fed.input_shape, fed.num_classes).to(device)
    base = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    training = Training(local_steps=args.steps, batch_size=args.batch, lr=args.lr)
    jobs = [TrainingJob(j % fed.num_clients, 0, j // fed.num_clients, args.steps) for j in range(args.cohort)]
    row: dict = {"model": name}
    deltas = {}
    for precision in PRECISIONS:
        trainer = make_trainer(model, fed, training, 0, Trainer(precision=precision), device)
        row[precision] = {"executor": type(trainer).__name__}
        row[precision]["rate"], row[precision]["cpu_rate"] = speed(trainer, base, jobs, device, args.repeats)
        deltas[precision] = trainer.run(base, jobs[:1])[0].delta
        row[precision]["accuracy"], row[precision]["run_s"] = whole_run(name, precision, args, device)
    reference = deltas["float32"]
    row["gap"] = float((deltas["bfloat16"] - reference).abs().max() / reference.abs().max())
    return row


def row_text(r: dict) -> str:
    f, b = r["float32"], r["bfloat16"]
    return (
        f"{r['model']:9} float32 {f['rate']:8.1f} steps/s ({f['executor']}, acc {f['accuracy']:.4f})  "
        f"bfloat16 {b['rate']:8.1f} steps/s ({b['executor']}, acc {b['accuracy']:.4f})  "
        f"{b['rate'] / f['rate']:5.2f}x (CPU time {b['cpu_rate'] / f['cpu_rate']:5.2f}x)  delta gap {r['gap']:.1e}"
    )


def markdown(header: str, rows: list[dict]) -> str:
    lines = [
        header,
        "",
        "| model | float32 steps/s | bfloat16 steps/s | bfloat16 / float32 | in CPU time | float32 accuracy "
        "| bfloat16 accuracy | whole run s, figures on (float32 / bfloat16) | largest delta gap (relative) "
        "| executors (float32 / bfloat16) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f, b = r["float32"], r["bfloat16"]
        lines.append(
            f"| {r['model']} | {f['rate']:,.1f} | {b['rate']:,.1f} | {b['rate'] / f['rate']:.2f}× | "
            f"{b['cpu_rate'] / f['cpu_rate']:.2f}× | {f['accuracy']:.4f} | {b['accuracy']:.4f} | "
            f"{f['run_s']:.1f} / {b['run_s']:.1f} | {r['gap']:.1e} | "
            f"{f['executor']} / {b['executor']} |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=MODELS)
    parser.add_argument("--cohort", type=int, default=10, help="jobs in the timed cohort")
    parser.add_argument("--steps", type=int, default=5, help="local steps per job")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--per-round", type=int, default=5, help="clients per round of the accuracy run")
    parser.add_argument("--rounds", type=int, default=10, help="rounds of the accuracy run")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs of each trainer (best kept)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (a GPU is optional)")
    parser.add_argument("--quick", action="store_true", help="2 rounds, cohort 2, 2 steps: a smoke test")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table to this file")
    add_force_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.cohort, args.steps, args.rounds, args.repeats, args.clients, args.per_round = 2, 2, 2, 1, 6, 2
    return args


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    load = check_load(args.force or args.markdown is None, str(args.markdown or "nothing"))
    device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    header = (
        f"trainer.precision float32 against bfloat16 on {device_description(device)}, {torch.get_num_threads()} torch "
        f"thread(s); digits; speed: a cohort of {args.cohort} jobs x {args.steps} steps (batch {args.batch}), best "
        f"of {args.repeats}; accuracy: sync FedAvg, {args.clients} clients, {args.per_round} a round, {args.rounds} "
        f"rounds, lr {args.lr}, seed 0:"
    )
    print(header, flush=True)
    print(f"Machine: {load.reading()}.", flush=True)
    rows = []
    with float32_precision(Trainer()):  # no TF32 on either side: the float32 column is IEEE float32
        for name in args.models:
            rows.append(bench(name, args, device))
            print(row_text(rows[-1]), flush=True)
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown(header, rows) + load.note(), encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
