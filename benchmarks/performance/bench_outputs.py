"""Population-scale outputs (issue 24, goals 2 and 3): CSV against Parquet, and the figures of a
10^6-client run before and after they were drawn from aggregated columns.

The run: benchmarks/scenarios/population.yaml, timing only, 1,000,000 clients, 1,000 per round, 100
rounds, 30 s deadline, figures on (as users run it), events.jsonl off (``--events`` to change), each
the whole CLI command in its own process:

  before   ``--before DIR``: the same command with DIR first on PYTHONPATH (a checkout of the older
           code, e.g. ``git worktree add /tmp/before de4eebb``); output.format is CSV there
  csv      this checkout, output.format: csv (the default)
  parquet  this checkout, output.format: parquet

Prints one table: the whole command's seconds, summary.json's simulation and figure seconds, the
size of the population tables (clients, updates, rounds, metrics), and the seconds to read them all
back with pandas; then the write and read seconds of clients alone (write_table in this process, from
the columns read back), and the ratios (figures before / after; CSV / Parquet).  Nothing is timed in
a test: run it by hand, once, on a quiet machine.

    python benchmarks/performance/bench_outputs.py [--clients 1000000] [--rounds 100] [--before DIR]
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

from asyncfl.output.reading import load_table, read_summary, table_file  # noqa: E402
from asyncfl.output.writing import write_table  # noqa: E402

SCENARIO = ROOT / "benchmarks" / "scenarios" / "population.yaml"
TABLES = ("clients", "updates", "rounds", "metrics")


def run_command(code: Path, run_dir: Path, clients: int, rounds: int, fmt: str | None, events: str) -> dict:
    """One whole ``python -m asyncfl`` command with ``code`` first on the path; its timings and files."""
    overrides = [f"data.clients={clients}", "server.clients_per_round=1000", f"stop.rounds={rounds}",
                 f"output.events={events}"] + ([f"output.format={fmt}"] if fmt else [])  # fmt: skip
    sets = [arg for o in overrides for arg in ("--set", o)]
    env = {**os.environ, "PYTHONPATH": str(code) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "asyncfl", "run", str(SCENARIO), *sets, "--out", str(run_dir), "--quiet"],
                   check=True, env=env, cwd=code)  # fmt: skip
    total = time.perf_counter() - start
    summary = read_summary(run_dir)
    files = [table_file(run_dir / f"{name}.csv") for name in TABLES]
    started = time.perf_counter()
    for path in files:
        load_table(path)
    read = time.perf_counter() - started
    return {
        "total": total, "simulation": summary["real_seconds"], "figures": summary.get("figures_seconds", float("nan")),
        "bytes": sum(p.stat().st_size for p in files), "read": read, "files": [p.name for p in files],
    }  # fmt: skip


def clients_write_read(run_dir: Path, scratch: Path) -> dict[str, tuple[float, float, int]]:
    """clients' columns written by write_table as CSV and as Parquet, and read back: (write s, read s, bytes)."""
    columns = {name: column.to_numpy() for name, column in load_table(run_dir / "clients.csv").items()}
    out = {}
    for fmt in ("csv", "parquet"):
        start = time.perf_counter()
        path = write_table(scratch / f"clients_{fmt}", columns, fmt)
        written = time.perf_counter() - start
        start = time.perf_counter()
        load_table(path)
        out[fmt] = (written, time.perf_counter() - start, path.stat().st_size)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--events", default="none", choices=("all", "sample", "none"))
    parser.add_argument("--before", type=Path, help="a checkout of the older code (figures before)")
    args = parser.parse_args()
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-outputs-") as tmp:
        scratch = Path(tmp)
        if args.before is not None:
            rows["before (csv)"] = run_command(args.before, scratch / "before", args.clients, args.rounds, None,
                                               args.events)  # fmt: skip
        for fmt in ("csv", "parquet"):
            rows[fmt] = run_command(ROOT, scratch / fmt, args.clients, args.rounds, fmt, args.events)
        clients = clients_write_read(scratch / "csv", scratch)
    print(f"Timing-only sync, {args.clients:,} clients, 1,000 per round, {args.rounds} rounds, figures on, "
          f"events: {args.events}; whole commands (python benchmarks/performance/bench_outputs.py).\n")  # fmt: skip
    print("| run | whole command (s) | simulation (s) | figures (s) | tables (MB) | read tables (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(f"| {name} | {r['total']:.1f} | {r['simulation']:.1f} | {r['figures']:.2f} | {r['bytes'] / 1e6:.1f} "
              f"| {r['read']:.2f} |")  # fmt: skip
    print("\n| clients table | write (s) | read (s) | MB |\n|---|---:|---:|---:|")
    for fmt, (written, read, size) in clients.items():
        print(f"| {fmt} | {written:.2f} | {read:.2f} | {size / 1e6:.1f} |")
    csv, parquet = rows["csv"], rows["parquet"]
    write_ratio = clients["csv"][0] / clients["parquet"][0]
    print(f"\ncsv / parquet: tables size {csv['bytes'] / parquet['bytes']:.1f}x, "
          f"read {csv['read'] / parquet['read']:.1f}x, clients write {write_ratio:.1f}x")  # fmt: skip
    if "before (csv)" in rows:
        before = rows["before (csv)"]
        print(f"figures before / after: {before['figures'] / csv['figures']:.1f}x ({before['figures']:.2f} s -> "
              f"{csv['figures']:.2f} s csv, {parquet['figures']:.2f} s parquet); whole command "
              f"{before['total']:.1f} s -> {csv['total']:.1f} s csv, {parquet['total']:.1f} s parquet")  # fmt: skip


if __name__ == "__main__":
    main()
