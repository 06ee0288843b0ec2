"""The test suite's wall time, as the README's "Tests" section states it (issue 45, item 14): the whole
suite (``python -m pytest -q``) and the fast subset (``python -m pytest -q -m "not slow"``), each timed
from the start of its process to its end, against the goals of a quiet 2-core machine (8 and 3 minutes).

    python benchmarks/tools/suite_time.py [--fresh-clone] [--only full|fast] [--force]

Before it measures, the machine's load is checked (benchmarks/tools/quiet_machine.py): above 0.5 per core
the script stops unless ``--force``, and then its output says the times were forced on a busy machine.  It
prints the CPU, the load before and after (the load after includes the suite's own process, about 1), each
wall time with pytest's summary line, and whether each is within its goal.  ``--fresh-clone`` measures a
``git clone`` of HEAD in a temporary folder (no caches, no uncommitted changes), as a new contributor
would run it; by default the current checkout is measured.  Either way the tree measured is put first on
PYTHONPATH, so that its asyncfl is the one imported.  Exit status 1 when a suite fails or takes longer
than its goal.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools

from benchmarks.tools.quiet_machine import add_force_argument, check_load, cores  # noqa: E402

GOALS_S = {"full": 8 * 60.0, "fast": 3 * 60.0}  # on a quiet 2-core machine (issue 45, item 14)
COMMANDS = {  # as the README's "Tests" section runs them
    "full": ["-m", "pytest", "-q"],
    "fast": ["-m", "pytest", "-q", "-m", "not slow"],
}


@dataclass(frozen=True)
class Timing:
    suite: str  # full or fast
    seconds: float
    returncode: int
    summary: str  # pytest's last line, e.g. "1705 passed, 4 skipped in 876.36s (0:14:36)"

    @property
    def within_goal(self) -> bool:
        return self.returncode == 0 and self.seconds <= GOALS_S[self.suite]

    def line(self) -> str:
        goal = GOALS_S[self.suite]
        verdict = "within" if self.seconds <= goal else "OVER"
        failed = "" if self.returncode == 0 else f"; pytest exited {self.returncode}"
        return (
            f"{self.suite} suite: {self.seconds:.0f} s ({self.seconds / 60:.1f} min), {verdict} the goal of "
            f"{goal / 60:.0f} min{failed} [{self.summary}]"
        )


def last_line(output: str) -> str:
    """pytest's summary: the last line that is not blank, its ``=`` padding stripped."""
    lines = [line.strip().strip("=").strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def time_suite(suite: str, tree: Path) -> Timing:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *COMMANDS[suite]], cwd=tree, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    return Timing(suite, seconds, done.returncode, last_line(done.stdout + done.stderr))


def load_after() -> str:
    one, five, _ = os.getloadavg()
    n = cores()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {n} cores ({one / n:.2f} per core) after measuring"


def measure(suites: list[str], tree: Path) -> list[Timing]:
    timings = []
    for suite in suites:
        print(f"running the {suite} suite: python {' '.join(COMMANDS[suite])} in {tree}", flush=True)
        timings.append(time_suite(suite, tree))
        print(timings[-1].line(), flush=True)
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fresh-clone", action="store_true", help="measure a git clone of HEAD, not this checkout")
    parser.add_argument("--only", choices=sorted(GOALS_S), help="time one suite only")
    add_force_argument(parser)
    args = parser.parse_args()
    load = check_load(args.force, "the README's test times")
    print(f"CPU: {load.cpu}\nMachine: {load.summary()}", flush=True)
    suites = [args.only] if args.only else ["full", "fast"]
    if args.fresh_clone:
        with tempfile.TemporaryDirectory(prefix="suite_time_") as tmp:
            tree = Path(tmp) / "asyncfl"
            subprocess.run(["git", "clone", "--quiet", str(ROOT), str(tree)], check=True)
            timings = measure(suites, tree)
    else:
        timings = measure(suites, ROOT)
    print(f"Machine: {load_after()}")
    print("\n".join(t.line() for t in timings))
    return 0 if all(t.within_goal for t in timings) else 1


if __name__ == "__main__":
    sys.exit(main())
