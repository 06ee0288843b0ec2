"""Torch CPU threads for small models, as a user runs the main scenario (``trainer.threads``).

Runs ``python -m asyncfl scenarios/k_async.yaml`` as whole processes with ``trainer.threads`` left
at its default (null: one thread for this model) and with torch's default (one thread per core),
alternating, with nothing else started and next to one busy process (a pure-Python loop on one core:
another job, a browser, a second run).  The table gives the load average before each, since
"nothing else started" is idle only on an otherwise quiet machine.  Prints the table and writes
``docs/results/threads.md``.

    python benchmarks/performance/bench_threads.py [--repeats 2] [--scenario scenarios/k_async.yaml]
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
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from asyncfl.output.reading import read_summary  # noqa: E402
from benchmarks.tools.quiet_machine import add_force_argument, check_load  # noqa: E402

RESULT = ROOT / "docs" / "results" / "threads.md"
BUSY_LOOP = "while True: pass"


def run_once(scenario: Path, threads: str) -> tuple[float, float]:
    """Whole-command wall seconds and the run's own real_seconds (summary.json)."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "asyncfl", str(scenario), "--quiet", "--out", f"{tmp}/run",
                   "--set", f"trainer.threads={threads}"]  # fmt: skip
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
        wall = time.perf_counter() - start
        return wall, read_summary(Path(tmp) / "run")["real_seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, default=ROOT / "scenarios" / "k_async.yaml")
    parser.add_argument("--repeats", type=int, default=2, help="runs per setting and load (best is kept)")
    add_force_argument(parser)
    args = parser.parse_args()
    machine = check_load(args.force, str(RESULT.relative_to(ROOT)))
    cores = os.cpu_count() or 1
    settings = {"null, the default (1 thread)": "null", f"torch default ({cores} threads)": str(cores)}
    rows = []
    for load in ("nothing else started", "one busy core"):
        load_average = os.getloadavg()[0]  # what else was running: "idle" only if this is near 0
        busy = subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) if load == "one busy core" else None
        try:
            best: dict[str, tuple[float, float]] = {}
            for _ in range(args.repeats):
                for label, threads in settings.items():  # alternate, so drifts in load hit both alike
                    wall, run = run_once(args.scenario, threads)
                    if label not in best or wall < best[label][0]:
                        best[label] = (wall, run)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        default_wall = best["null, the default (1 thread)"][0]
        for label, (wall, run) in best.items():
            rows.append(
                f"| {load} (load {load_average:.1f}) | {label} | {wall:.2f} | {run:.2f} | {wall / default_wall:.1f}× |"
            )
            print(rows[-1], flush=True)
    name = args.scenario.resolve().relative_to(ROOT)
    text = "\n".join([
        f"`{name}` as a user runs it, on the CPU ({cores} cores), best of {args.repeats} alternating runs per "
        "setting; `python benchmarks/performance/bench_threads.py`.",
        "",
        "| machine (1-minute load average before) | trainer.threads | whole command s | run s (summary.json) "
        "| time / default |",
        "|---|---|---|---|---|",
        *rows,
    ]) + "\n" + machine.note()  # fmt: skip
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
