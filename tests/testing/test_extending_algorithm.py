"""Adding an algorithm is adding one file: a copy of the package plus ``algorithms/fedavg_half.py`` (a
parameter section with its name and modes, and a strategy) validates, runs, and is refused under a server
mode it does not state.  Everything runs in a subprocess on the copy, so the installed package is untouched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import asyncfl

NEW_ALGORITHM = '''
"""FedAvg taking half a step: w <- w + server_lr * mean_i Delta_i with server_lr 0.5 by default."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from asyncfl.algorithms.base import Aggregate, Memoryless, weighted_sum
from asyncfl.algorithms.base import AlgorithmParams


class FedAvgHalfParams(AlgorithmParams):
    """FedAvg with half a server step."""

    name: Literal["fedavg_half"]
    modes: ClassVar[frozenset[str]] = frozenset({"sync"})
    server_lr: float = Field(default=0.5, gt=0, description="global learning rate eta_g (half a step)")


class FedAvgHalf(Memoryless):
    def __init__(self, params, num_clients, like):
        self.params = params

    def aggregate(self, global_params, updates, context):
        if not updates:
            return Aggregate(global_params.clone())
        weights = [1.0 / len(updates)] * len(updates)
        step = weighted_sum(updates, weights)
        return Aggregate(global_params + self.params.server_lr * step, {u.client: w for u, w in zip(updates, weights)})


STRATEGY, PARAMS = FedAvgHalf, FedAvgHalfParams
'''

SCRIPT = """
import json, sys
from asyncfl.config import ConfigError, validate_scenario
from asyncfl.runner.start import run_scenario

base = {"data": {"dataset": "digits", "clients": 8}, "model": {"name": "logreg"}, "training": {"local_steps": 3},
        "stop": {"rounds": 2}, "output": {"plot": False}, "checkpoint": {"every_rounds": None}}
out = {}
half = validate_scenario({**base, "algorithm": {"name": "fedavg_half"}})
out["server_lr"] = half.algorithm.server_lr
try:
    validate_scenario({**base, "server": {"mode": "k_async", "k": 2}, "algorithm": {"name": "fedavg_half"}})
except ConfigError as exc:
    out["k_async_error"] = str(exc)
same = validate_scenario({**base, "algorithm": {"name": "fedavg", "server_lr": 0.5}})
full = validate_scenario({**base, "algorithm": {"name": "fedavg"}})
for key, s in (("half", half), ("same", same), ("full", full)):
    run = run_scenario(s, sys.argv[1] + "/" + key)
    out[key] = {"dir": str(run), "summary": json.loads((run / "summary.json").read_text())}
print(json.dumps(out))
"""


def _metrics(run_dir: str) -> list[str]:
    """metrics.csv without its wall-clock column."""
    rows = [line.split(",") for line in (Path(run_dir) / "metrics.csv").read_text().splitlines()]
    keep = [i for i, name in enumerate(rows[0]) if "wall" not in name]
    return [",".join(row[i] for i in keep) for row in rows]


@pytest.mark.slow  # a copy of the package, run in a subprocess
def test_one_new_file_adds_an_algorithm(tmp_path):
    package = Path(asyncfl.__file__).parent
    shutil.copytree(package, tmp_path / "asyncfl", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "asyncfl" / "algorithms" / "fedavg_half.py").write_text(NEW_ALGORITHM)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "runs")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["half"]["dir"].startswith(str(tmp_path))
    assert out["server_lr"] == 0.5
    assert "algorithm.name 'fedavg_half' needs server.mode sync; k_async algorithms are" in out["k_async_error"]
    assert out["half"]["summary"]["algorithm"] == "fedavg_half"
    half, same, full = (_metrics(out[key]["dir"]) for key in ("half", "same", "full"))
    assert len(half) == 4  # header, round 0, two aggregations
    assert half == same  # half a FedAvg step is FedAvg with server_lr 0.5, to the bit
    assert half[1] == full[1] and half[2:] != full[2:]  # same start, different steps
