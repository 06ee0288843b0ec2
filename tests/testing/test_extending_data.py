"""Adding a data set, a model or a partitioner is adding one file: a copy of the package gains ``toy``
(two Gaussian blobs), ``linear2`` (two linear layers) and ``alternate`` (round-robin partition), each as
one new module, and the CLI validates, trains and runs timing-only with them -- no other file of the
copy is edited."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import asyncfl
from asyncfl.config import ConfigError
from tests.conftest import scenario, table

TOY_DATASET = '''
"""``toy``: two Gaussian blobs in 4-D, one per class."""

import numpy as np
from pydantic import Field

from asyncfl.sections import Section
from asyncfl.learn.datasets import DataSet, RawData, seeded_rng


class Toy(Section):
    """Two Gaussian blobs, centred at -separation/2 and +separation/2 on every axis."""

    train_samples: int = Field(default=200, ge=2)
    test_samples: int = Field(default=60, ge=2)
    separation: float = Field(default=3.0, gt=0)


def load(data, seed: int) -> RawData:
    cfg = data.toy
    rng = seeded_rng(seed, 99)
    n = cfg.train_samples + cfg.test_samples
    y = rng.integers(0, 2, n)
    x = rng.normal(size=(n, 4)) + np.where(y[:, None] == 1, 0.5, -0.5) * cfg.separation
    k = cfg.train_samples
    x, y = x.astype(np.float32), y.astype(np.int64)
    return RawData(x[:k], y[:k], x[k:], y[k:], num_classes=2)


DATASET = DataSet("toy", load, input_shape=(4,), classes=2, inputs="signals", params=Toy)
'''

LINEAR2_MODEL = '''
"""``linear2``: two linear layers, no activation (a factored logistic regression)."""

import math

from pydantic import Field

from asyncfl.sections import Section
from asyncfl.learn.models import ModelSpec


class Linear2(Section):
    width: int = Field(default=8, ge=1, description="units of the middle layer")


def build(input_shape, num_classes, params, **options):
    from torch import nn

    width = params.width
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(input_shape), width), nn.Linear(width, num_classes))


MODEL = ModelSpec("linear2", build, params=Linear2)
'''

ALTERNATE_PARTITIONER = '''
"""``alternate``: client k gets samples k, k + N, k + 2N ... of the pool (no randomness)."""

from typing import Literal

import numpy as np

from asyncfl.sections import Section
from asyncfl.learn.partition import Partitioner


class AlternatePartition(Section):
    """Round-robin over the pool in its order."""

    kind: Literal["alternate"]


def split(labels, n, spec, rng):
    return [np.arange(k, len(labels), n) for k in range(n)]


PARTITIONER = Partitioner(AlternatePartition, split)
'''

# runs in the copy: every step through the public CLI, then the loaded arrays for the sizes
DRIVER = """
import json, sys
import asyncfl
from asyncfl.cli import main
from asyncfl.config import load_scenario
from asyncfl.learn.datasets import dataset_spec, load_arrays
from asyncfl.runner.parts import timing_model_bytes

isolated = {"kind": "isolated_class", "label": 1, "clients": 2, "base": {"kind": "alternate"}}
codes = {
    "validate": main(["validate", "toy.yaml"]),
    "run": main(["run", "toy.yaml", "--quiet", "--out", "runs/toy"]),
    "timing": main(["run", "toy.yaml", "--quiet", "--set", "timing_only=true", "--out", "runs/timing"]),
    "linear2": main(["run", "linear2.yaml", "--quiet", "--out", "runs/linear2"]),
}
s = load_scenario("toy.yaml")
raw = load_arrays(s.data, s.seed)
nested = load_scenario("toy.yaml", [f"data.partition={json.dumps(isolated)}"]).data.partition
print(json.dumps({"codes": codes, "package": asyncfl.__file__, "spec": dataset_spec(s.data),
                  "train": list(raw.x_train.shape), "test": list(raw.x_test.shape), "base": nested.base.kind,
                  "linear2_bytes": timing_model_bytes(load_scenario("linear2.yaml"))}))
"""

COMMON = """
seed: 3
training: {local_steps: 5, batch_size: 16, lr: 0.2}
population: {compute: {samples_per_s: 100}}
server: {mode: sync}
stop: {rounds: 2}
checkpoint: {every_rounds: null}
output: {plot: false}
"""


def build_extended_copy(root: Path) -> None:
    """A copy of the package in ``root`` with the three new modules, and ``toy.yaml`` / ``linear2.yaml``
    beside it (also used by ``benchmarks/experiments/accuracy_spread.py`` to measure their accuracies over seeds)."""
    package = Path(asyncfl.__file__).parent
    shutil.copytree(package, root / "asyncfl", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "asyncfl/learn/datasets/toy.py").write_text(TOY_DATASET)
    (root / "asyncfl/learn/models/linear2.py").write_text(LINEAR2_MODEL)
    (root / "asyncfl/learn/partition/alternate.py").write_text(ALTERNATE_PARTITIONER)
    toy = "name: toy\ndata: {dataset: toy, clients: 4, partition: {kind: alternate}, toy: {test_samples: 50}}\n"
    toy += "model: {name: logreg}\n"
    (root / "toy.yaml").write_text(toy + COMMON)
    digits = "name: linear2\ndata: {dataset: digits, clients: 5}\nmodel: {name: linear2, linear2: {width: 5}}\n"
    # 40 local steps: with toy's 5 the accuracy spread 0.21..0.42 over seeds 0-9 (mean 0.26, std 0.07)
    (root / "linear2.yaml").write_text(digits + COMMON.replace("local_steps: 5,", "local_steps: 40,"))


@pytest.fixture(scope="module")
def extended(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("extended")
    build_extended_copy(root)
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(DRIVER)], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return root, json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_data_set_is_one_file(extended):
    root, out = extended
    assert out["package"] == str(root / "asyncfl" / "__init__.py")  # the copy ran, not this checkout
    assert out["codes"] == {"validate": 0, "run": 0, "timing": 0, "linear2": 0}
    assert out["spec"] == [[4], 2]  # what timing-only runs use instead of loading the data
    assert out["train"] == [200, 4] and out["test"] == [50, 4]  # data.toy's own section was read
    clients = table(root / "runs/toy/clients.csv")
    assert [int(c["train_samples"]) for c in clients] == [40] * 4  # alternate: 50 each, 10 for local test
    assert out["base"] == "alternate"  # a new partitioner is also a valid isolated_class base
    rows = table(root / "runs/toy/metrics.csv")
    assert [int(r["round"]) for r in rows][-1] == 2
    accuracy = float(rows[-1]["test_accuracy"])
    # chance is 0.5; the blobs are 3 standard deviations apart on each axis.  Seeds 0-9: 0.98..1.0 (mean 0.998,
    # std 0.006; benchmarks/experiments/accuracy_spread.py), seed 3: 1.0 on every kernel path: 0.8 leaves > 4 std
    assert accuracy > 0.8
    assert abs(accuracy * 50 - round(accuracy * 50)) < 1e-6  # measured on the 50 test samples
    timing = json.loads((root / "runs/timing/summary.json").read_text())
    assert timing["timing_only"] is True and timing["training_jobs_computed"] == 0


@pytest.mark.slow
def test_a_model_is_one_file_with_its_own_keys(extended):
    root, out = extended
    rows = table(root / "runs/linear2/metrics.csv")
    # ten classes: chance is 0.1.  Seeds 0-9: 0.71..0.80, mean 0.757, std 0.027
    # (benchmarks/experiments/accuracy_spread.py): 0.6 is below mean - 4 std (0.65)
    assert int(rows[-1]["round"]) == 2 and float(rows[-1]["test_accuracy"]) > 0.6
    config = (root / "runs/linear2/config.yaml").read_text()
    assert "name: linear2" in config and "linear2:\n    width: 5" in config  # model.linear2, its own section
    assert out["linear2_bytes"] == 4 * (64 * 5 + 5 + 5 * 10 + 10)  # digits' 64 pixels -> width 5 -> 10 classes


def test_the_unextended_package_refuses_both_names():
    """The new names come from the new files only: this checkout lists the registered ones."""
    with pytest.raises(ConfigError, match="digits.*svhn"):
        scenario(data={"dataset": "toy"})
    with pytest.raises(ConfigError, match="logreg.*cnn1d"):
        scenario(model={"name": "linear2"})
    with pytest.raises(ConfigError, match="iid.*isolated_class"):
        scenario(data={"partition": {"kind": "alternate"}})


@pytest.mark.parametrize("model", ["logreg", "mlp", "lenet5", "resnet18", "cnn1d", "cnn2d"])
def test_the_schema_accepts_a_model_on_a_data_set_exactly_when_it_builds(model):
    """The model/data check is built from the registries' metadata (a data set's inputs, the inputs a model
    accepts); it must agree with the builders on every registered data set's input shape."""
    from asyncfl.learn.datasets import REGISTRY, dataset_spec
    from asyncfl.learn.models import build_model

    for name, entry in REGISTRY.items():
        if entry.inputs == "text":  # character indices: no builder can tell them from signals by their shape
            with pytest.raises(ConfigError, match=f"model.name {model} .*'{name}' holds text"):
                scenario(data={"dataset": name}, model={"name": model})
            continue
        s_or_error: object
        try:
            s_or_error = scenario(data={"dataset": name}, model={"name": model})
        except ConfigError as exc:
            s_or_error = exc
        shape, classes = dataset_spec(scenario(data={"dataset": name}, model={"name": "logreg"}).data)
        try:
            build_model(model, shape, classes)
            builds = True
        except ValueError:
            builds = False
        assert builds == (not isinstance(s_or_error, ConfigError)), (model, name, s_or_error)
        if isinstance(s_or_error, ConfigError):
            assert f"model.name {model}" in str(s_or_error) and f"data.dataset {name!r}" in str(s_or_error)


def test_lenet5_on_signals_is_a_config_error_naming_what_fits():
    with pytest.raises(ConfigError) as err:
        scenario(data={"dataset": "mnist1d"}, model={"name": "lenet5"})
    msg = str(err.value)
    assert "model.name lenet5 convolves over images; data.dataset 'mnist1d' holds one-dimensional signals" in msg
    assert "data.dataset cifar10, digits, fashion_mnist, mnist or svhn" in msg
    assert "or choose model.name logreg, mlp or cnn1d." in msg
