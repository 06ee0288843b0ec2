"""Eligibility and batteries without polling (issue 24, goal 5), as whole ``asyncfl run`` commands.

1. The 60-client K-async case (scenarios/k_async.yaml, timing only, 200 aggregations) with batteries
   that empty in about three tasks and charge at 0.2 W inside a daily 30 % plug window, and
   eligibility (plugged in + an unmetered Markov network): today's code (a ``git worktree`` of
   ``--base`` run with PYTHONPATH=<that tree>) against this checkout.  The base polled every idle
   client's battery every 60 s and scanned all clients per dispatch; this checkout wakes at each
   battery's closed-form ready time and keeps an index.
2. 10^5 clients, 100 aggregations: the same run with eligibility, without it (battery kept), and
   plain (no battery either); the ratio with / without.

Prints wall time (the whole command, start-up included), simulated events (events.jsonl lines) and
virtual time per run, side by side.

    python benchmarks/performance/bench_eligibility.py [--base de4eebb] [--clients 100000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from asyncfl.output.reading import read_summary  # noqa: E402

SCENARIO = "scenarios/k_async.yaml"
BATTERY = (
    "population.battery={capacity_j: 2000, joules_per_sample: 2, initial_level: {dist: uniform, low: 0.2, high: 1},"
    " charging: {period_s: 86400, plugged_fraction: 0.3, charge_w: 0.2}}"
)
ELIGIBILITY = "population.eligibility={charging: true, unmetered: {kind: markov, p: 0.7, mean_cycle_s: 7200}}"
COMMON = ["timing_only=true"]  # default outputs, figures included, as users run it


def run(tree: Path, out: Path, overrides: list[str]) -> tuple[float, int, float]:
    """(wall seconds, events, virtual seconds) of one ``asyncfl run`` from ``tree``'s code."""
    sets = [arg for value in [*COMMON, *overrides] for arg in ("--set", value)]
    command = [sys.executable, "-m", "asyncfl", "run", SCENARIO, *sets, "--quiet", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    subprocess.run(command, cwd=tree, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    with open(out / "events.jsonl") as f:
        events = sum(1 for _ in f)
    virtual = read_summary(out)["virtual_time_s"]
    return wall, events, virtual


def row(name: str, measured: tuple[float, int, float]) -> None:
    wall, events, virtual = measured
    print(f"  {name:44} {wall:8.1f} s {events:>10,} events {virtual:>12,.0f} virtual s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="de4eebb", help="today's code: the revision to compare with")
    parser.add_argument("--clients", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=100, help="aggregations of the large runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.base], check=True)
        try:
            print(f"60 clients, K-async, battery + eligibility, 200 aggregations ({args.base} vs this checkout)")
            small = [BATTERY, ELIGIBILITY]
            before = run(base, Path(tmp) / "small_base", small)
            after = run(ROOT, Path(tmp) / "small_now", small)
            row(f"{args.base} (60 s battery polls, scan)", before)
            row("this checkout (ready times, index)", after)
            print(f"  speed-up {before[0] / after[0]:.1f}x")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True)
        print(f"{args.clients:,} clients, K-async, {args.rounds} aggregations (this checkout)")
        large = [f"data.clients={args.clients}", f"stop.rounds={args.rounds}"]
        with_e = run(ROOT, Path(tmp) / "with", [*large, BATTERY, ELIGIBILITY])
        without = run(ROOT, Path(tmp) / "without", [*large, BATTERY])
        plain = run(ROOT, Path(tmp) / "plain", large)
        row("battery + eligibility", with_e)
        row("battery, no eligibility", without)
        row("plain (no battery, no eligibility)", plain)
        print(f"  with / without eligibility {with_e[0] / without[0]:.2f}x, with / plain {with_e[0] / plain[0]:.2f}x")


if __name__ == "__main__":
    main()
