"""Adding an availability kind is adding one file (docs/how-to/extending.md).

The package is copied, ONE module is written into its availability folder, and the copy validates and
runs scenarios with ``kind: toy`` (sync and k_async, timing only) in a subprocess: the schema, the
k_async checks, clients.csv's ``availability_p`` and the offline measurement all come from the
registry, with no other file edited.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import asyncfl
from asyncfl.config import ConfigError, validate_scenario
from asyncfl.config.population import Availability
from asyncfl.config.problems import tag_of
from asyncfl.sim.availability import KINDS

TOY = '''"""``kind: toy``: every client is online during the first half of every ``period_s``; p_i = 0.5."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from asyncfl.sim.availability.base import AvailabilityKind, AvailabilityModel, Section


class ToyAvailability(Section):
    """Online during the first half of every period (all clients in step)."""

    kind: Literal["toy"]
    period_s: float = Field(default=100.0, gt=0, description="period, seconds")


class Toy(AvailabilityModel):
    round_indexed = False

    def __init__(self, period_s: float) -> None:
        self.period = period_s

    def online(self, t: float, rnd: int) -> bool:
        return t % self.period < self.period / 2

    def next_offline(self, t: float, rnd: int) -> float:
        return (t // self.period) * self.period + self.period / 2 if self.online(t, rnd) else t

    def next_online(self, t: float) -> float:
        return t if self.online(t, 0) else (t // self.period + 1) * self.period


KIND = AvailabilityKind(
    section=ToyAvailability,
    build=lambda spec, draw: lambda i: Toy(spec.period_s),
    probabilities=lambda spec, draw: [0.5] * draw.num_clients,
    seeded=False,
    examples=(("toy", {"kind": "toy", "period_s": 40.0}),),
)
'''

PERIOD_S = 40.0  # online on [0, 20), [40, 60), ...
SCENARIO = """name: toy_{mode}
data: {{clients: 6}}
timing_only: true
population: {{availability: {{kind: toy, period_s: 40}}}}
server: {{mode: {mode}{server}}}
stop: {{rounds: {rounds}}}
output: {{plot: false}}
"""
RUN_BOTH = (  # one interpreter for both runs: torch is imported once
    "from asyncfl.cli import main\n"
    "for name in ('sync', 'k_async'): main(['run', name + '.yaml', '--out', name, '--quiet'])"
)


def _offline_until(t: float) -> float:
    """Seconds of [0, t] in the toy's offline halves [20, 40), [60, 80) ..."""
    full, rest = divmod(t, PERIOD_S)
    return full * PERIOD_S / 2 + max(0.0, rest - PERIOD_S / 2)


@pytest.fixture(scope="module")
def toy_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("extended")
    package = Path(asyncfl.__file__).parent
    shutil.copytree(package, root / "asyncfl", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "asyncfl" / "sim" / "availability" / "toy.py").write_text(TOY)  # the one file
    (root / "sync.yaml").write_text(SCENARIO.format(mode="sync", server="", rounds=12))
    (root / "k_async.yaml").write_text(SCENARIO.format(mode="k_async", server=", k: 2, concurrency: 3", rounds=30))
    env = {**os.environ, "PYTHONPATH": str(root)}

    def python(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=120)

    validated = python("-m", "asyncfl", "validate", "k_async.yaml")
    ran = python("-c", RUN_BOTH)
    return root, validated, ran


def _rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_the_copy_validates_the_new_kind(toy_runs):
    root, validated, _ = toy_runs
    assert validated.returncode == 0, validated.stderr
    assert "k_async.yaml: valid (k_async" in validated.stdout


@pytest.mark.slow
def test_sync_run_follows_the_toy_model(toy_runs):
    root, _, ran = toy_runs
    assert ran.returncode == 0, ran.stderr
    clients = _rows(root / "sync" / "clients.csv")
    assert [float(c["availability_p"]) for c in clients] == [0.5] * 6  # the kind's p_i, not a drawn one
    rounds = _rows(root / "sync" / "rounds.csv")
    for r in rounds:  # everybody selected: all fail when a round starts offline or is still running at the cut
        started, closed = float(r["started"]), float(r["time"])
        cut = started // PERIOD_S * PERIOD_S + PERIOD_S / 2
        assert int(r["failed_offline"]) == (6 if closed >= cut else 0), r
    assert any(int(r["failed_offline"]) for r in rounds) and any(not int(r["failed_offline"]) for r in rounds)


@pytest.mark.slow
def test_k_async_run_follows_the_toy_model(toy_runs):
    root, _, ran = toy_runs
    assert ran.returncode == 0, ran.stderr
    run = root / "k_async"
    clients = _rows(run / "clients.csv")
    assert [float(c["availability_p"]) for c in clients] == [0.5] * 6
    end = json.loads((run / "summary.json").read_text())["virtual_time_s"]
    assert end > PERIOD_S  # the run crossed an offline half
    for c in clients:  # offline_s measured by walking the toy's switches
        assert float(c["offline_s"]) == pytest.approx(_offline_until(end), abs=1e-6)
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    assert all(e["t"] % PERIOD_S < PERIOD_S / 2 for e in events if e["event"] == "download")  # dispatched online only
    cuts = [e for e in events if e["event"] == "fail"]
    assert cuts and all(e["reason"] == "offline" and e["t"] % PERIOD_S == PERIOD_S / 2 for e in cuts)


def test_registry_lists_every_kind_the_schema_accepts():
    union = typing.get_args(typing.get_args(Availability)[0])
    assert [tag_of(member) for member in union] == list(KINDS)  # same kinds, same order
    assert [k.section for k in KINDS.values()] == list(union)
    with pytest.raises(ConfigError) as refused:
        validate_scenario({"population": {"availability": {"kind": "toy"}}})  # not in this (uncopied) package
    assert all(name in str(refused.value) for name in KINDS)


def test_round_counting_kinds_are_refused_in_k_async_by_their_registration():
    for kind in KINDS.values():
        for _, spec in kind.examples:
            if spec.get("file") == "TRACE":
                continue
            a = validate_scenario({"population": {"availability": spec}}).population.availability
            raw = {"server": {"mode": "k_async"}, "population": {"availability": spec}}
            if kind.counts_rounds(a) is None:
                validate_scenario(raw)
            else:
                with pytest.raises(ConfigError, match="slot_s is required|counts sync rounds"):
                    validate_scenario(raw)
