"""Figures of a big run: how long they take next to the simulation itself.

Covers: the timing-only sync scenario of bench_timing_only.py (100,000 clients x 10 rounds, log-normal
speeds and uplinks, per-round Bernoulli availability, a 30 s deadline) run through the real command
line with the default outputs (events: all, figures on).  The run records what its figures need
while it runs (updates.csv, timeline_tasks.csv, offline_periods.csv), so drawing them reads small
columnar files instead of the multi-million-line events.jsonl.

Prints and writes to docs/results/figures.md: simulation seconds (summary.json real_seconds:
setup to the last aggregation), figure seconds (summary.json figures_seconds: every figure of the
run), the whole command's wall time (interpreter start-up and imports included) and the figures'
share of it.

    python benchmarks/performance/bench_figures.py [--clients 100000] [--rounds 10] [--out docs/results/figures.md]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_timing_only import SCENARIO  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from asyncfl.output.reading import read_summary  # noqa: E402
from benchmarks.tools.quiet_machine import add_force_argument, check_load  # noqa: E402


def run_once(clients: int, rounds: int, scratch: Path) -> dict:
    scenario = {**SCENARIO, "data": {**SCENARIO["data"], "clients": clients}, "stop": {"rounds": rounds}}
    path = scratch / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    run_dir = scratch / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "asyncfl", str(path), "--out", str(run_dir), "--quiet"], check=True, env=env, cwd=ROOT
    )
    total = time.perf_counter() - start
    summary = read_summary(run_dir)
    lines = sum(1 for _ in open(run_dir / "events.jsonl", "rb"))
    figures = sorted(p.name for p in run_dir.glob("*.png"))
    return {
        "simulation": summary["real_seconds"],
        "figures": summary["figures_seconds"],
        "total": total,
        "lines": lines,
        "pngs": figures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "figures.md")
    add_force_argument(parser)
    args = parser.parse_args()
    load = check_load(args.force, str(args.out))
    with tempfile.TemporaryDirectory(prefix="bench-figures-") as tmp:
        r = run_once(args.clients, args.rounds, Path(tmp))
    share = r["figures"] / r["total"]
    table = "\n".join([
        f"Timing-only sync, {args.clients:,} clients x {args.rounds} rounds, default outputs "
        f"({r['lines']:,} lines in events.jsonl; figures: {', '.join(r['pngs'])}).",
        "Made by `python benchmarks/performance/bench_figures.py`.",
        "",
        "| simulation (s) | figures (s) | whole command (s) | figures' share |",
        "|---:|---:|---:|---:|",
        f"| {r['simulation']:.1f} | {r['figures']:.1f} | {r['total']:.1f} | {share:.1%} |",
    ])  # fmt: skip
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table + "\n" + load.note(), encoding="utf-8")


if __name__ == "__main__":
    main()
