"""Start-up, side by side in one script: torch's own import vs ``validate`` vs a run's start-up.

Each command is a fresh process, run in turns (``--repeats`` times, median kept) so that other
load on the machine hits them alike:

  import torch        python -c "import torch"
  validate            python -m asyncfl validate scenarios/k_async.yaml   (imports no torch)
  import run loop     python -c "import asyncfl.runner.start"
  run start-up        python -m asyncfl scenarios/k_async.yaml, timing_only, 1 aggregation, no events,
                      figures or checkpoints: the whole command, so start-up plus a few ms of simulation

Writes docs/results/startup.md and prints it.   python benchmarks/performance/bench_startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from benchmarks.tools.quiet_machine import add_force_argument, check_load  # noqa: E402

RESULT = ROOT / "docs" / "results" / "startup.md"
PY = sys.executable
RUN_SETTINGS = ["timing_only=true", "stop.rounds=1", "output.plot=false", "output.events=none",
                "checkpoint.every_rounds=null"]  # fmt: skip
COMMANDS = {
    "import torch": [PY, "-c", "import torch"],
    "validate": [PY, "-m", "asyncfl", "validate", "scenarios/k_async.yaml"],
    "import asyncfl.runner.start": [PY, "-c", "import asyncfl.runner.start"],
    "run start-up": [PY, "-m", "asyncfl", "scenarios/k_async.yaml", "--quiet"]
    + [a for s in RUN_SETTINGS for a in ("--set", s)],
}


def timed(command: list[str]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        extra = ["--out", f"{tmp}/run"] if "--quiet" in command else []  # a run writes into tmp
        start = time.perf_counter()
        subprocess.run(command + extra, cwd=ROOT, check=True, capture_output=True)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    add_force_argument(parser)
    args = parser.parse_args()
    load = check_load(args.force, str(RESULT.relative_to(ROOT)))
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeats):
        for name, command in COMMANDS.items():
            times[name].append(timed(command))
    median = {name: statistics.median(values) for name, values in times.items()}
    torch_s = median["import torch"]
    device = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    lines = [
        f"Start-up, whole processes, median of {args.repeats} ({device}); "
        "`python benchmarks/performance/bench_startup.py`.",
        "",
        "| command | seconds | minus `import torch` |",
        "| --- | ---: | ---: |",
    ]
    for name, seconds in median.items():
        lines.append(f"| {name} | {seconds:.2f} | {seconds - torch_s:+.2f} |")
    text = "\n".join(lines) + "\n" + load.note()
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
