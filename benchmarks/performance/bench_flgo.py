"""asyncfl next to FLGo, a plain per-client loop and a bare vmap script on the FLGo anchor workload.

The workload (``/work/shared/anchors/flgo/RESULTS.md``): sklearn digits, 100 clients, MLP 64-200-10
and the anchor's CNN (3x3 convolutions of 16 and 32 channels, each with ReLU and 2x2 max-pooling,
then linear 128-10: asyncfl's ``model.name: cnn2d``), FedAvg, every client every round, 5 local
SGD steps of batch 32 (lr 0.05), 30 rounds = 15,000 client-steps per model.  Each variant runs in
its own fresh process, one after the other, ``--repeats`` times interleaved; the best run of each
is kept (the machine is shared).  All run with ``--threads``
torch threads (default 1, FLGo's own default).

* ``FLGo`` -- the anchor's ``run_flgo.py`` (FLGo 0.4.4 from PyPI, ideal simulator), run with
  ``--flgo-python`` (a Python with ``flgo`` installed; it is not a dependency of asyncfl:
  ``python -m venv --system-site-packages ~/flgo-venv && ~/flgo-venv/bin/pip install flgo scikit-learn``);
  skipped, and said so, when that Python cannot import flgo;
* ``plain loop`` / ``bare vmap`` -- the anchor's ``plain_loop.py`` and ``vmap_fedavg.py``;
* ``asyncfl (in process)`` -- ``run_scenario`` of the anchor's ``asyncfl_flgo_mlp.yaml`` in a child
  process that times the trainer's ``run`` calls (training) and the simulation loop (training plus
  clock world, aggregation, recording and the two evaluations);
* ``asyncfl (command)`` -- ``python -m asyncfl run asyncfl_flgo_mlp.yaml`` as a user runs it.

"training" is client-steps per second of training time as each variant defines it: FLGo, the loop
and vmap time their round loop (local training plus aggregation); asyncfl's column is the time in
the trainer, its "loop" column the whole simulation loop.  "whole process" is the wall time of the
process, start to exit, measured here.  Every variant trains and tests on the same samples: the
anchor's frozen ``partition.json`` (100 clients of 12-20 samples, indices into the training part of
``common.load_digits_split()``) is rewritten with its indices in ``load_digits`` order plus that split's
360 test samples (:func:`partition_for_asyncfl`), and asyncfl reads it as ``data.partition: {kind:
file}`` with ``data.test_fraction: 0`` (the anchor holds nothing out of a client's data).  The table
prints asyncfl's mean client size and test-set size to show it.

    python benchmarks/performance/bench_flgo.py [--models mlp cnn] [--flgo-python ~/flgo-venv/bin/python] [--repeats 3]

Writes one table per model to ``docs/results/flgo.md``.
"""

from __future__ import annotations

import argparse
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
from benchmarks.tools.side_by_side import anchor_split, run_process  # noqa: E402

RESULTS = ROOT / "docs" / "results" / "flgo.md"
CLIENT_STEPS = 100 * 5 * 30


ASYNCFL_MODEL = {"mlp": [], "cnn": ["model.name=cnn2d"]}  # --set overrides of the anchor's MLP scenario


def partition_for_asyncfl(anchor: Path, out: Path) -> Path:
    """The anchor's ``partition.json`` as a ``file`` partition reads it: each client's indices into the
    anchor's training split mapped to ``load_digits`` order, and the anchor's test split as ``test``.

    The split is the anchor's own (``common.load_digits_split``: stratified 80/20, random_state 0),
    redone on the sample numbers so that both sides of it are known by their source index.
    """
    import numpy as np

    train, test = anchor_split()
    clients = json.loads((anchor / "partition.json").read_text(encoding="utf-8"))["clients"]
    content = {
        "description": f"{anchor / 'partition.json'} in load_digits order, with the anchor's test split",
        "clients": [train[np.asarray(c, dtype=np.int64)].tolist() for c in clients],
        "test": sorted(test.tolist()),
    }
    out.write_text(json.dumps(content), encoding="utf-8")
    return out


def asyncfl_overrides(model: str, device: str, partition: Path) -> list[str]:
    """``--set`` overrides of the anchor's MLP scenario: the model, the device and the anchor's partition."""
    return [
        f"device={device}",
        f"data.partition={{kind: file, path: {json.dumps(str(partition))}}}",
        "data.test_fraction=0",
        *ASYNCFL_MODEL[model],
    ]


def child(scenario: str, device: str, threads: int, model: str, partition: Path) -> None:
    """asyncfl in process: print one JSON line with training and loop seconds."""
    import torch

    torch.set_num_threads(threads)
    from asyncfl.config import load_scenario
    from asyncfl.learn.batched import BatchedTrainer
    from asyncfl.learn.trainer import SequentialTrainer
    from asyncfl.runner.simulation import Simulation

    spent = {"train": 0.0, "loop": 0.0, "jobs": 0, "calls": 0}

    def timed(method, key):
        def wrapper(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start
                if key == "train":
                    spent["jobs"] += len(args[1])
                    spent["calls"] += 1

        return wrapper

    for cls in (BatchedTrainer, SequentialTrainer):
        cls.run = timed(cls.run, "train")
    Simulation.run = timed(Simulation.run, "loop")
    scenario_obj = load_scenario(Path(scenario), asyncfl_overrides(model, device, partition))
    out = Path(tempfile.mkdtemp()) / "run"
    out.mkdir()
    sim = Simulation(scenario_obj, out)
    sim.run()
    fed = sim.federation
    trainer = sim.learner.jobs.trainer
    summary = read_summary(out)
    shutil.rmtree(out.parent)
    print(
        json.dumps(
            {
                **spent,
                "trainer": f"{type(trainer).__name__}",
                "accuracy": summary["final_accuracy"],
                "client_size": sum(len(c) for c in fed.client_train) / fed.num_clients,
                "test_size": len(fed.test_indices),
                "device": str(sim.device),
            }
        )  # fmt: skip
    )


def anchor_record(stdout: str) -> dict:
    line = next(x for x in stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def flgo_usable(python: str | None) -> str | None:
    """None when ``python`` can run FLGo, else why not."""
    if not python:
        return "no --flgo-python given"
    probe = subprocess.run([python, "-c", "import flgo"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"{python} cannot import flgo: {probe.stderr.strip().splitlines()[-1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--anchor", type=Path, default=Path("/work/shared/anchors/flgo"))
    parser.add_argument("--flgo-python", default=os.environ.get("FLGO_PYTHON"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", help="asyncfl's device (the anchor scripts run on the CPU)")
    parser.add_argument("--models", nargs="+", choices=sorted(ASYNCFL_MODEL), default=["mlp", "cnn"])
    parser.add_argument("--results", type=Path, default=RESULTS, help="where the tables go (default: %(default)s)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    add_force_argument(parser)
    parser.add_argument("--partition", type=Path, help=argparse.SUPPRESS)  # the child's partition file
    args = parser.parse_args()
    if args.child:
        child(args.child, args.device, args.threads, args.models[0], args.partition)
        return
    load = check_load(args.force, "docs/results/flgo.md")
    work = Path(tempfile.mkdtemp(prefix="bench_flgo_"))
    anchor = work / "anchor"  # a copy: make_task.py rewrites partition.json next to itself
    shutil.copytree(args.anchor, anchor, ignore=shutil.ignore_patterns("results"))
    scenario = str(anchor / "asyncfl_flgo_mlp.yaml")
    flgo_missing = flgo_usable(args.flgo_python)
    if flgo_missing is None:
        subprocess.run(
            [args.flgo_python, str(anchor / "make_task.py"), "--workdir", str(work / "flgo")],
            check=True,
            capture_output=True,
        )
    partition_for_asyncfl(anchor, work / "partition_asyncfl.json")  # after make_task.py, which rewrites it
    print(
        f"asyncfl device={args.device}, torch threads={args.threads}, repeats={args.repeats}; "
        f"FLGo: {flgo_missing or 'yes'}"
    )
    tables = [
        render(model, run_variants(model, args, work, scenario, flgo_missing), args, flgo_missing)
        for model in args.models
    ]
    shutil.rmtree(work)
    print("\n".join(tables))
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text("\n".join(tables) + load.note(), encoding="utf-8")


def run_variants(model: str, args, work: Path, scenario: str, flgo_missing: str | None) -> dict[str, dict]:
    """The best record of each variant on ``model`` (``mlp`` or ``cnn``)."""
    py, threads = sys.executable, str(args.threads)
    variants: dict[str, list[str]] = {}
    anchor, partition = work / "anchor", work / "partition_asyncfl.json"
    if flgo_missing is None:
        variants["FLGo"] = [args.flgo_python, str(anchor / "run_flgo.py"), "--workdir", str(work / "flgo")]
    variants["plain loop"] = [py, str(anchor / "plain_loop.py")]
    variants["bare vmap"] = [py, str(anchor / "vmap_fedavg.py")]
    for name in variants:
        variants[name] += ["--model", model, "--threads", threads, "--out", str(work / "raw.jsonl")]
    variants["asyncfl (in process)"] = [
        py,
        __file__,
        "--child",
        scenario,
        "--device",
        args.device,
        "--threads",
        threads,
        "--models",
        model,
        "--partition",
        str(partition),
    ]
    sets = [x for s in asyncfl_overrides(model, args.device, partition) for x in ("--set", s)]
    variants["asyncfl (command)"] = [py, "-m", "asyncfl", "run", scenario, "--quiet", *sets]
    print(f"{model}:")
    best: dict[str, dict] = {}
    for repeat in range(args.repeats):
        for name, command in variants.items():
            if name == "asyncfl (command)":
                out = work / f"cli{repeat}"
                command = [*command, "--out", str(out)]
            wall, stdout = run_process(command, args.threads, cwd=work)
            if name == "asyncfl (command)":
                summary = read_summary(out)
                record = {"train_s": None, "accuracy": summary["final_accuracy"], "trainer": summary["trainer"]}
                shutil.rmtree(out)
            elif name == "asyncfl (in process)":
                child_record = json.loads(stdout.strip().splitlines()[-1])
                record = {**child_record, "train_s": child_record["train"], "loop_s": child_record["loop"]}
            else:
                anchor_rec = anchor_record(stdout)
                record = {"train_s": anchor_rec["train_s"], "accuracy": anchor_rec["test_acc"]}
                record["steps"] = anchor_rec["client_steps"]
            record["wall_s"] = wall
            print(f"  {name:22} whole process {wall:6.2f} s  training {record['train_s'] or float('nan'):6.2f} s")
            key = "train_s" if record["train_s"] is not None else "wall_s"
            if name not in best or record[key] < best[name][key]:
                best[name] = record
    return best


MODEL_TITLE = {"mlp": "MLP 64-200-10", "cnn": "CNN conv 3x3 16 -> 32, linear 128-10 (asyncfl's cnn2d)"}


def render(model: str, best: dict[str, dict], args, flgo_missing: str | None) -> str:
    inproc = best["asyncfl (in process)"]
    asyncfl_rate = CLIENT_STEPS / inproc["train_s"]
    loop_rate = CLIENT_STEPS / inproc["loop_s"]
    lines = [
        f"FLGo anchor workload (digits, 100 clients, {MODEL_TITLE[model]}, 5 steps x 32, 30 rounds = {CLIENT_STEPS:,} "
        f"client-steps), torch threads {args.threads}, asyncfl on {inproc['device']} with {inproc['trainer']} "
        f"({inproc['calls']} calls of {inproc['jobs'] // max(inproc['calls'], 1)} jobs), every variant on the "
        f"anchor's partition.json and test split (asyncfl: mean client {inproc['client_size']:.2f} samples, "
        f"{inproc['test_size']} test samples; the anchor: 14.37 and 360), best of {args.repeats} "
        "fresh processes per variant, run side by side:",
        "",
        "| variant | training s | client-steps/s (training) | whole process s | test accuracy |",
        "|---|---|---|---|---|",
    ]
    for name, r in best.items():
        if name == "asyncfl (in process)":
            train = f"{r['train_s']:.2f} (loop {r['loop_s']:.2f})"
            rate = f"{asyncfl_rate:,.0f} (loop {loop_rate:,.0f})"
        elif r["train_s"] is None:
            train = rate = "–"
        else:
            train, rate = f"{r['train_s']:.2f}", f"{CLIENT_STEPS / r['train_s']:,.0f}"
        lines.append(f"| {name} | {train} | {rate} | {r['wall_s']:.2f} | {r['accuracy']:.3f} |")
    lines.append("")
    ratios = []
    for name in ("FLGo", "plain loop", "bare vmap"):
        if name in best:
            other = CLIENT_STEPS / best[name]["train_s"]
            wall = best[name]["wall_s"] / best["asyncfl (command)"]["wall_s"]
            speed = f"training {asyncfl_rate / other:.1f}× (loop {loop_rate / other:.1f}×)"
            ratios.append(f"{name}: {speed}, whole process {wall:.1f}×")
    lines.append("asyncfl speed-up over " + "; ".join(ratios) + ".")
    if flgo_missing:
        lines.append(f"FLGo was not run: {flgo_missing}.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
