"""asyncfl: a federated-learning simulator with a virtual clock.

    python -m asyncfl scenarios/k_async.yaml

Public API: :func:`load_scenario` (YAML -> validated :class:`Scenario`) and :func:`run_scenario`
(scenario -> run directory).  Everything else is internal.

This face is light: ``import asyncfl.learn.trainer`` (say) does not build the scenario schema.  The
public names are loaded on first use (PEP 562), the schema from :mod:`asyncfl.config`, the runner
(and torch) only when a run starts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asyncfl.config import Scenario, load_scenario
    from asyncfl.errors import ConfigError

__version__ = "0.1.0"

_HOME = {"ConfigError": "asyncfl.errors", "Scenario": "asyncfl.config", "load_scenario": "asyncfl.config"}


def __getattr__(name: str) -> object:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)


def run_scenario(scenario, out_dir=None, quiet=True):
    """Run a validated scenario; returns the run directory.  (Imports torch when called.)"""
    from asyncfl.runner import run_scenario as _run

    return _run(scenario, out_dir, quiet)


__all__ = ["ConfigError", "Scenario", "__version__", "load_scenario", "run_scenario"]
