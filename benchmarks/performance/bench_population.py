"""Timing-only runs of large populations, each the whole CLI command in its own process (issue 12).

Rows (base scenario benchmarks/scenarios/population.yaml: log-normal speeds and uplinks, an MLP's
model size on digits, Bernoulli availability p_i ~ U[0.1, 1]; no training):

  k_async   100,000 clients, concurrency 1,000, K = 100, 100 versions (10,000 updates), availability
            drawn per 60 s slot, no figures
  sync_1e6  1,000,000 clients, 1,000 per round, 100 rounds, 30 s deadline, no figures
  sync_1e5  100,000 clients (all selected), 10 rounds, 30 s deadline, default outputs (figures too)

Wall time is the whole process (python start, imports, simulation, every output file, figures);
``simulation`` is summary.json's real_seconds (from the run's start to its summary, before figures).
Writes docs/results/population.md and prints it.

    python benchmarks/performance/bench_population.py [--rows k_async sync_1e6 sync_1e5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "benchmarks" / "scenarios" / "population.yaml"
RESULT = ROOT / "docs" / "results" / "population.md"

ROWS = {
    "k_async": (
        "K-async, 100,000 clients, concurrency 1,000, K = 100, 100 versions (10,000 updates)",
        ["data.clients=100000", "server.mode=k_async", "server.deadline_s=null", "server.concurrency=1000",
         "server.k=100", "stop.rounds=100", "population.availability.slot_s=60", "output.plot=false"],
        "< 30 s",
    ),
    "sync_1e6": (
        "sync, 1,000,000 clients, 1,000 per round, 100 rounds",
        ["data.clients=1000000", "server.clients_per_round=1000", "stop.rounds=100", "output.plot=false"],
        "< 30 s",
    ),
    "sync_1e5": (
        "sync, 100,000 clients x 10 rounds, default outputs (figures included)",
        ["data.clients=100000", "stop.rounds=10"],
        "< 60 s (simulation well under 50 s)",
    ),
}  # fmt: skip


def run_row(overrides: list[str], timeout: float) -> tuple[float, float | None, str]:
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "asyncfl", str(SCENARIO), "--quiet", "--out", f"{tmp}/run"]
        for item in overrides:
            command += ["--set", item]
        start = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return time.perf_counter() - start, None, f"did not finish in {timeout:.0f} s"
        wall = time.perf_counter() - start
        if done.returncode != 0:
            return wall, None, f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
        summary = json.loads((Path(tmp) / "run" / "summary.json").read_text())
        return wall, summary["real_seconds"], f"{summary['rounds']} aggregations, {summary['updates']:,} updates"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per row before giving up")
    args = parser.parse_args()
    device = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    lines = [
        f"Timing-only populations, whole `python -m asyncfl` processes ({device}); "
        f"`python benchmarks/performance/bench_population.py`.",
        "",
        "| workload | wall s | simulation s | goal | outcome |",
        "| --- | ---: | ---: | --- | --- |",
    ]
    for name in args.rows:
        label, overrides, goal = ROWS[name]
        wall, simulated, outcome = run_row(overrides, args.timeout)
        sim = f"{simulated:.1f}" if simulated is not None else "-"
        lines.append(f"| {label} | {wall:.1f} | {sim} | {goal} | {outcome} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.rows == list(ROWS):
        RESULT.parent.mkdir(parents=True, exist_ok=True)
        RESULT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
