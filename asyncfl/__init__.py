"""asyncfl: a federated-learning simulator with a virtual clock.

    python -m asyncfl scenarios/k_async.yaml

From Python (see the README's "Python API"): :func:`run` a scenario and get a :class:`Run` whose
tables are DataFrames, :func:`read_run` one written before, :func:`run_study` variants x seeds and
get a :class:`Study`; ``asyncfl.flower.run`` a Flower app on the virtual clock.  The names (and
``asyncfl.flower``) are loaded when first used (PEP 562), so ``import asyncfl`` (or
``import asyncfl.learn.trainer``) builds no schema and loads no torch: the schema comes with
:mod:`asyncfl.config`, the runner (and torch) when a run starts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from asyncfl.api import Run, Study, read_run, read_study, run, run_study
    from asyncfl.config import Scenario, load_scenario
    from asyncfl.errors import ConfigError
    from asyncfl.runner.callbacks.base import Callback
    from asyncfl.runner.start import run_scenario

_HOME = {
    "Callback": "asyncfl.runner.callbacks.base",
    "ConfigError": "asyncfl.errors",
    "Scenario": "asyncfl.config",
    "load_scenario": "asyncfl.config",
    "run_scenario": "asyncfl.runner.start",
    "Run": "asyncfl.api",
    "Study": "asyncfl.api",
    "read_run": "asyncfl.api",
    "read_study": "asyncfl.api",
    "run": "asyncfl.api",
    "run_study": "asyncfl.api",
}


# subpackages a user reaches from ``import asyncfl`` alone (``asyncfl.flower.run(...)``); loaded when first used,
# and light: asyncfl.flower's face imports flwr only when a run starts, so a missing Flower is still its ConfigError
_SUBPACKAGES = ("flower",)


def __getattr__(name: str) -> object:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)


__all__ = [  # what _HOME serves, written out for readers and linters
    "Callback",
    "ConfigError",
    "Run",
    "Scenario",
    "Study",
    "__version__",
    "load_scenario",
    "read_run",
    "read_study",
    "run",
    "run_scenario",
    "run_study",
]
