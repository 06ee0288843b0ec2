"""Run the README's two main scenarios through the command line and write the numbers the README quotes.

    python benchmarks/main_scenarios.py     # about a minute on 2 idle cores

Runs ``python -m asyncfl scenarios/k_async.yaml`` and ``scenarios/sync_deadline.yaml`` exactly as a user
would (each in a fresh process, figures included), then writes ``benchmarks/results/main_scenarios.md``:
per scenario its setting (read from the resolved config.yaml), final test accuracy, aggregations, virtual
seconds and the wall seconds of the whole command; for a sync scenario with a deadline, how many attempts
of the slowest speed tier delivered.  ``python benchmarks/readme_sync.py`` copies the file into the README.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("scenarios/k_async.yaml", "scenarios/sync_deadline.yaml")
RESULT = ROOT / "benchmarks" / "results" / "main_scenarios.md"


def run_cli(scenario: str, out: Path) -> float:
    """Wall seconds of one ``python -m asyncfl FILE`` command, start-up and figures included."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
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


def main() -> int:
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in SCENARIOS:
            out = Path(tmp) / Path(scenario).stem
            wall = run_cli(scenario, out)
            summary = json.loads((out / "summary.json").read_text())
            config = yaml.safe_load((out / "config.yaml").read_text())
            rows.append(
                f"| `{scenario}` | {setting(config)} | {summary['final_accuracy']:.3f} | {summary['rounds']} | "
                f"{summary['virtual_time_s']:.0f} | {wall:.0f} |"
            )
            if config["server"]["mode"] == "sync" and config["server"]["deadline_s"]:
                note = slow_tier(out)
                if note:
                    notes.append(f"With the {config['server']['deadline_s']:g} s deadline of `{scenario}`, {note}.")
            print(f"{scenario}: {wall:.1f} s", file=sys.stderr)
    text = "\n".join(
        [
            f"Measured by `python benchmarks/main_scenarios.py` ({os.cpu_count()} CPUs; wall seconds of the whole "
            "command, start-up and figures included).",
            "",
            "| file | setting | final test accuracy | aggregations | virtual seconds | wall seconds |",
            "| --- | --- | --- | --- | --- | --- |",
            *rows,
            *(["", *notes] if notes else []),
        ]
    )
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(text + "\n", encoding="utf-8")
    print(RESULT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
