"""Run the two main scenarios through the command line and write the numbers docs/reference/scenarios.md quotes.

    python benchmarks/performance/main_scenarios.py     # about two minutes on 2 idle cores

Runs ``python -m asyncfl scenarios/k_async.yaml`` and ``scenarios/sync_deadline.yaml`` exactly as a user
would (each in a fresh process, figures included), then writes ``docs/results/main_scenarios.md``:
per scenario its setting (read from the resolved config.yaml), final test accuracy, aggregations, virtual
seconds and the wall seconds of the whole command; for a sync scenario with a deadline, how many attempts
of the slowest speed tier delivered.  ``python benchmarks/tools/docs_sync.py`` copies the file into the docs page.

Wall seconds are given twice: the *first run*, from a fresh copy of the package whose bytecode Python
has not compiled yet (what a user's first command after ``pip install -e .`` pays), and *warm* runs
(median, min and max of three), as every later command is.  A machine that has never loaded torch's
libraries from disk pays more on its very first run still: that part cannot be reproduced in a script.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.tools
from asyncfl.output.reading import read_summary  # noqa: E402
from benchmarks.tools.quiet_machine import add_force_argument, check_load  # noqa: E402

SCENARIOS = ("scenarios/k_async.yaml", "scenarios/sync_deadline.yaml")
RESULT = ROOT / "docs" / "results" / "main_scenarios.md"
WARM_RUNS = 3


def run_cli(scenario: str, out: Path, package_root: Path = ROOT) -> float:
    """Wall seconds of one ``python -m asyncfl FILE`` command, start-up and figures included, with the
    package imported from ``package_root``."""
    path = [str(package_root), os.environ.get("PYTHONPATH")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, path))}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "asyncfl", scenario, "--out", str(out), "--quiet"], cwd=ROOT, env=env,
                   check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - started


def setting(config: dict) -> str:
    server, data = config["server"], config["data"]
    parts = [f"`{config['algorithm']['name']}`", f"{data['clients']} clients", f"{config['model']['name']}"]
    if server["mode"] == "k_async":
        parts += [f"K = {server['k']}", f"concurrency {server['concurrency']}"]
    else:
        parts.append(f"deadline {server['deadline_s']:g} s" if server["deadline_s"] else "no deadline")
    parts.append(f"{config['population']['availability']['kind']} availability")
    return ", ".join(parts)


def slow_tier(run_dir: Path) -> str | None:
    """'the slowest tier (N clients at S samples/s) delivered D of its A attempts', for tiered speeds."""
    with open(run_dir / "clients.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    slowest = min(float(r["samples_per_s"]) for r in rows)
    tier = [r for r in rows if float(r["samples_per_s"]) == slowest]
    if len(tier) < 2:  # continuous speeds: no tier to speak of
        return None
    attempts = sum(int(r["attempts"]) for r in tier)
    delivered = sum(int(r["participations"]) for r in tier)
    return (
        f"the slowest tier ({len(tier)} clients at {slowest:g} samples/s) delivered {delivered} of its "
        f"{attempts} attempts"
    )


def first_run(scenario: str, tmp: Path) -> float:
    """Wall seconds of the command with a copy of asyncfl that has no compiled bytecode yet."""
    fresh = tmp / f"fresh-{Path(scenario).stem}"
    shutil.copytree(ROOT / "asyncfl", fresh / "asyncfl", ignore=shutil.ignore_patterns("__pycache__"))
    return run_cli(scenario, tmp / f"first-{Path(scenario).stem}", package_root=fresh)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_force_argument(parser)
    load = check_load(parser.parse_args().force, str(RESULT.relative_to(ROOT)))
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in SCENARIOS:
            first = first_run(scenario, Path(tmp))
            walls = [run_cli(scenario, Path(tmp) / f"{Path(scenario).stem}-{i}") for i in range(WARM_RUNS)]
            out = Path(tmp) / f"{Path(scenario).stem}-0"
            wall = statistics.median(walls)
            summary = read_summary(out)
            config = yaml.safe_load((out / "config.yaml").read_text())
            rows.append(
                f"| `{scenario}` | {setting(config)} | {summary['final_accuracy']:.3f} | {summary['rounds']} | "
                f"{summary['virtual_time_s']:.0f} | {first:.1f} | {wall:.1f} ({min(walls):.1f}–{max(walls):.1f}) |"
            )
            if config["server"]["mode"] == "sync" and config["server"]["deadline_s"]:
                note = slow_tier(out)
                if note:
                    notes.append(f"With the {config['server']['deadline_s']:g} s deadline of `{scenario}`, {note}.")
            print(f"{scenario}: first {first:.1f} s, warm {[round(w, 1) for w in walls]} s", file=sys.stderr)
    text = "\n".join(
        [
            "Measured by `python benchmarks/performance/main_scenarios.py` "
            f"({os.cpu_count()} CPUs; wall seconds of the whole "
            "command, start-up and figures included: the first run, before Python has compiled asyncfl's "
            f"bytecode, and the median (min–max) of {WARM_RUNS} later runs). A machine's very first run also "
            "reads torch's libraries from disk, which no script can repeat, and other CPUs take other times: "
            "rerun the script to get your machine's.",
            "",
            "| file | setting | final test accuracy | aggregations | virtual seconds | wall seconds, first run "
            "| wall seconds, later runs |",
            "| --- | --- | --- | --- | --- | --- | --- |",
            *rows,
            *(["", *notes] if notes else []),
        ]
    )
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(text + "\n" + load.note(), encoding="utf-8")
    print(RESULT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
