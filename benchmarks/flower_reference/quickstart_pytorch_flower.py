"""Regenerate the recorded result of Flower's own engine on examples/flower_quickstart_pytorch (Flower's
quickstart-pytorch example, its data loading made offline): quickstart_pytorch_flower.npz, which
tests/flower/test_quickstart_app_folder.py compares asyncfl's run of the same folder with.

Run it with a Python that has ``flwr[simulation]`` (Ray) and scikit-learn, e.g. a venv outside the repository::

    python -m venv /tmp/flwrsim && /tmp/flwrsim/bin/pip install torch "flwr[simulation]==1.42.*" scikit-learn
    /tmp/flwrsim/bin/python benchmarks/flower_reference/quickstart_pytorch_flower.py --runs 4

Each run is a fresh process that drives the folder as ``flwr run .`` does on a local simulation federation: Flower's
simulation process calls ``flwr.simulation.run_simulation._run_simulation`` with the folder's components, its fused
run config and ``is_app=True`` (``flwr/simulation/app.py``); the SuperLink and the FAB packaging around that call
are left out (they move no number).  The one addition: the process's global generators (``random``, numpy's,
torch's) are seeded as asyncfl seeds them for scenario seed 0 (``asyncfl.flower.generators``), so that the
ServerApp's ``Net()`` starts from the same weights on both engines (Flower leaves them at the process's defaults).
The ServerApp saves ``final_model.pt`` in its working directory, as the template does; the runs' largest absolute
difference (over every pair) is recorded as ``spread``, Flower's own run-to-run spread (its Ray workers, thread
timing, the order in which replies are aggregated)."""

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
APP_DIR = ROOT / "examples" / "flower_quickstart_pytorch"
OUT = ROOT / "tests" / "flower" / "reference" / "quickstart_pytorch_flower.npz"
NODES = 5  # the scenario's data.clients (test_quickstart_app_folder.py)
APP_SEED = 896642209  # asyncfl.flower.generators.flower_seeds(0)[1]: the apps' generator seed of scenario seed 0

ONE_RUN = """
import random, sys
import numpy as np, torch
from flwr.app import Context, RecordDict
from flwr.common.config import get_fused_config_from_dir
from flwr.supercore.telemetry import EventType
from flwr.simulation.run_simulation import _run_simulation

app_dir, nodes, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(seed); np.random.seed(seed); torch.manual_seed(seed)
context = Context(run_id=1, node_id=0, node_config={}, state=RecordDict(),
                  run_config=get_fused_config_from_dir(__import__("pathlib").Path(app_dir), {}))
_run_simulation(
    server_app_attr="pytorchexample.server_app:app", client_app_attr="pytorchexample.client_app:app",
    num_supernodes=nodes, backend_name="ray",
    backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}, "init_args": {"num_cpus": 2}},
    app_dir=app_dir, server_app_context=context, is_app=True, exit_event=EventType.FLWR_SIMULATION_RUN_LEAVE,
)
"""


def one_run() -> dict[str, np.ndarray]:
    """Flower's engine on the folder in a fresh process; the final model the ServerApp saved."""
    import torch

    with tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "PYTHONPATH": str(APP_DIR)}
        command = [sys.executable, "-c", ONE_RUN, str(APP_DIR), str(NODES), str(APP_SEED)]
        done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0 or not (Path(work) / "final_model.pt").is_file():
            sys.exit((done.stdout + done.stderr)[-4000:])
        state = torch.load(Path(work) / "final_model.pt")
    return {key: value.numpy() for key, value in state.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="runs of Flower's engine (the spread needs 2 or more)")
    args = parser.parse_args()
    import flwr
    import torch

    runs = [one_run() for _ in range(args.runs)]
    pairs = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1 :]]
    spread = max((float(np.abs(a[k] - b[k]).max()) for a, b in pairs for k in a), default=0.0)
    meta = {"flwr": flwr.__version__, "torch": torch.__version__, "runs": args.runs, "nodes": NODES, "spread": spread}
    np.savez(OUT, **runs[0], meta=np.array(json.dumps(meta)))
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
