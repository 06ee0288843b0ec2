"""Regenerate the recorded result of Flower's own engine on the legacy app tests/flower/legacy_app.py
(``ServerApp(server_fn=...)``, the legacy ``FedAvg`` in Flower's legacy ``Server``, a ``NumPyClient``):
legacy_app_flower.npz, which tests/flower/test_legacy_app_against_flower.py compares asyncfl's run of the same app
with.

Run it with a Python that has ``flwr[simulation]`` (Ray) and asyncfl's dependencies (the app trains with asyncfl's
SequentialTrainer, on asyncfl's digits partitions), from the repository's root::

    /tmp/flwrsim/bin/python benchmarks/flower_reference/legacy_app_flower.py --runs 4

Each run is a fresh process calling Flower's ``run_simulation`` (4 nodes on Ray, one CPU each; the app's defaults:
3 rounds, every node training and evaluating).  The app's ``evaluate_fn`` keeps the global parameters after each
round (``legacy_app.ROUNDS``); the first run's are recorded, with the largest difference between any two runs
(``spread``: Flower's own run-to-run spread, from the order its pool threads finish, which is the order FedAvg sums
the results in)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
APPS = ROOT / "tests" / "flower"  # the legacy app's module (the test's own app)
OUT = APPS / "reference" / "legacy_app_flower.npz"
NODES = 4  # digits_app.CLIENTS

ONE_RUN = """
import sys
import numpy as np
import legacy_app
from flwr.simulation import run_simulation

run_simulation(
    server_app=legacy_app.server_app, client_app=legacy_app.client_app, num_supernodes=int(sys.argv[1]),
    backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}, "init_args": {"num_cpus": 2}},
)
np.save(sys.argv[2], np.stack(legacy_app.ROUNDS))
"""


def one_run() -> np.ndarray:
    """Flower's engine on the legacy app in a fresh process; the global parameters after each round."""
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "rounds.npy"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(APPS)])}
        command = [sys.executable, "-c", ONE_RUN, str(NODES), str(out)]
        done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0 or not out.is_file():
            sys.exit((done.stdout + done.stderr)[-4000:])
        return np.load(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="runs of Flower's engine (the spread needs 2 or more)")
    args = parser.parse_args()
    import flwr

    runs = [one_run() for _ in range(args.runs)]
    pairs = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1 :]]
    spread = max((float(np.abs(a - b).max()) for a, b in pairs), default=0.0)
    meta = {"flwr": flwr.__version__, "runs": args.runs, "nodes": NODES, "spread": spread}
    np.savez(OUT, rounds=runs[0], meta=np.array(json.dumps(meta)))
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
