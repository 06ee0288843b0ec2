"""Plug-ins from outside the package: an algorithm, an availability kind and a data set registered from
this test module (no copy of the package) validate and run end to end through ``asyncfl.run``; an
installed plug-in is found through the ``asyncfl.plugins`` entry point; a taken name is refused.  Every
registration is undone after its test, so that the other tests see only the built-ins."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
import pytest
from pydantic import Field

import asyncfl
import asyncfl.registry
from asyncfl import algorithms
from asyncfl.algorithms.base import Aggregate, AlgorithmParams, Memoryless, weighted_sum
from asyncfl.config import ConfigError, validate_scenario
from asyncfl.config.reference import reference_markdown
from asyncfl.config.schema import Scenario, scenario_model
from asyncfl.learn.datasets import REGISTRY as DATASETS
from asyncfl.learn.datasets import DataSet, RawData
from asyncfl.sim.availability import KINDS
from asyncfl.sim.availability.base import INF, AvailabilityKind, AvailabilityModel, Section
from asyncfl.testing import check_availability_kind, check_strategy

# --- the plug-in: three registrations, written as a user would write them -------------------------


class HalfStepParams(AlgorithmParams):
    """FedAvg taking half a server step."""

    name: Literal["half_step"]
    modes: ClassVar[frozenset[str]] = frozenset({"sync"})
    server_lr: float = Field(default=0.5, gt=0, description="global learning rate")


class HalfStep(Memoryless):
    def __init__(self, params, num_clients, like):
        self.params = params

    def aggregate(self, global_params, updates, context):
        if not updates:
            return Aggregate(global_params.clone())
        weights = [1.0 / len(updates)] * len(updates)
        step = weighted_sum(updates, weights)
        return Aggregate(global_params + self.params.server_lr * step, {u.client: w for u, w in zip(updates, weights)})


class BlackoutSection(Section):
    """Every client online except during one window of virtual time."""

    kind: Literal["blackout"] = "blackout"
    from_s: float = Field(default=5.0, ge=0)
    until_s: float = Field(default=8.0, gt=0)


class Blackout(AvailabilityModel):
    round_indexed = False

    def __init__(self, spec):
        self.start, self.end = spec.from_s, spec.until_s

    def online(self, t, rnd):
        return not self.start <= t < self.end

    def offline_seconds(self, until):
        return max(0.0, min(until, self.end) - self.start)

    def next_offline(self, t, rnd):
        return self.start if t < self.start else (t if t < self.end else INF)

    def next_online(self, t):
        return self.end if self.start <= t < self.end else t


BLACKOUT = AvailabilityKind(
    section=BlackoutSection,
    build=lambda spec, draw: lambda i: Blackout(spec),
    probabilities=lambda spec, draw: [float("nan")] * draw.num_clients,
    seeded=False,
    examples=(("blackout", {"kind": "blackout"}),),
)

POOL, TEST = 120, 30


def _blobs(data, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, POOL + TEST)
    x = (rng.normal(size=(POOL + TEST, 1, 4, 4)) + y[:, None, None, None]).astype(np.float32)
    return RawData(x[:POOL], y[:POOL].astype(np.int64), x[POOL:], y[POOL:].astype(np.int64), num_classes=3)


BLOBS = DataSet("blobs", _blobs, input_shape=(1, 4, 4), classes=3, inputs="images", train_pool=POOL)


@pytest.fixture
def plugin():
    algorithms.register(HalfStepParams, HalfStep)
    KINDS.register(BLACKOUT)
    DATASETS.register(BLOBS)
    yield
    algorithms.unregister("half_step")
    KINDS.unregister("blackout")
    DATASETS.unregister("blobs")


BASE = {
    "data": {"dataset": "blobs", "clients": 4, "partition": {"kind": "iid"}},
    "model": {"name": "logreg"},
    "training": {"local_steps": 2},
    "stop": {"rounds": 3},
    "output": {"plot": False},
    "checkpoint": {"every_rounds": None},
}


def _losses(run) -> list[float]:
    return run.metrics["test_loss"].tolist()


def test_registered_entries_validate_and_run_end_to_end(plugin, tmp_path):
    scenario = validate_scenario({**BASE, "algorithm": {"name": "half_step"}})
    assert isinstance(scenario, Scenario) and type(scenario) is not Scenario  # built from the registries now
    assert scenario.algorithm.server_lr == 0.5 and scenario.data.dataset == "blobs"
    half = asyncfl.run(scenario, out=tmp_path / "half")
    same = asyncfl.run({**BASE, "algorithm": {"name": "fedavg", "server_lr": 0.5}}, out=tmp_path / "same")
    full = asyncfl.run({**BASE, "algorithm": {"name": "fedavg"}}, out=tmp_path / "full")
    assert half.summary["algorithm"] == "half_step"
    assert _losses(half) == _losses(same)  # half a FedAvg step is FedAvg with server_lr 0.5
    assert _losses(half)[0] == _losses(full)[0] and _losses(half)[1:] != _losses(full)[1:]
    # the data set's sizes: the 120-sample pool dealt to 4 clients, each keeping a test share
    clients = half.clients
    assert len(clients) == 4
    assert int(clients["train_samples"].sum() + clients["test_samples"].sum()) == POOL
    # the registered names are allowed values of the schema and the reference
    assert "`half_step`" in reference_markdown() and "`blackout`" in reference_markdown()


def test_registered_availability_kind_fails_tasks_in_its_window(plugin, tmp_path):
    always = asyncfl.run(BASE, out=tmp_path / "always")
    assert always.rounds["failed_offline"].sum() == 0
    start = 1.5 * always.rounds["time"].iloc[0]  # in the middle of the second round
    window = {"kind": "blackout", "from_s": start, "until_s": start + 100}
    rounds = asyncfl.run({**BASE, "population": {"availability": window}}, out=tmp_path / "blackout").rounds
    assert rounds["failed_offline"].tolist()[:2] == [0, 4]  # every task running at from_s is lost then
    assert rounds["time"].iloc[1] == pytest.approx(start)


def test_a_taken_name_is_refused(plugin):
    with pytest.raises(ValueError, match="'blackout' is already registered"):
        KINDS.register(BLACKOUT)
    with pytest.raises(ValueError, match="'fedavg' is already registered"):
        algorithms.register(
            type("Again", (HalfStepParams,), {"__annotations__": {"name": Literal["fedavg"]}}), HalfStep
        )
    with pytest.raises(ValueError, match="'digits' is already registered"):
        DATASETS.register(DataSet("digits", _blobs, input_shape=(1, 4, 4), classes=3))


def test_unregistered_names_are_unknown_again(tmp_path):
    assert scenario_model() is Scenario
    with pytest.raises(ConfigError, match="data.dataset"):
        validate_scenario({**BASE})


def test_an_installed_plugin_is_found_through_its_entry_point(monkeypatch):
    module = types.ModuleType("asyncfl_blobs_plugin")
    module.register = lambda: DATASETS.register(BLOBS)  # a callable entry point: called once
    monkeypatch.setitem(sys.modules, module.__name__, module)
    module.BLACKOUT = BLACKOUT  # an entry point naming a registration object: routed to its registry
    group = asyncfl.registry.PLUGIN_GROUP
    points = [
        importlib.metadata.EntryPoint("blobs", f"{module.__name__}:register", group),
        importlib.metadata.EntryPoint("blackout", f"{module.__name__}:BLACKOUT", group),
    ]
    seen = []

    def entry_points(group):
        seen.append(group)
        return points if group == asyncfl.registry.PLUGIN_GROUP else []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(asyncfl.registry, "_plugins_loaded", False)
    try:
        assert "blobs" not in DATASETS and "blackout" not in KINDS
        keys = {**BASE, "population": {"availability": {"kind": "blackout"}}}
        scenario = validate_scenario(keys)  # the plug-ins load before the first validation
        assert scenario.data.dataset == "blobs" and scenario.population.availability.kind == "blackout"
        validate_scenario(BASE)
        assert seen == [group]  # once
    finally:
        DATASETS.unregister("blobs")
        KINDS.unregister("blackout")


def test_the_public_contract_checks_pass_on_the_plugin(plugin):
    check_strategy("half_step")
    check_availability_kind(BLACKOUT)


# --- installed plug-ins that cannot load: a fake distribution on sys.path ----------------------------

BROKEN_POINTS = {  # entry point -> what it names
    "raises": "asyncfl_broken_on_import",  # a module whose import raises
    "missing": "asyncfl_not_installed",  # a module that is not there
    "taken": "asyncfl_taken_name:register",  # a callable registering a name a built-in holds
    "fine": "asyncfl_fine_plugin:BLACKOUT",  # a plug-in that loads (registered although the others fail)
}


def _broken_distribution(root):
    """``asyncfl-broken-plugins`` 1.0 as pip would install it: a *.dist-info with entry_points.txt, and
    the modules its entry points name (but one), in ``root`` (to be put on sys.path)."""
    info = root / "asyncfl_broken_plugins-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: asyncfl-broken-plugins\nVersion: 1.0\n")
    points = "".join(f"{name} = {target}\n" for name, target in BROKEN_POINTS.items())
    (info / "entry_points.txt").write_text(f"[{asyncfl.registry.PLUGIN_GROUP}]\n{points}")
    (root / "asyncfl_broken_on_import.py").write_text("raise RuntimeError('no licence file found')\n")
    (root / "asyncfl_taken_name.py").write_text(
        "from asyncfl.learn.datasets import REGISTRY, DataSet\n\n\ndef register():\n"
        "    REGISTRY.register(DataSet('digits', None, input_shape=(1, 8, 8), classes=10))\n"
    )
    (root / "asyncfl_fine_plugin.py").write_text("from test_plugins import BLACKOUT\n")
    return root


def _says_what_went_wrong(message):
    dist = "asyncfl-broken-plugins (entry point"
    assert message.startswith(f"3 installed plug-in(s) (entry-point group {asyncfl.registry.PLUGIN_GROUP}) could not")
    assert f"{dist} raises = asyncfl_broken_on_import): importing it raised RuntimeError: no licence file found" in (
        message
    )
    assert f"{dist} missing = asyncfl_not_installed): its module asyncfl_not_installed is not installed" in message
    assert (
        f"{dist} taken = asyncfl_taken_name:register): registering it registers a name already taken "
        "(data.dataset: the name 'digits' is already registered)" in message
    )
    assert "fine = " not in message and message.endswith("(pip uninstall asyncfl-broken-plugins).")


def test_plugins_that_cannot_load_are_one_config_error_naming_each(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_broken_distribution(tmp_path)))
    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # asyncfl_fine_plugin imports BLACKOUT from here
    monkeypatch.setattr(asyncfl.registry, "_plugins_loaded", False)
    monkeypatch.setattr(asyncfl.registry, "_plugin_problems", [])
    digits = DATASETS["digits"]
    try:
        for _ in range(2):  # loaded once; the problem is raised again at the next validation
            with pytest.raises(ConfigError) as err:
                validate_scenario(BASE)
            _says_what_went_wrong(str(err.value))
        assert DATASETS["digits"] is digits and "blackout" in KINDS  # the working plug-in registered
    finally:
        KINDS.pop("blackout", None)


@pytest.mark.slow
def test_plugins_that_cannot_load_exit_2_from_the_command_line_without_a_traceback(tmp_path):
    root = Path(__file__).resolve().parent.parent
    _broken_distribution(tmp_path / "site")
    scenario = tmp_path / "s.yaml"
    scenario.write_text("data: {dataset: digits, clients: 4}\nstop: {rounds: 1}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(root / "tests"), str(root)])}
    done = subprocess.run([sys.executable, "-m", "asyncfl", "validate", str(scenario)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    _says_what_went_wrong(done.stderr.removeprefix("error: ").rstrip("\n"))
