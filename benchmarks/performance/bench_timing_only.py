"""timing_only at scale: 100,000 clients, 10 synchronous rounds (a million client-rounds).

Covers: log-normal speeds and uplinks, per-round Bernoulli availability p_i ~ U[0.1, 1], a 30 s
deadline, an MLP's model size on digits; no training.  Runs the scenario once per event-log mode
(all, a 1,000-client sample, none) and prints wall time, client-rounds per second and simulated
events per second, where the events are the lines the full log holds (task phases, arrivals,
failures, aggregations; counted in the ``all`` run) whether or not they are written.

    python benchmarks/performance/bench_timing_only.py [--clients 100000] [--rounds 10]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from asyncfl.config.loading import validate_scenario
from asyncfl.runner.start import run_scenario

SCENARIO = {
    "name": "timing_100k",
    "timing_only": True,
    "data": {"dataset": "digits"},
    "model": {"name": "mlp"},
    "population": {
        "compute": {"samples_per_s": {"dist": "lognormal", "median": 60, "sigma": 0.8}, "jitter_sigma": 0.1},
        "network": {"uplink_mbps": {"dist": "lognormal", "median": 5, "sigma": 0.5}},
        "availability": {"kind": "bernoulli", "p": {"dist": "uniform", "low": 0.1, "high": 1.0}},
    },
    "server": {"deadline_s": 30},
    "eval": {"per_client": False},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--modes", nargs="+", default=["all", "sample", "none"])
    args = parser.parse_args()
    simulated = None
    print(f"{args.clients:,} clients x {args.rounds} sync rounds, timing_only")
    for mode in args.modes:
        raw = {**SCENARIO, "data": {**SCENARIO["data"], "clients": args.clients}, "stop": {"rounds": args.rounds}}
        raw["output"] = {"events": mode, "event_sample": 1000, "plot": False}
        out = Path(tempfile.mkdtemp()) / "run"
        start = time.perf_counter()
        run_scenario(validate_scenario(raw), out)
        wall = time.perf_counter() - start
        log = out / "events.jsonl"
        lines = sum(1 for _ in open(log)) if log.exists() else 0
        simulated = lines if mode == "all" else simulated
        shutil.rmtree(out.parent)
        print(
            f"events={mode:6} wall {wall:6.1f} s  {(simulated or 0) / wall:>10,.0f} simulated events/s  "
            f"{args.clients * args.rounds / wall:>9,.0f} client-rounds/s  {lines:>10,} lines logged"
        )


if __name__ == "__main__":
    main()
