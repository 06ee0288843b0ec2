"""One scenario with each trainer, as a user runs it and in process, side by side.

For every executor (sequential, batched = torch.func vmap, fused, auto), ``--repeats`` times
interleaved, best kept (the machine is shared):

* the whole command, ``python -m asyncfl run SCENARIO --set trainer.executor=E`` in a fresh process
  (imports, data, simulation, training, evaluation, recording, figure);
* in process: ``run_scenario`` in a fresh child process that times the trainers' ``run`` calls;
  everything else in the run is "outside training" (simulation, aggregation, evaluation, recording).

    python benchmarks/performance/bench_overhead.py [scenarios/k_async.yaml] [--threads N] [--repeats 2] [--device cuda]

Writes the table to ``docs/results/<scenario name>.md``.

With ``--base REV`` it compares instead: REV's code (extracted to a temporary folder with ``git archive``, so the
repository's worktrees and stash are left alone) and the working tree run side by side, interleaved, ``--repeats``
times each with ``--executors`` (default fused), best kept; it prints, per side, the whole command, the in-process
run and its training, and the run loop's own cost: the seconds inside SimPy's ``env.run`` that are neither the
trainers' ``run`` calls nor the global model's evaluations (counted apart), also in the main thread's CPU seconds
(``loop_cpu_s``: on a loaded machine the wall clock mostly measures the other processes), the end-of-run figures
(``figures_s``) and, from a third run of the scenario with ``timing_only: true``, the loop with nothing learned
(``timing_only_loop_s``: the timing world, the servers' records and the event log, which no change to the learning
side can go below), with the ratios working tree / REV.
Nothing is written.

    python benchmarks/performance/bench_overhead.py scenarios/k_async.yaml --base c65e818 --repeats 3
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
    """One run in this process (of the checkout first on ``sys.path``: ``--root``); prints a JSON line: run,
    training, ``env.run`` and evaluation seconds, cohort sizes."""
    import simpy.core
    import torch

    if threads:
        torch.set_num_threads(threads)
    from asyncfl.config import load_scenario
    from asyncfl.learn.batched import BatchedTrainer
    from asyncfl.learn.trainer import SequentialTrainer

    try:  # the package as it is since issue 30, or as it was before (--base)
        from asyncfl.runner.learning import Learner
        from asyncfl.runner.start import run_scenario
    except ImportError:
        from asyncfl.learner import Learner

        from asyncfl.runner import run_scenario

    training, cohorts = [0.0], collections.Counter()
    # wall seconds, and this thread's CPU seconds (``*_cpu_s``: what a loaded machine changes least)
    spent = {"env_run_s": 0.0, "eval_s": 0.0, "train_cpu_s": 0.0, "env_run_cpu_s": 0.0, "eval_cpu_s": 0.0}

    def clocked(function, key, cpu_key):
        def wrapper(*args, **kwargs):
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start
                spent[cpu_key] += time.thread_time() - cpu

        return wrapper

    simpy.core.Environment.run = clocked(simpy.core.Environment.run, "env_run_s", "env_run_cpu_s")
    Learner.test_metrics = clocked(Learner.test_metrics, "eval_s", "eval_cpu_s")
    Learner.client_accuracies = clocked(Learner.client_accuracies, "eval_s", "eval_cpu_s")

    def timed(run):
        def wrapper(self, base, jobs):
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return run(self, base, jobs)
            finally:
                training[0] += time.perf_counter() - start
                spent["train_cpu_s"] += time.thread_time() - cpu
                cohorts[len(jobs)] += 1

        return wrapper

    for cls in (SequentialTrainer, BatchedTrainer):
        cls.run = timed(cls.run)
    # "timing": the same scenario with nothing learned (timing_only), the floor of the loop's cost
    overrides = ["timing_only=true"] if executor == "timing" else [f"trainer.executor={executor}", f"device={device}"]
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
                "figures_s": summary.get("figures_seconds", float("nan")),
                **spent,
            }
        )  # fmt: skip
    )


def process(command: list[str], threads: int | None, cwd: Path | None = None) -> tuple[float, str]:
    env = dict(os.environ)
    if threads:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start, done.stdout


def checkout(rev: str, into: Path) -> Path:
    """REV's files (``git archive``: no worktree is registered, nothing in the repository changes)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def side_by_side(args) -> None:
    """``--base``: REV and the working tree, interleaved; prints the best of each and the ratios."""
    tmp = Path(tempfile.mkdtemp())
    (tmp / "base").mkdir()
    sides = {"base": checkout(args.base, tmp / "base"), "work": ROOT}
    executors = args.executors.split(",")
    best: dict[tuple[str, str], dict] = {}
    print(f"{args.scenario}: {args.base} (base) vs the working tree (work), device={args.device}, "
          f"torch threads={args.threads or 'default'}, best of {args.repeats}, interleaved")  # fmt: skip
    try:
        for _ in range(args.repeats):
            for executor in executors:
                for side, root in sides.items():
                    record = measure(args, root, executor)
                    key = (side, executor)
                    for name, value in record.items():
                        if name in TIMES and (key not in best or value < best[key].get(name, float("inf"))):
                            best.setdefault(key, {})[name] = value
                    print(f"  {side:4} {executor:10} " + "  ".join(f"{n} {record[n]:6.2f}" for n in TIMES), flush=True)
    finally:
        shutil.rmtree(tmp)
    for executor in executors:
        base, work = best[("base", executor)], best[("work", executor)]
        print(f"\n{executor}: seconds, best of {args.repeats} (base -> work, ratio work/base)")
        for name in TIMES:
            print(f"  {name:22} {base[name]:7.3f} -> {work[name]:7.3f}   {work[name] / base[name]:.2f}")


# what --base compares: the whole command; in process, the run, its training, the run minus training; inside
# SimPy's run, the loop's own cost (minus training and evaluation), the same in the main thread's CPU seconds
# (a shared machine's load changes it least), and the evaluations; the end-of-run figures (summary.json's
# figures_seconds); and the loop of the same scenario with timing_only (nothing learned: the timing world, the
# servers' records and the event log), what the loop would cost if the learning side cost nothing
TIMES = (
    "command_s", "run_s", "train_s", "outside_training_s", "loop_s", "loop_cpu_s", "eval_s", "figures_s",
    "timing_only_loop_s",
)  # fmt: skip


def measure(args, root: Path, executor: str) -> dict:
    """One whole command and two in-process runs of ``root``'s code: with ``executor``, and timing only."""
    out = Path(tempfile.mkdtemp()) / "run"
    cli = [sys.executable, "-m", "asyncfl", "run", args.scenario, "--quiet", "--out", str(out)]
    cli += ["--set", f"trainer.executor={executor}", "--set", f"device={args.device}"]
    wall, _ = process(cli, args.threads, cwd=root)
    shutil.rmtree(out.parent)

    def in_process(child: str) -> dict:
        me = [sys.executable, str(Path(__file__).resolve()), args.scenario, "--child", child, "--device", args.device]
        me += ["--root", str(root)] + (["--threads", str(args.threads)] if args.threads else [])
        _, stdout = process(me, args.threads, cwd=root)
        return json.loads(stdout.strip().splitlines()[-1])

    r, timing = in_process(executor), in_process("timing")
    return {
        "command_s": wall, "run_s": r["run_s"], "train_s": r["train_s"],
        "outside_training_s": r["run_s"] - r["train_s"], "loop_s": r["env_run_s"] - r["train_s"] - r["eval_s"],
        "loop_cpu_s": r["env_run_cpu_s"] - r["train_cpu_s"] - r["eval_cpu_s"], "eval_s": r["eval_s"],
        "figures_s": r["figures_s"], "timing_only_loop_s": timing["env_run_s"],
    }  # fmt: skip


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
    parser.add_argument("--base", help="compare with this git revision, side by side (nothing is written)")
    parser.add_argument("--executors", default="fused", help="with --base: comma-separated (default fused)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)  # the checkout a child imports asyncfl from
    add_force_argument(parser)
    args = parser.parse_args()
    if args.child:
        if args.root:
            sys.path.insert(0, args.root)
        child(args.scenario, args.child, args.device, args.threads)
        return
    if args.base:
        side_by_side(args)
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
