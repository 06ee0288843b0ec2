"""Timing-only runs of large populations, each the whole CLI command in its own process, with the
default outputs (figures on, as users run it), beside the same command on an earlier commit (issue 24).

Rows (base scenario benchmarks/scenarios/population.yaml: log-normal speeds and uplinks, an MLP's
model size on digits, Bernoulli availability p_i ~ U[0.1, 1]; no training):

  sync_1e7  10,000,000 clients, 1,000 per round, 100 rounds, 30 s deadline   goal < 120 s, < 8 GB
  sync_1e6  1,000,000 clients, 1,000 per round, 100 rounds, 30 s deadline    goal < 20 s
  k_async   1,000,000 clients, concurrency 1,000, K = 100, 1,000 versions (100,000 updates), availability
            drawn per 60 s slot                                               goal < 60 s

Wall time is the whole process (python start, imports, simulation, every output file, figures); peak
memory is the process's maximum resident set (``os.wait4``'s ru_maxrss); ``estimate`` is what this
tree's ``population_bytes`` (the refusal's estimate) says the population needs, beside it.  ``--base REV`` runs the
same commands from a ``git worktree`` of REV with this interpreter (PYTHONPATH = that tree); the
10^7 row, and a row whose population the base estimates at more than half of the memory available,
are not run there: the base's own estimate (its ``population_bytes``) is printed instead.  Writes
docs/results/population.md and prints it.

    python benchmarks/performance/bench_population.py [--base de4eebb] [--rows sync_1e7 sync_1e6 k_async]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from asyncfl.output.reading import read_summary  # noqa: E402
from benchmarks.tools.quiet_machine import add_force_argument, check_load  # noqa: E402

SCENARIO = ROOT / "benchmarks" / "scenarios" / "population.yaml"
RESULT = ROOT / "docs" / "results" / "population.md"
GIB = 2**30

ROWS = {
    "sync_1e7": (
        "sync, 10,000,000 clients, 1,000 per round, 100 rounds",
        ["data.clients=10000000", "server.clients_per_round=1000", "stop.rounds=100"],
        (120.0, 8.0),
        False,  # the base: its own estimate only (about 19 GB on the commit before the columns)
    ),
    "sync_1e6": (
        "sync, 1,000,000 clients, 1,000 per round, 100 rounds",
        ["data.clients=1000000", "server.clients_per_round=1000", "stop.rounds=100"],
        (20.0, None),
        True,
    ),
    "k_async": (
        "K-async, 1,000,000 clients, concurrency 1,000, K = 100, 1,000 versions (100,000 updates)",
        ["data.clients=1000000", "server.mode=k_async", "server.deadline_s=null", "server.concurrency=1000",
         "server.k=100", "stop.rounds=1000", "population.availability.slot_s=60"],
        (60.0, None),
        True,
    ),
}  # fmt: skip

ESTIMATE = """
import sys
from asyncfl.config import load_scenario
from asyncfl.config.runnable import available_memory_bytes
from asyncfl.sim.population import population_bytes
s = load_scenario(sys.argv[1], sys.argv[2:])
per_round, rounds = s.server.clients_per_round, s.stop.rounds
touched = per_round * rounds if per_round is not None and rounds is not None else s.data.clients
print(population_bytes(s.population, s.data.clients, touched), available_memory_bytes() or 0)
"""


def run_row(tree: Path, overrides: list[str], timeout: float) -> dict:
    """One whole command from ``tree``: wall seconds, peak resident bytes, what it did (or why not)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "asyncfl", str(SCENARIO), "--quiet", "--out", f"{tmp}/run"]
        for item in overrides:
            command += ["--set", item]
        start = time.perf_counter()
        with open(f"{tmp}/stderr", "w+b") as err:
            child = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=err)
            timer = threading.Timer(timeout, child.kill)
            timer.start()
            _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage: its peak resident set
            timer.cancel()
            child.returncode = os.waitstatus_to_exitcode(status)
            wall, peak = time.perf_counter() - start, usage.ru_maxrss * 1024
            if wall >= timeout:
                return {"wall": wall, "peak": peak, "outcome": f"did not finish in {timeout:.0f} s"}
            if child.returncode != 0:
                err.seek(0)
                last = err.read().decode(errors="replace").strip().splitlines()[-1:]
                return {"wall": wall, "peak": peak, "outcome": f"exit {child.returncode}: {last}"}
        summary = read_summary(Path(tmp) / "run")
        outcome = f"{summary['rounds']:,} aggregations, {summary['updates']:,} updates"
        return {"wall": wall, "peak": peak, "simulation": summary["real_seconds"], "outcome": outcome}


def estimate(tree: Path, overrides: list[str]) -> tuple[int, int]:
    """(bytes the tree's population_bytes estimates for the row, bytes available here)."""
    args = [sys.executable, "-c", ESTIMATE, str(SCENARIO), *overrides]
    done = subprocess.run(args, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True)
    need, available = done.stdout.split()
    return int(need), int(available)


def _cell(result: dict | None) -> tuple[str, str]:
    if result is None:
        return "-", "-"
    peak = result.get("peak")
    return f"{result['wall']:.1f}", (f"{peak / GIB:.2f}" if peak else "-")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS))
    parser.add_argument("--base", default=None, help="a commit to run the same commands on, side by side")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per command before giving up")
    add_force_argument(parser)
    args = parser.parse_args()
    load = check_load(args.force, str(RESULT.relative_to(ROOT)))
    base_tree = None
    if args.base:
        base_tree = Path(tempfile.mkdtemp(prefix="bench-base-")) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(base_tree), args.base], cwd=ROOT, check=True,
                       capture_output=True)  # fmt: skip
    device = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    base = args.base or "-"
    lines = [
        f"Timing-only populations, whole `python -m asyncfl` processes with the default outputs (figures "
        f"included) ({device}); `python benchmarks/performance/bench_population.py --base {base}`.",
        "",
        f"| workload | goal | wall s | peak GiB | estimate GiB | base {base} wall s | base peak GiB | speed-up | "
        "memory | outcome |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    try:
        for name in args.rows:
            label, overrides, (goal_s, goal_gib), base_runs = ROWS[name]
            goal = f"< {goal_s:.0f} s" + (f", < {goal_gib:.0f} GB" if goal_gib else "")
            mine = run_row(ROOT, overrides, args.timeout)
            mine_estimate = estimate(ROOT, overrides)[0]
            theirs, note = None, ""
            if base_tree is not None:
                need, available = estimate(base_tree, overrides)
                if not base_runs or need > available / 2:  # leave the machine's other processes their memory
                    note = f"; base not run: it estimates {need / GIB:.1f} GiB, {available / GIB:.1f} GiB available"
                else:
                    theirs = run_row(base_tree, overrides, args.timeout)
            speed_up = f"{theirs['wall'] / mine['wall']:.1f}x" if theirs and "simulation" in theirs else "-"
            ratio = "-"
            if theirs and theirs.get("peak") and mine.get("peak"):
                ratio = f"{theirs['peak'] / mine['peak']:.1f}x less"
            lines.append(
                f"| {label} | {goal} | {' | '.join(_cell(mine))} | {mine_estimate / GIB:.2f} | "
                f"{' | '.join(_cell(theirs))} | {speed_up} | "
                f"{ratio} | {mine['outcome']}{note}{'; base: ' + theirs['outcome'] if theirs else ''} |"
            )
            print(lines[-1], flush=True)
    finally:
        if base_tree is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=ROOT, capture_output=True)
            shutil.rmtree(base_tree.parent, ignore_errors=True)
    text = "\n".join(lines) + "\n" + load.note()
    if args.rows == list(ROWS):
        RESULT.parent.mkdir(parents=True, exist_ok=True)
        RESULT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
