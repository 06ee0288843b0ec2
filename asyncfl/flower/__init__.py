"""Flower apps on asyncfl's virtual clock: a user's unmodified ``ServerApp`` and ``ClientApp`` run against a
:class:`~asyncfl.flower.grid.VirtualGrid` whose nodes are the scenario's clients (their speeds, links,
availability and batteries), and write a normal run directory.

    import asyncfl.flower

    run = asyncfl.flower.run("my_app.server_app:app", "my_app.client_app:app", "scenario.yaml")
    run.metrics      # the same asyncfl.Run that asyncfl.run returns

``flwr`` is an optional extra (``pip install -e '.[flower]'`` in a checkout): this package face imports it only when
a run starts (:func:`run`), so a missing Flower is one clear :class:`~asyncfl.errors.ConfigError`, not an
ImportError.  ``import asyncfl`` then ``asyncfl.flower.run(...)`` works too: the package loads it on first use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asyncfl.flower.apps import require_flwr

if TYPE_CHECKING:  # the face stays light: the command line imports it to check for flwr
    from asyncfl.results import Run


def run(
    server_app: Any,
    client_app: Any,
    scenario: Any,
    out_dir: str | Path | None = None,
    *,
    overrides: Iterable[str] = (),
    run_config: Mapping[str, Any] | None = None,
    app_dir: str | Path | None = None,
    quiet: bool = True,
) -> Run:
    """Run ``server_app`` with ``client_app`` on the virtual clock of ``scenario`` (a path, a dict of keys or a
    :class:`~asyncfl.Scenario`) and return the :class:`asyncfl.Run` it wrote.  The apps are the objects or their
    ``package.module:attribute`` strings; None takes the scenario's ``flower.server_app`` / ``flower.client_app``.
    ``run_config`` replaces ``flower.run_config``; ``overrides``: ``--set`` items.

    ``app_dir``: a Flower app folder, read as ``flwr run`` reads it (the apps then stay None): its
    ``pyproject.toml`` names the apps, and the run config is ``[tool.flwr.app.config]`` < ``flower.run_config`` <
    ``run_config`` (each key one the app declares), e.g. ``run(None, None, "s.yaml", app_dir="my_app")``."""
    require_flwr()
    # flwr is an optional extra: the modules built on it are imported once it is known to be there
    from asyncfl.flower.start import run_flower

    return run_flower(
        server_app, client_app, scenario, out_dir, overrides=overrides, run_config=run_config, app_dir=app_dir,
        quiet=quiet,
    )  # fmt: skip


__all__ = ["run"]
