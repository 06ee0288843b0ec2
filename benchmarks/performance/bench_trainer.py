"""Client local steps per second: sequential, batched (torch.func vmap) and fused trainers, side by side in one process.

Covers: logreg, mlp, lenet5 and cnn2d on digits (8x8 images), cohorts of 10, 100 and 1,000 jobs sharing
one base model, 10 local steps of batch 32 (plain SGD, the default training section).  The fused
trainer exists for Linear/ReLU chains (logreg, mlp) and for convolution chains (lenet5, cnn2d;
asyncfl/learn/fused_conv.py); ``auto`` is what ``trainer.executor: auto`` picks.
Scenario: 30 clients (about 38 training samples each, so every batch is full); a cohort of J jobs
cycles over them with increasing attempt numbers (distinct minibatch streams).  Sequential speed
does not depend on the cohort size, so it is timed on at most ``--seq-jobs`` jobs.  Sequential and
batched alternate ``--repeats`` times and the best time of each is kept (the machine is shared).

    python benchmarks/performance/bench_trainer.py [--models logreg mlp lenet5 cnn2d] [--cohorts 10 100 1000]
    python benchmarks/performance/bench_trainer.py --whole-runs [--repeats 1]

Writes the table to ``docs/results/trainer.md`` (``trainer_cuda.md`` with ``--device cuda``).  Training runs in
float32 as runs do (``trainer.tf32: false``); ``--tf32`` times TF32 instead.

``--whole-runs``: instead, whole runs end to end (issue 24, goal 4): ``scenarios/sync_deadline.yaml``
with 100 clients and 20 rounds, cnn1d on MNIST-1D and lenet5 on digits, once per executor
(sequential, batched, fused), each in a fresh process (``--repeats`` times interleaved, best kept).
"run" is the in-process time of building the simulation (data set included) and running it;
"training" the time inside the trainer.  Prints (and writes to docs/results/trainer_whole_runs.md)
the ratios against the sequential executor and each
run's final accuracy (the executors' deltas agree to float tolerance, but training is chaotic:
last-bit differences grow over 20 rounds, so final accuracies differ by up to a few thousandths).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from asyncfl.config.schema import Data
from asyncfl.learn.batched import BatchedTrainer, FusedTrainer, fused_layers
from asyncfl.learn.executors import float32_precision, make_trainer
from asyncfl.learn.federation import build_federation
from asyncfl.learn.fused_conv import ConvFusedTrainer, conv_layers
from asyncfl.learn.models import build_model
from asyncfl.learn.trainer import SequentialTrainer, TrainingJob
from asyncfl.learn.training import Trainer, Training

STEPS = 10  # local steps per job
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from asyncfl.output.reading import read_summary  # noqa: E402
from benchmarks.tools.quiet_machine import add_force_argument, check_load  # noqa: E402

RESULTS = ROOT / "docs" / "results" / "trainer.md"
WHOLE_RESULTS = RESULTS.with_name("trainer_whole_runs.md")  # --whole-runs


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
    elif conv_layers(model) is not None:
        trainers["fused"] = ConvFusedTrainer(model, fed, training, 0)
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
    parser.add_argument("--models", nargs="+", default=["logreg", "mlp", "lenet5", "cnn2d"])
    parser.add_argument("--cohorts", nargs="+", type=int, default=[10, 100, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seq-jobs", type=int, default=50)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--whole-runs", action="store_true", help="whole runs per executor instead (see above)")
    parser.add_argument("--tf32", action="store_true", help="TF32 on CUDA, as trainer.tf32: true (default: float32)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    add_force_argument(parser)
    args = parser.parse_args()
    if args.child:
        whole_run(*args.child)
        return
    args.load = check_load(args.force, str((WHOLE_RESULTS if args.whole_runs else RESULTS).relative_to(ROOT)))
    if args.whole_runs:
        whole_runs(args)
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    with float32_precision(Trainer(tf32=args.tf32)):  # the precision a run uses (trainer.tf32)
        trainer_table(args, device)


def trainer_table(args, device: torch.device) -> None:
    fed = build_federation(Data(dataset="digits", clients=30), 0, device)
    where = str(device)
    if device.type == "cuda":
        where = f"{torch.cuda.get_device_name(device)} (cuda, {'TF32' if args.tf32 else 'float32'})"
    header = (
        f"Client local steps per second on {where} ({torch.get_num_threads()} torch threads), digits, "
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
    results = RESULTS if device.type == "cpu" else RESULTS.with_name(f"trainer_{device.type}.md")
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text("\n".join(lines) + "\n" + args.load.note(), encoding="utf-8")


WHOLE_RUNS = {  # model -> --set overrides of scenarios/sync_deadline.yaml
    "cnn1d": ["data.dataset=mnist1d", "model.name=cnn1d"],
    "lenet5": ["model.name=lenet5"],
}


def whole_run(model: str, executor: str) -> None:
    """One run in this process: print a JSON line with its run and training seconds and accuracy."""
    import json
    import tempfile

    from asyncfl.config import load_scenario
    from asyncfl.runner.simulation import Simulation

    spent = [0.0]

    def timed_run(method):
        def wrapper(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start

        return wrapper

    for cls in (BatchedTrainer, SequentialTrainer):
        cls.run = timed_run(cls.run)
    sets = [*WHOLE_RUNS[model], "data.clients=100", "stop.rounds=20", f"trainer.executor={executor}"]
    scenario = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / "sync_deadline.yaml", sets)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        out.mkdir()
        start = time.perf_counter()
        sim = Simulation(scenario, out)
        sim.run()
        total = time.perf_counter() - start
        accuracy = read_summary(out)["final_accuracy"]
    print(
        json.dumps(
            {
                "run_s": total,
                "train_s": spent[0],
                "accuracy": accuracy,
                "trainer": type(sim.learner.jobs.trainer).__name__,
            }
        )
    )


def whole_runs(args) -> None:
    import json
    import subprocess
    import sys

    executors = ("sequential", "batched", "fused")
    title = (
        "Whole runs, scenarios/sync_deadline.yaml, 100 clients, 20 rounds, one process per run "
        f"(torch threads: the run's own, trainer.threads null = 1), best of {args.repeats}:"
    )
    print(title)
    rows = ["| model | executor | run (s) | vs sequential | training (s) | vs sequential | final accuracy | trainer |",
            "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for model in WHOLE_RUNS:
        best: dict[str, dict] = {}
        for _ in range(args.repeats):
            for executor in executors:
                command = [sys.executable, __file__, "--child", model, executor]
                done = subprocess.run(command, capture_output=True, text=True, check=True)
                record = json.loads(done.stdout.strip().splitlines()[-1])
                if executor not in best or record["run_s"] < best[executor]["run_s"]:
                    best[executor] = record
        seq = best["sequential"]
        for executor in executors:
            r = best[executor]
            print(
                f"{model:7} {executor:10} run {r['run_s']:6.2f} s ({seq['run_s'] / r['run_s']:.1f}x)  "
                f"training {r['train_s']:6.2f} s ({seq['train_s'] / r['train_s']:.1f}x)  "
                f"accuracy {r['accuracy']:.3f}  [{r['trainer']}]",
                flush=True,
            )
            rows.append(f"| {model} | {executor} | {r['run_s']:.2f} | {seq['run_s'] / r['run_s']:.1f}x | "
                        f"{r['train_s']:.2f} | {seq['train_s'] / r['train_s']:.1f}x | {r['accuracy']:.3f} | "
                        f"{r['trainer']} |")  # fmt: skip
    WHOLE_RESULTS.write_text(title + "\n\n" + "\n".join(rows) + "\n" + args.load.note(), encoding="utf-8")


if __name__ == "__main__":
    main()
