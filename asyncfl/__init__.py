"""asyncfl: a federated-learning simulator with a virtual clock.

    python -m asyncfl scenarios/k_async.yaml

Public API: :func:`load_scenario` (YAML -> validated :class:`Scenario`) and :func:`run_scenario`
(scenario -> run directory).  Everything else is internal.
"""

from asyncfl.config import ConfigError, Scenario, load_scenario

__version__ = "0.1.0"


def run_scenario(scenario, out_dir=None, quiet=True):
    """Run a validated scenario; returns the run directory.  (Imports torch lazily.)"""
    from asyncfl.runner import run_scenario as _run

    return _run(scenario, out_dir, quiet)


__all__ = ["ConfigError", "Scenario", "__version__", "load_scenario", "run_scenario"]
