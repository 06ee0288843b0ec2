"""Bytes per client of a timing-only population: the constants of asyncfl/sim/population.py's
``population_bytes`` (the estimate that refuses a population too large for the machine's memory:
PLAIN_BYTES_PER_CLIENT and RICH_BYTES_PER_CLIENT, the two rows below, rounded up).

Each measurement is one timing-only run (benchmarks/scenarios/population.yaml, 3 aggregations, no
events; figures off, and on as users run it) in a fresh subprocess: the peak resident set (VmHWM) of
the whole run minus the resident set just before it starts, at two population sizes; the slope
between them is the cost of one more client.  Two kinds of cost:

  drawn   every client's drawn columns (profiles, availability parameters, clients.csv): a sync run
          that samples 10 clients per round, so almost nobody is built
  built   a client the simulation has touched (its ClientDevice, availability model, statistics,
          the plan of its last task): a sync run that gives every client a task each round, minus drawn

Each for the plain population (Bernoulli availability) and a rich one (diurnal availability in time
zones, an unmetered-network eligibility process, a battery with charging windows).  Measured on
x86_64, Python 3.11, numpy 2 (2026-11), before the population was held in columns: plain drawn 1,888,
built 3,444; rich drawn 2,581, built 9,589.  With it (issue 24): plain drawn 278 with figures off and
741 with them on (the figures read clients.csv back), built 4,510; rich (sizes 30,000 and 90,000,
figures off) drawn 1,184, built 10,297.

    python benchmarks/performance/population_memory.py [--sizes 100000 300000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "benchmarks" / "scenarios" / "population.yaml"

CHILD = """
import sys, tempfile, gc
from asyncfl.config import load_scenario
from asyncfl.runner.start import run_scenario
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
scenario = load_scenario(sys.argv[1], sys.argv[2:])
gc.collect()
base = status('VmRSS')
with tempfile.TemporaryDirectory() as tmp:
    run_scenario(scenario, tmp + '/run')
print(status('VmHWM') - base)
"""

COMMON = ["stop.rounds=3", "output.events=none", "eval.per_client=false"]
FIGURES = {"figures off": ["output.plot=false"], "figures on": ["output.plot=true"]}  # users run with them on
SERVERS = {
    "drawn": ["server.mode=sync", "server.clients_per_round=10"],
    "built": ["server.mode=sync", "server.clients_per_round=null"],
}
POPULATIONS = {
    "plain": [],
    "rich": [
        "population.availability={kind: diurnal, p: {dist: uniform, low: 0.2, high: 0.6}, amplitude: 0.9, "
        "peak_hour: 21, mean_cycle_s: 1800}",
        "population.timezones=[{share: 0.5, offset: -5}, {share: 0.5, offset: 8}]",
        "population.battery={capacity_j: 40000, charging: {period_s: 86400, plugged_fraction: 0.3}}",
        "population.eligibility={charging: true, unmetered: {kind: markov, p: 0.7, mean_cycle_s: 7200}}",
    ],
}


def peak_bytes(clients: int, overrides: list[str]) -> int:
    """Peak resident bytes a timing-only run of ``clients`` clients adds to a started process."""
    command = [sys.executable, "-c", CHILD, str(SCENARIO), f"data.clients={clients}", *COMMON, *overrides]
    return int(subprocess.run(command, check=True, capture_output=True, text=True).stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs=2, default=[100_000, 300_000], metavar="N")
    small, large = parser.parse_args().sizes
    print(f"bytes per client, the slope between {small:,} and {large:,} clients")
    for population, extra in POPULATIONS.items():
        for figures, plot in FIGURES.items():
            slopes = {}
            for cost, server in SERVERS.items():
                low, high = (peak_bytes(n, server + extra + plot) for n in (small, large))
                slopes[cost] = (high - low) / (large - small)
            drawn, built = slopes["drawn"], slopes["built"] - slopes["drawn"]
            print(f"  {population}, {figures}: drawn {drawn:.0f}, built {built:.0f}")


if __name__ == "__main__":
    main()
