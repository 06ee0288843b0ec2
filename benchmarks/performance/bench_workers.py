"""One run's training on 1, 2 (and 4) Ray workers (``trainer.workers``), side by side: speed and identical files.

For each workload the same scenario runs as a user runs it (``python -m asyncfl run FILE``: figures, every run
file), in its own process, one after the other:

* ``here``: trained in the run's own process (no workers), with ``trainer.threads`` threads;
* ``1 worker`` / ``2 workers``: ``trainer.workers: 1`` / ``2``, each worker with ``trainer.threads`` threads.

"loop" is the simulation loop's wall time (metrics.csv's ``wall_seconds`` from round 0, evaluated before the
first aggregation, to the last round): the workers' start (Ray, then each worker building its data set and
model) is before it.  "process" is the whole command, start to exit.  The speed-up is 1 worker / 2 workers.

Workloads (all offline, on sklearn's digits): ``resnet18, 10 steps`` and ``resnet18, 5 steps`` (ResNet-18 with
GroupNorm on 8x8 images, sync FedAvg, 10 of 20 clients a round, 10 or 5 local steps of batch 32: about 4 and 2
client-epochs), ``cnn`` (the FLGo anchor's CNN, ``cnn2d``) and ``mlp`` (the FLGo anchor's MLP workload,
/work/shared/anchors/flgo/asyncfl_flgo_mlp.yaml, 100 clients a round): from jobs of seconds to jobs of a
millisecond, which is where the crossover shows.

``--check-files`` also runs each workload with 4 workers and with 2 workers on a two-node Ray cluster started on
this machine (``ray.cluster_utils.Cluster``, one node per worker, the workers spread over them) and compares
every run file byte for byte with the 1-worker run (metrics.csv without its wall-clock column).  A transfer line
times one job's delta coming back from a worker (``ray.get`` of a model-sized tensor) beside a job's training.

    python benchmarks/performance/bench_workers.py [--quick] [--check-files] [--models mlp cnn]

Writes docs/results/workers.md (refuses on a busy machine unless --force; the table says which).
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from benchmarks.tools.quiet_machine import add_force_argument, check_load  # noqa: E402

RESULTS = ROOT / "docs" / "results" / "workers.md"
FLGO = "/work/shared/anchors/flgo/asyncfl_flgo_mlp.yaml"
SAME_FILES = ("rounds.csv", "updates.csv", "clients.csv", "final_model.npz")

# name -> (scenario file or None for the inline one, --set overrides, client-steps per round)
RESNET = ["model.name=resnet18", "training.batch_size=32", "server.clients_per_round=10"]
WORKLOADS: dict[str, tuple[str | None, list[str], int]] = {
    "resnet18, 10 steps": (None, [*RESNET, "training.local_steps=10"], 10 * 10),
    "resnet18, 5 steps": (None, [*RESNET, "training.local_steps=5"], 10 * 5),
    "cnn": (FLGO, ["model.name=cnn2d"], 100 * 5),
    "mlp": (FLGO, [], 100 * 5),
}
INLINE = """name: workers_bench
seed: 0
data: {dataset: digits, clients: 20, partition: {kind: dirichlet, alpha: 0.5}}
model: {name: mlp}
training: {local_steps: 5, batch_size: 32, lr: 0.05}
population: {availability: {kind: always}}
server: {mode: sync}
algorithm: {name: fedavg}
stop: {rounds: 3}
eval: {every_rounds: 1, per_client: false}
"""


def command(scenario: str, overrides: list[str], out: Path, rounds: int, threads: int, workers: int | None,
            address: str | None = None) -> list[str]:  # fmt: skip
    sets = [*overrides, f"stop.rounds={rounds}", f"trainer.threads={threads}", "eval.every_rounds=1000"]
    if workers is not None:
        sets.append(f"trainer.workers={workers}")
    if address is not None:
        sets.append(f"trainer.ray_address={address}")
    args = [sys.executable, "-m", "asyncfl", "run", scenario, "--out", str(out), "--quiet"]
    for value in sets:
        args += ["--set", value]
    return args


def timed_run(args: list[str]) -> tuple[float, float]:
    """(process seconds, loop seconds) of one command."""
    began = time.perf_counter()
    run_command(args)
    process = time.perf_counter() - began
    out = Path(args[args.index("--out") + 1])
    with open(out / "metrics.csv", newline="") as f:
        wall = [float(row["wall_seconds"]) for row in csv.DictReader(f)]
    return process, wall[-1] - wall[0]


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def run_command(args: list[str]) -> None:
    done = subprocess.run(args, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise SystemExit(f"error: {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")


def same_files(a: Path, b: Path) -> bool:
    for name in SAME_FILES:
        if (a / name).read_bytes() != (b / name).read_bytes():
            return False
    return metrics_rows(a) == metrics_rows(b)


def metrics_rows(run: Path) -> list[str]:
    return [row.rsplit(",", 1)[0] for row in (run / "metrics.csv").read_text().splitlines()]  # no wall_seconds


def measure(name: str, work: Path, rounds: int, threads: int) -> dict:
    scenario, overrides, steps_per_round = WORKLOADS[name]
    scenario = scenario or str(work / "inline.yaml")
    row = {"workload": name, "client_steps": steps_per_round * rounds}
    for label, workers in (("here", None), ("1 worker", 1), ("2 workers", 2)):
        out = work / f"{slug(name)}-{slug(label)}"
        row[label] = timed_run(command(scenario, overrides, out, rounds, threads, workers))
        row[f"{label} dir"] = out
    return row


def check_files(name: str, work: Path, rounds: int, threads: int, address: str) -> dict[str, bool]:
    """Whether 4 local workers and 2 workers on the two-node cluster write the 1-worker run's files."""
    scenario, overrides, _ = WORKLOADS[name]
    scenario = scenario or str(work / "inline.yaml")
    one = work / f"{slug(name)}-{slug('1 worker')}"
    out = {}
    for label, workers, at in (("4 local", 4, None), ("2 on 2 nodes", 2, address)):
        run = work / f"{slug(name)}-{slug(label)}"
        run_command(command(scenario, overrides, run, rounds, threads, workers, at))
        out[label] = same_files(one, run)
    out["here"] = same_files(one, work / f"{slug(name)}-here")
    return out


def transfer_line(rows: list[dict]) -> str:
    """One ResNet-18 delta (11.2M float32) back from a Ray actor as the workers send it (a NumPy array, copied
    into a tensor on arrival), beside one job's training in the run's own process."""
    import numpy as np
    import ray
    import torch

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:

        @ray.remote(num_cpus=1)
        class Sender:
            def __init__(self) -> None:
                self.delta = np.zeros(11_173_962, dtype=np.float32)

            def send(self):
                return self.delta

        sender = Sender.remote()
        ray.get(sender.send.remote())
        began = time.perf_counter()
        for _ in range(5):
            torch.tensor(ray.get(sender.send.remote()))
        seconds = (time.perf_counter() - began) / 5
    finally:
        ray.shutdown()
    line = f"One ResNet-18 delta (44.7 MB) back from a worker: {seconds * 1e3:.0f} ms"
    for row in rows:
        if row["workload"].startswith("resnet18"):
            jobs = row["client_steps"] / int(row["workload"].split(", ")[1].split()[0])
            line += f"; a job of {row['workload']}: {row['here'][1] / jobs:.2f} s of the loop in the run's own process"
    return line


def render(rows: list[dict], files: dict[str, dict], threads: int, transfer: str) -> str:
    lines = [
        "| workload | client-steps | here: loop / process s | 1 worker: loop / process s | 2 workers: loop / "
        "process s | 2 workers / 1: loop | process | same files (4 local, 2 on 2 nodes, here) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        here, one, two = row["here"], row["1 worker"], row["2 workers"]
        same = files.get(row["workload"])
        same_text = ", ".join(f"{k}: {'yes' if v else 'no'}" for k, v in same.items()) if same else "not checked"
        lines.append(
            f"| {row['workload']} | {row['client_steps']:,} | {here[1]:.1f} / {here[0]:.1f} | {one[1]:.1f} / "
            f"{one[0]:.1f} | {two[1]:.1f} / {two[0]:.1f} | {one[1] / two[1]:.2f}x | {one[0] / two[0]:.2f}x | "
            f"{same_text} |"
        )
    lines.append(f"\n{threads} torch thread(s) per worker and in the run's own process. {transfer}.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=sorted(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=None, help="rounds per run (default: 2; --quick: 1)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="one round, resnet18 with 5 steps only, no docs table")
    parser.add_argument("--check-files", action="store_true", help="also 4 workers and a two-node cluster")
    parser.add_argument("--results", type=Path, default=RESULTS)
    add_force_argument(parser)
    args = parser.parse_args()
    models = ["resnet18, 5 steps"] if args.quick else args.models
    rounds = args.rounds or (1 if args.quick else 2)
    load = None if args.quick else check_load(args.force, str(args.results))
    work = Path(tempfile.mkdtemp(prefix="bench_workers_"))
    (work / "inline.yaml").write_text(INLINE)
    rows = []
    for name in models:
        rows.append(measure(name, work, rounds, args.threads))
        print(name, {k: v for k, v in rows[-1].items() if not k.endswith("dir")}, flush=True)
    files: dict[str, dict] = {}
    if args.check_files:
        from ray.cluster_utils import Cluster

        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": args.threads})
        cluster.add_node(num_cpus=args.threads)
        try:
            for name in models:
                files[name] = check_files(name, work, rounds, args.threads, cluster.address)
                print(name, files[name], flush=True)
        finally:
            cluster.shutdown()
    table = render(rows, files, args.threads, transfer_line(rows))
    print(table)
    if load is not None:
        args.results.write_text(table + load.note(), encoding="utf-8")


if __name__ == "__main__":
    main()
