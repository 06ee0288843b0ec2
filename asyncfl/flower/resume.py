"""Resuming a K-async Flower run from its last checkpoint (``python -m asyncfl flower --resume RUN_DIR``).

A K-async Flower run's server state is asyncfl's and its nodes' Contexts are Flower records, so it checkpoints as a
native run does (:mod:`asyncfl.flower.k_async`) and resumes as one (:mod:`asyncfl.runner.checkpoint`): the clock
world is replayed from t = 0 with the ClientApp called for no task that started before the checkpoint, then the
learning state, the Contexts and the generators are restored and the run goes on live.

A run with a ServerApp cannot be resumed: its state is the ServerApp's own Python code on its own stack (the
strategy's round loop, ``for current_round in range(1, num_rounds + 1)`` in flwr's ``Strategy.start``), which
nothing can save, and Flower itself has no way to start a ServerApp in the middle of its run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from asyncfl.config.schema import Scenario
from asyncfl.errors import ConfigError
from asyncfl.flower.app_folder import on_sys_path
from asyncfl.flower.apps import flwr_log, load_app
from asyncfl.flower.generators import apps_seeded, flower_seeds
from asyncfl.flower.k_async import client_app_learning
from asyncfl.output.lock import writing
from asyncfl.runner.callbacks.base import Callback
from asyncfl.runner.checkpoint import load_for_resume
from asyncfl.runner.simulation import Simulation
from asyncfl.runner.start import run_scenario

CLIENT_WHERE = "flower.client_app"


def resume_flower(
    run_dir: str | Path,
    client_app: Any = None,
    *,
    first_arrays: Any = None,
    app_dir: str | Path | None = None,
    quiet: bool = True,
    announce: Callable[[Path], None] | None = None,
    callbacks: Sequence[Callback] = (),
    where: str = CLIENT_WHERE,
) -> Path:
    """Continue the K-async Flower run in ``run_dir`` from its last checkpoint; returns the run directory.
    ``client_app``: the ClientApp (an object or its ``module:attribute``; None: config.yaml's
    ``flower.client_app``); ``first_arrays``: the run's, if it was given as a function; ``app_dir``: the app folder
    the run was started from (its packages are imported from it); ``where``: how the caller names the ClientApp."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ConfigError(f"--resume {run_dir}: no such run directory.")
    with writing(run_dir), ExitStack() as held:
        scenario, checkpoint = load_for_resume(run_dir)
        refuse_server_app_run(run_dir, scenario)
        if app_dir is not None:
            held.enter_context(on_sys_path(Path(app_dir)))
        client = load_app(client_app if client_app is not None else scenario.flower.client_app, "client", where)
        held.enter_context(flwr_log(quiet))
        if announce is not None:
            announce(run_dir)
        run_id, app_seed = flower_seeds(scenario.seed)
        learning = client_app_learning(client, run_id, first_arrays, resumed=checkpoint)
        with apps_seeded(app_seed):
            if checkpoint is None:  # died before its first checkpoint: start it again in place
                return run_scenario(scenario, run_dir, quiet, callbacks=callbacks, learning=learning)
            Simulation(scenario, run_dir, quiet, resume=checkpoint, callbacks=callbacks, learning=learning).run()
    return run_dir


def refuse_server_app_run(run_dir: Path, scenario: Scenario) -> None:
    """Only a K-async Flower run resumes (see the module docstring); a native run resumes with ``run --resume``."""
    if scenario.flower is None:
        raise ConfigError(
            f"--resume {run_dir}: not a Flower run (config.yaml has no flower section); allowed: a K-async Flower run "
            f"here, a native run with: python -m asyncfl run --resume {run_dir}"
        )
    if scenario.server.mode != "k_async":
        raise ConfigError(
            f"--resume {run_dir}: a Flower run with a ServerApp (server.mode: {scenario.server.mode}) writes no "
            "checkpoint and cannot be resumed: its state is the ServerApp's own code on its own stack, which nothing "
            "can save; allowed: a K-async Flower run (server.mode: k_async). Run it again"
        )
