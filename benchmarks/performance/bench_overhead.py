"""One scenario with each trainer, as a user runs it and in process, side by side.

For every executor (sequential, batched = torch.func vmap, fused, auto), ``--repeats`` times
interleaved, best kept (the machine is shared):

* the whole command, ``python -m asyncfl run SCENARIO --set trainer.executor=E`` in a fresh process
  (imports, data, simulation, training, evaluation, recording, figure);
* in process: ``run_scenario`` in a fresh child process that times the trainers' ``run`` calls;
  everything else in the run is "outside training" (simulation, aggregation, evaluation, recording).

    python benchmarks/performance/bench_overhead.py [scenarios/k_async.yaml] [--threads N] [--repeats 2] [--device cuda]

Writes the table to ``docs/results/<scenario name>.md``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from asyncfl.output.reading import read_summary  # noqa: E402
from benchmarks.tools.quiet_machine import add_force_argument, check_load  # noqa: E402

EXECUTORS = ("sequential", "batched", "fused", "auto")


def child(scenario: str, executor: str, device: str, threads: int | None) -> None:
    """One run in this process; prints a JSON line: run and training seconds, cohort sizes."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    from asyncfl.config import load_scenario
    from asyncfl.learn.batched import BatchedTrainer
    from asyncfl.learn.trainer import SequentialTrainer
    from asyncfl.runner import run_scenario

    training, cohorts = [0.0], collections.Counter()

    def timed(run):
        def wrapper(self, base, jobs):
            start = time.perf_counter()
            try:
                return run(self, base, jobs)
            finally:
                training[0] += time.perf_counter() - start
                cohorts[len(jobs)] += 1

        return wrapper

    for cls in (SequentialTrainer, BatchedTrainer):
        cls.run = timed(cls.run)
    overrides = [f"trainer.executor={executor}", f"device={device}"]
    out = Path(tempfile.mkdtemp()) / "run"
    start = time.perf_counter()
    run_scenario(load_scenario(Path(scenario), overrides), out)
    total = time.perf_counter() - start
    summary = read_summary(out)
    shutil.rmtree(out.parent)
    print(
        json.dumps(
            {
                "run_s": total,
                "train_s": training[0],
                "cohorts": dict(cohorts),
                "trainer": summary["trainer"],
                "computed": summary["training_jobs_computed"],
                "used": summary["updates"],
            }
        )  # fmt: skip
    )


def process(command: list[str], threads: int | None) -> tuple[float, str]:
    env = dict(os.environ)
    if threads:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start, done.stdout


def cohort_summary(cohorts: dict) -> str:
    sizes = [int(k) for k, n in cohorts.items() for _ in range(n)]
    sizes.sort()
    return f"{len(sizes)} calls, median {sizes[len(sizes) // 2]} jobs (max {sizes[-1]})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default="scenarios/k_async.yaml")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    add_force_argument(parser)
    args = parser.parse_args()
    if args.child:
        child(args.scenario, args.child, args.device, args.threads)
        return
    name = Path(args.scenario).stem
    load = check_load(args.force, f"docs/results/{name}.md")
    print(f"{args.scenario}: device={args.device}, torch threads={args.threads or 'default'}, repeats={args.repeats}")
    command: dict[str, tuple[float, str]] = {}
    inproc: dict[str, dict] = {}
    for _ in range(args.repeats):
        for executor in EXECUTORS:
            out = Path(tempfile.mkdtemp()) / "run"
            cli = [sys.executable, "-m", "asyncfl", "run", args.scenario, "--quiet", "--out", str(out)]
            cli += ["--set", f"trainer.executor={executor}", "--set", f"device={args.device}"]
            wall, _ = process(cli, args.threads)
            trainer = read_summary(out)["trainer"]
            shutil.rmtree(out.parent)
            if executor not in command or wall < command[executor][0]:
                command[executor] = (wall, trainer)
            me = [sys.executable, __file__, args.scenario, "--child", executor, "--device", args.device]
            _, stdout = process(me + (["--threads", str(args.threads)] if args.threads else []), args.threads)
            record = json.loads(stdout.strip().splitlines()[-1])
            if executor not in inproc or record["run_s"] < inproc[executor]["run_s"]:
                inproc[executor] = record
            print(f"  {executor:10} command {wall:6.2f} s   in process {record['run_s']:6.2f} s", flush=True)
    table = render(args, name, command, inproc)
    print(table)
    path = ROOT / "docs" / "results" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(table + load.note(), encoding="utf-8")


def render(args, name: str, command: dict, inproc: dict) -> str:
    threads = args.threads or "torch's default"
    lines = [
        f"`{args.scenario}` on {args.device} ({threads} torch threads), best of {args.repeats} fresh processes per "
        "executor, run side by side:",
        "",
        "| executor | trainer | whole command s | in process: run s | training s | outside training | cohorts "
        "| jobs computed / used |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for executor in EXECUTORS:
        r = inproc[executor]
        outside = r["run_s"] - r["train_s"]
        lines.append(
            f"| {executor} | {command[executor][1]} | {command[executor][0]:.2f} | {r['run_s']:.2f} | "
            f"{r['train_s']:.2f} | {outside:.2f} s ({outside / r['run_s']:.0%}) | {cohort_summary(r['cohorts'])} "
            f"| {r['computed']:,} / {r['used']:,} |"
        )
    seq_cmd, seq_run = command["sequential"][0], inproc["sequential"]["run_s"]
    lines += [
        "",
        "Speed-up over the sequential trainer, whole command (in process): "
        + ", ".join(f"{e} {seq_cmd / command[e][0]:.1f}× ({seq_run / inproc[e]['run_s']:.1f}×)" for e in EXECUTORS[1:])
        + ".",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
