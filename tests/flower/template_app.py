"""A Flower app folder in the layout of Flower's own ``flwr new`` templates (flwr 1.2x, message API: a package
beside ``pyproject.toml`` with ``client_app.py``, ``server_app.py`` and ``task.py``; ``[tool.flwr.app.components]``
and ``[tool.flwr.app.config]`` as the PyTorch template writes them), with a NumPy model so that it runs offline.

:func:`write_template_app` writes it into a folder.  Its ClientApp notes the ``run_config`` and ``node_config`` of
each call's Context in its module's ``SEEN`` (partition -> (run_config, node_config)), so a test reads what the app
saw; a train reply adds ``lr x local-epochs x (partition-id + 1)`` to every weight, on ``num-examples`` = 10."""

from __future__ import annotations

from pathlib import Path

PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "{package}"
version = "1.0.0"
description = ""
license = "Apache-2.0"
dependencies = ["flwr[simulation]>=1.22.0", "numpy>=2.0"]

[tool.hatch.build.targets.wheel]
packages = ["."]

[tool.flwr.app]
publisher = "asyncfl-tests"

[tool.flwr.app.components]
serverapp = "{package}.server_app:app"
clientapp = "{package}.client_app:app"

[tool.flwr.app.config]
num-server-rounds = 3
fraction-train = 0.5
local-epochs = 1
lr = 0.01

[tool.flwr.federations]
default = "local-simulation"

[tool.flwr.federations.local-simulation]
options.num-supernodes = 10
"""

TASK = '''"""{package}: A Flower / NumPy app."""

import numpy as np


def get_model():
    return np.zeros(4, dtype=np.float64)
'''

CLIENT_APP = '''"""{package}: A Flower / NumPy app."""

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

SEEN = {{}}

# Flower ClientApp
app = ClientApp()


@app.train()
def train(msg: Message, context: Context):
    """Train the model on local data."""
    partition_id = context.node_config["partition-id"]
    SEEN[partition_id] = (dict(context.run_config), dict(context.node_config))
    weights = msg.content["arrays"].to_numpy_ndarrays()[0]
    step = context.run_config["lr"] * context.run_config["local-epochs"] * (partition_id + 1)
    metrics = MetricRecord({{"train_loss": 1.0, "num-examples": 10}})
    content = RecordDict({{"arrays": ArrayRecord([weights + step]), "metrics": metrics}})
    return Message(content=content, reply_to=msg)


@app.evaluate()
def evaluate(msg: Message, context: Context):
    """Evaluate the model on local data."""
    metrics = MetricRecord({{"eval_loss": 1.0, "eval_acc": 0.5, "num-examples": 10}})
    return Message(content=RecordDict({{"metrics": metrics}}), reply_to=msg)
'''

SERVER_APP = '''"""{package}: A Flower / NumPy app."""

from flwr.app import ArrayRecord, ConfigRecord, Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from {package}.task import get_model

RESULT = {{}}

# Create ServerApp
app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    """Main entry point for the ServerApp."""
    fraction_train: float = context.run_config["fraction-train"]
    num_rounds: int = context.run_config["num-server-rounds"]
    lr: float = context.run_config["lr"]
    arrays = ArrayRecord([get_model()])
    strategy = FedAvg(fraction_train=fraction_train)
    result = strategy.start(
        grid=grid, initial_arrays=arrays, train_config=ConfigRecord({{"lr": lr}}), num_rounds=num_rounds
    )
    RESULT["arrays"] = result.arrays.to_numpy_ndarrays()[0]
'''


def write_template_app(folder: Path, package: str) -> Path:
    """The app folder ``folder`` with its package ``package``; returns ``folder``."""
    code = folder / package
    code.mkdir(parents=True)
    (folder / "pyproject.toml").write_text(PYPROJECT.format(package=package))
    (code / "__init__.py").write_text(f'"""{package}: A Flower / NumPy app."""\n')
    for name, text in (("task", TASK), ("client_app", CLIENT_APP), ("server_app", SERVER_APP)):
        (code / f"{name}.py").write_text(text.format(package=package))
    return folder
