"""The same Flower app under Flower's own simulation engine, on asyncfl's virtual-time Grid, and in a plain loop.

The workload: ``examples/flower_digits`` (a two-layer perceptron on scikit-learn's digits, Flower's FedAvg from
its ServerApp), ``--clients`` nodes, ``--rounds`` rounds, every node training (``fraction-train`` 1) and
evaluating every round, one local epoch.  Each variant runs in its own fresh process, ``--repeats`` times,
interleaved (loop, asyncfl, asyncfl command, loop, ...), then Flower's ``--repeats`` runs; the best time of each is
kept (the machine is shared: compare ratios, not seconds).  Flower runs last, and each of its runs waits for the
Ray processes the previous one started to exit: interleaved with it, the process after a Flower run measured up
to 60 % slower even after those processes had gone (the Grid's overhead +31.6 % vs +0.5 % without Flower in the
rotation, same machine, load 1), which would charge Ray's aftermath to the Grid.
Every process runs with one torch thread (``OMP_NUM_THREADS=1``).

* ``plain loop`` -- the floor: the ServerApp runs against a minimal Grid that calls the ClientApp in a plain
  Python loop, message by message (:class:`LoopGrid`: no clock, no population, no run files), so the server
  side (FedAvg's sampling, aggregation, logging) is the same work as in the other variants;
* ``Flower`` -- ``flwr.simulation.run_simulation`` with Flower's default backend configuration (Ray; as a
  user calls it), its run config left empty: the app's defaults, with rounds and fraction set here;
* ``asyncfl`` -- ``asyncfl.flower.run`` on a population that is always online (run files written, figures
  off), the same run config;
* ``asyncfl command`` -- ``python -m asyncfl flower SCENARIO --server-app ... --client-app ...`` as a user runs
  it, figures and every output on.

"in process" is the time of the run call inside the process (what the Grid or the engine costs); "ServerApp's
run" the part of it spent in the ServerApp's call against the Grid (the plain loop times only that call); "whole
process" is the wall time from start to exit, measured here (imports, Ray's start, writing figures).  Printed:
the Grid's overhead over the plain loop, on the ServerApp's run (target under 10 %) and on the whole
``asyncfl.flower.run`` call (which adds making the run directory and its end-of-run files), asyncfl's time over
Flower's (target below 1), the flwr version and the machine's load.  Nothing is written to docs/.

    python benchmarks/performance/bench_flower.py [--clients 10] [--rounds 5] [--repeats 3] [--skip-flower]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP_DIR = ROOT / "examples" / "flower_digits"
SERVER_APP = "flower_digits.server_app:app"
CLIENT_APP = "flower_digits.client_app:app"
VARIANTS = ("loop", "flower", "asyncfl", "asyncfl_command")
LABELS = {
    "loop": "plain loop",
    "flower": "Flower run_simulation",
    "asyncfl": "asyncfl Grid",
    "asyncfl_command": "asyncfl command",
}


def run_config(rounds: int) -> dict:
    """The run config every variant passes (Flower: as the app's defaults, since run_simulation takes none)."""
    return {"num-server-rounds": rounds, "fraction-train": 1.0, "fraction-evaluate": 1.0, "local-epochs": 1}


def scenario(clients: int, rounds: int, out: Path, figures: bool) -> dict:
    """An always-online population of ``clients`` nodes at one speed: the clock costs, nothing fails."""
    return {
        "name": "bench_flower",
        "seed": 0,
        "data": {"dataset": "digits", "clients": clients},
        "population": {"compute": {"samples_per_s": 50, "jitter_sigma": 0.0}, "availability": {"kind": "always"}},
        "server": {"mode": "sync"},
        "stop": {"rounds": rounds + 1},
        "output": {"dir": str(out), "plot": figures, "events": "all" if figures else "none"},
        "flower": {"server_app": SERVER_APP, "client_app": CLIENT_APP, "run_config": run_config(rounds)},
    }


# --- the children: one variant each, printing the seconds of its run call as JSON -----------------------------


def child_loop(clients: int, rounds: int) -> float:
    from flower_digits.client_app import app as client_app
    from flower_digits.server_app import app as server_app

    seconds, _ = run_loop(server_app, client_app, clients, run_config(rounds))
    return seconds


def run_loop(server_app, client_app, clients: int, config: dict):
    """(seconds, the LoopGrid) of ``server_app`` run against ``clients`` nodes called in a plain loop."""
    from flwr.app import Context, RecordDict
    from flwr.common.constant import NUM_PARTITIONS_KEY, PARTITION_ID_KEY
    from flwr.supercore.task_identity import TaskIdentity

    contexts = {
        node: Context(
            run_id=1,
            node_id=node,
            node_config={PARTITION_ID_KEY: node - 1, NUM_PARTITIONS_KEY: clients},
            state=RecordDict(),
            run_config=dict(config),
        )
        for node in range(1, clients + 1)
    }
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, 0  # as run_simulation sets them
    grid = loop_grid_class()(client_app, contexts)
    server_context = Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config=dict(config))
    start = time.perf_counter()
    server_app(grid, server_context)
    return time.perf_counter() - start, grid


def loop_grid_class():
    """:class:`LoopGrid`, defined once flwr is imported (a child imports it; the parent need not have flwr)."""
    from flwr.common import Message
    from flwr.serverapp import Grid
    from flwr.supercore.run import Run

    class LoopGrid(Grid):
        """The floor: a Grid that calls the ClientApp in a plain loop, in the order the messages come."""

        def __init__(self, client_app, contexts):
            self.client_app, self.contexts, self._run = client_app, contexts, Run.create_empty(run_id=1)
            self.replies: dict[str, Message] = {}
            self.calls: list[list[Message]] = []  # the replies of each send_and_receive, for the tests

        def set_run(self, run_id):
            self._run = Run.create_empty(run_id=run_id)

        @property
        def run(self):
            return self._run

        def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
            return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

        def get_node_ids(self):
            return list(self.contexts)

        def push_messages(self, messages):
            ids = []
            for i, message in enumerate(messages):
                message.metadata.__dict__["_message_id"] = f"m{len(self.replies) + i}"
                reply = self.client_app(message, self.contexts[message.metadata.dst_node_id])
                self.replies[message.metadata.message_id] = reply
                ids.append(message.metadata.message_id)
            return ids

        def pull_messages(self, message_ids):
            return [self.replies.pop(i) for i in message_ids]

        def send_and_receive(self, messages, *, timeout=None):
            self.calls.append(self.pull_messages(self.push_messages(messages)))
            return self.calls[-1]

    return LoopGrid


def child_flower(clients: int, rounds: int) -> float:
    import flower_digits.task as task
    from flower_digits.client_app import app as client_app
    from flower_digits.server_app import app as server_app
    from flwr.simulation import run_simulation

    task.DEFAULT_RUN_CONFIG.update(run_config(rounds))  # run_simulation passes no run config
    start = time.perf_counter()
    run_simulation(server_app=server_app, client_app=client_app, num_supernodes=clients)
    return time.perf_counter() - start


def child_asyncfl(clients: int, rounds: int, out: Path) -> tuple[float, float]:
    """(seconds of the asyncfl.flower.run call, seconds of the ServerApp's run against the Grid inside it)."""
    from flower_digits.client_app import app as client_app
    from flower_digits.server_app import app as server_app

    import asyncfl.flower
    import asyncfl.flower.start  # noqa: F401  (run() imports it on first use: an import, timed by "whole process")

    server_app_s = [0.0]
    call = type(server_app).__call__

    def timed(self, *args, **kwargs):
        begin = time.perf_counter()
        try:
            return call(self, *args, **kwargs)
        finally:
            server_app_s[0] += time.perf_counter() - begin

    type(server_app).__call__ = timed
    start = time.perf_counter()
    asyncfl.flower.run(server_app, client_app, scenario(clients, rounds, out, figures=False), out)
    return time.perf_counter() - start, server_app_s[0]


def child(variant: str, clients: int, rounds: int, out: Path) -> None:
    import torch

    torch.set_num_threads(1)
    # The first optimizer of a process imports torch._dynamo (seconds): every variant pays it once, before its
    # timer here; Flower's Ray workers pay it inside run_simulation (its whole-process time shows it).
    torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    server_app_s = None
    if variant == "loop":
        seconds = server_app_s = child_loop(clients, rounds)  # the loop times the ServerApp's call only
    elif variant == "flower":
        seconds = child_flower(clients, rounds)
    else:
        seconds, server_app_s = child_asyncfl(clients, rounds, out)
    print("BENCH_RESULT " + json.dumps({"seconds": seconds, "server_app_s": server_app_s}))


# --- the parent: interleaved runs, best of N, ratios ----------------------------------------------------------


def environment() -> dict[str, str]:
    path = os.pathsep.join([str(APP_DIR), str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def run_once(variant: str, args, work: Path) -> dict[str, float | None]:
    """Seconds of the run call (``in_process``; None for the command), of the ServerApp's run inside it
    (``server_app``; loop and asyncfl only) and of the whole process (``whole``)."""
    out = work / f"{variant}_{time.monotonic_ns()}"
    if variant == "asyncfl_command":
        path = work / "scenario.yaml"
        import yaml

        path.write_text(yaml.safe_dump(scenario(args.clients, args.rounds, out, figures=True)), encoding="utf-8")
        command = [sys.executable, "-m", "asyncfl", "flower", str(path), "--server-app", SERVER_APP]
        command += ["--client-app", CLIENT_APP]
    else:
        command = [sys.executable, str(Path(__file__).resolve()), "--child", variant]
        command += ["--clients", str(args.clients), "--rounds", str(args.rounds), "--out", str(out)]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=APP_DIR, env=environment(), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{LABELS[variant]} failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    inner = [line for line in done.stdout.splitlines() if line.startswith("BENCH_RESULT ")]
    result = json.loads(inner[-1].split(" ", 1)[1]) if inner else {}
    return {"in_process": result.get("seconds"), "server_app": result.get("server_app_s"), "whole": wall}


def ray_processes() -> set[int] | None:
    """Pids of the processes whose command line names Ray (None: no /proc to read)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    found = set()
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"ray" in cmdline and (b"ray::" in cmdline or b"/ray/" in cmdline):
                found.add(int(entry.name))
    return found


def wait_for_ray_to_exit(before: set[int] | None, limit_s: float = 60.0) -> None:
    """Wait until the Ray processes not in ``before`` have exited (without /proc: a fixed 10 s)."""
    if before is None:
        time.sleep(10.0)
        return
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and (ray_processes() or set()) - before:
        time.sleep(0.5)


def measure(args) -> dict[str, dict[str, float | None]]:
    variants = [v for v in VARIANTS if not (args.skip_flower and v == "flower")]
    keys = ("in_process", "server_app", "whole")
    best: dict[str, dict[str, float | None]] = {v: dict.fromkeys(keys) for v in variants}
    ours = [v for v in variants if v != "flower"]
    order = [(repeat, v) for repeat in range(args.repeats) for v in ours]  # interleaved
    order += [(repeat, "flower") for repeat in range(args.repeats) if "flower" in variants]  # then Flower's
    with tempfile.TemporaryDirectory(prefix="bench_flower_") as tmp:
        for repeat, variant in order:
            before = ray_processes() if variant == "flower" else None
            times = run_once(variant, args, Path(tmp))
            if variant == "flower":
                wait_for_ray_to_exit(before)
            print(
                f"  repeat {repeat + 1}: {LABELS[variant]:<22} in process {fmt(times['in_process'])} s "
                f"(ServerApp {fmt(times['server_app'])} s), whole {fmt(times['whole'])} s"
            )
            for key, value in times.items():
                if value is not None and (best[variant][key] is None or value < best[variant][key]):
                    best[variant][key] = value
    return best


def fmt(seconds: float | None) -> str:
    return "     -" if seconds is None else f"{seconds:6.2f}"


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}"


def report(best: dict[str, dict[str, float | None]], args) -> str:
    import flwr

    load = os.getloadavg()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines = [
        f"flwr {flwr.__version__}; {args.clients} clients x {args.rounds} rounds (train + evaluate each), "
        f"best of {args.repeats}; load average {load[0]:.1f} / {load[1]:.1f} (1 / 5 min) on {cores} cores",
        "",
        "| variant | in process (s) | ServerApp's run (s) | whole process (s) |",
        "|---|---|---|---|",
    ]
    for variant, times in best.items():
        cells = (fmt(times[key]).strip() for key in ("in_process", "server_app", "whole"))
        lines.append(f"| {LABELS[variant]} | " + " | ".join(cells) + " |")
    grid, loop = best["asyncfl"]["in_process"], best["loop"]["in_process"]
    served = best["asyncfl"]["server_app"]
    lines += [
        "",
        f"Grid overhead over the plain loop (the ServerApp's run: messages, clock, failures, per-round records): "
        f"{(served / loop - 1) * 100:+.1f} % (target < 10 %)",
        f"asyncfl.flower.run over the plain loop (adds the run directory: scenario, population, config.yaml, "
        f"clients.csv, summary.json): {(grid / loop - 1) * 100:+.1f} %",
    ]
    if "flower" in best:
        flower = best["flower"]
        lines.append(
            f"asyncfl / Flower: in process {ratio(grid, flower['in_process'])}, whole process "
            f"{ratio(best['asyncfl']['whole'], flower['whole'])}; command (figures, every output) / Flower whole "
            f"process {ratio(best['asyncfl_command']['whole'], flower['whole'])} (target < 1)"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-flower", action="store_true", help="leave out run_simulation (no Ray here)")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.clients, args.rounds, args.out)
        return
    print(report(measure(args), args))


if __name__ == "__main__":
    main()
