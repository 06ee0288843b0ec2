"""Adding a server mode is one module in asyncfl/sim/servers/ (its keys, checks, default algorithm and SimPy
process) plus an algorithm that states it runs under it.  A copy of the package gains ``serial`` (one
client at a time, in turn, every update aggregated) and ``fedavg_serial``; the flat ``server`` section,
the other-mode-key refusal and the default algorithm follow, and a run plays it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import asyncfl

NEW_MODE = '''
"""server.mode serial: one client at a time, in turn; every update is aggregated."""

from __future__ import annotations

from pydantic import Field

from asyncfl.sections import Section
from asyncfl.sim.clients import plan_task, run_task
from asyncfl.sim.servers.base import ClosedRound, ServerMode


class SerialKeys(Section):
    pause_s: float = Field(default=0.0, ge=0, description="serial: idle seconds between two clients")


def serial_server(ctx):
    env, version = ctx.env, 0
    while True:
        client = ctx.clients[version % len(ctx.clients)]
        started = env.now
        plan = plan_task(client, ctx.work, started, version)
        yield env.process(run_task(env, client, plan, ctx.log))
        closed = ClosedRound(version + 1, started, env.now, selected=[client.id])
        if plan.delivered:
            closed.received.append(plan)
            closed.started_tasks.append(plan)  # its training job is queued at the close
        else:
            closed.failed(plan)
        if (yield ctx.rounds.close(closed)) or env.now >= ctx.time_limit:
            return
        version += 1
        yield env.timeout(ctx.server.pause_s)


MODE = ServerMode(
    name="serial", summary="one client at a time", keys=SerialKeys, process=serial_server,
    default_algorithm="fedavg_serial", rounds=True, order=2,
)
'''

NEW_ALGORITHM = """
from __future__ import annotations

from typing import ClassVar, Literal

from asyncfl.algorithms.fedavg import FedAvg, FedAvgParams


class FedAvgSerialParams(FedAvgParams):
    name: Literal["fedavg_serial"]
    modes: ClassVar[frozenset[str]] = frozenset({"serial"})


STRATEGY, PARAMS = FedAvg, FedAvgSerialParams
"""

SCRIPT = """
import json, sys
from asyncfl.config import ConfigError, validate_scenario
from asyncfl.runner.start import run_scenario

base = {"data": {"dataset": "digits", "clients": 4}, "model": {"name": "logreg"}, "training": {"local_steps": 2},
        "stop": {"rounds": 5}, "output": {"plot": False}, "checkpoint": {"every_rounds": None}}
out = {"errors": {}}
s = validate_scenario({**base, "server": {"mode": "serial", "pause_s": 2.0}})
out["algorithm"], out["server"] = s.algorithm.name, list(s.server.model_dump())
for key, raw in {
    "k_in_serial": {**base, "server": {"mode": "serial", "k": 3}},
    "pause_in_sync": {**base, "server": {"mode": "sync", "pause_s": 1.0}},
    "fedavg_in_serial": {**base, "server": {"mode": "serial"}, "algorithm": {"name": "fedavg"}},
    "bad_mode": {**base, "server": {"mode": "parallel"}},
}.items():
    try:
        validate_scenario(raw)
    except ConfigError as exc:
        out["errors"][key] = str(exc)
validate_scenario({**base, "server": {"mode": "sync", "pause_s": None}})  # null clears another mode's key
run = run_scenario(s, sys.argv[1])
out["summary"] = json.loads((run / "summary.json").read_text())
out["rounds"] = (run / "rounds.csv").read_text().splitlines()
print(json.dumps(out))
"""


@pytest.mark.slow  # a copy of the package, run in a subprocess
def test_one_new_module_adds_a_server_mode(tmp_path):
    package = Path(asyncfl.__file__).parent
    shutil.copytree(package, tmp_path / "asyncfl", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "asyncfl" / "sim" / "servers" / "serial.py").write_text(NEW_MODE)
    (tmp_path / "asyncfl" / "algorithms" / "fedavg_serial.py").write_text(NEW_ALGORITHM)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "run")], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["algorithm"] == "fedavg_serial"  # the mode's default algorithm
    keys = ["mode", "selection", "deadline_s", "late_updates", "clients_per_round", "over_selection", "k"]
    keys += ["concurrency", "max_staleness"]
    assert out["server"] == keys + ["pause_s"]  # the shipped keys keep their order, the new one follows
    errors = out["errors"]
    assert "server.k (3): used only with server.mode k_async, but server.mode is serial" in errors["k_in_serial"]
    assert "server.pause_s (1.0): used only with server.mode serial, but server.mode is sync" in errors["pause_in_sync"]
    assert "'fedavg' needs server.mode sync; serial algorithms are fedavg_serial" in errors["fedavg_in_serial"]
    assert "sync" in errors["bad_mode"] and "k_async" in errors["bad_mode"] and "serial" in errors["bad_mode"]
    assert out["summary"]["algorithm"] == "fedavg_serial" and out["summary"]["rounds"] == 5
    rows = [line.split(",") for line in out["rounds"]]
    selected = [int(r[rows[0].index("selected")]) for r in rows[1:]]
    assert selected == [1] * 5  # one client per aggregation
