"""Starting a run: a fresh one from a validated scenario (:func:`run_scenario`), or one that was killed,
from its last checkpoint (:func:`resume_run`)."""

from __future__ import annotations

import shutil
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from asyncfl.config.schema import Scenario
from asyncfl.errors import ConfigError
from asyncfl.output.folders import make_directory, missing_directories, remove_empty
from asyncfl.output.lock import writing
from asyncfl.output.run_directory import new_run_dir
from asyncfl.output.writing import write_atomic
from asyncfl.runner.callbacks.base import Callback
from asyncfl.runner.checkpoint import load_for_resume
from asyncfl.runner.parts import OutsideLearning
from asyncfl.runner.simulation import Simulation
from asyncfl.sections import resolved_dump

Announce = Callable[[Path], None]  # told the run directory when a run starts (the CLI prints it)


def run_scenario(
    scenario: Scenario,
    out_dir: str | Path | None = None,
    quiet: bool = True,
    announce: Announce | None = None,
    callbacks: Sequence[Callback] = (),
    learning: OutsideLearning | None = None,
) -> Path:
    """Run ``scenario`` and return its run directory (``output.dir/<name>/<timestamp>`` by default).
    ``announce(run_dir)`` is called once the directory is made and held, before anything is loaded;
    ``callbacks`` (:class:`asyncfl.Callback`) are called after the built-in ones; ``learning``: the learning
    side of a trainer outside asyncfl (a Flower ClientApp's, :mod:`asyncfl.flower.k_async`).

    The run holds its directory (:func:`asyncfl.output.lock.writing`) until it ends: a second writer is
    refused.  A run that fails before it starts (a data set or trace file that cannot be read, Ctrl-C
    while loading) leaves nothing behind: what this call wrote and the directories it made are removed."""
    return start_in_directory(
        scenario,
        out_dir,
        announce,
        lambda run_dir: Simulation(scenario, run_dir, quiet, callbacks=callbacks, learning=learning),
    )


def start_in_directory(
    scenario: Scenario, out_dir: str | Path | None, announce: Announce | None, build: Callable[[Path], Any]
) -> Path:
    """Make and hold the run directory of ``scenario`` (``out_dir``, or ``output.dir/<name>/<timestamp>``), write
    its config.yaml, ``build(run_dir)`` the session and ``run()`` it; return the directory.  What fails before
    the session runs leaves nothing behind (a directory that already held files, a run restarted by --resume,
    is never cleared).  The one way a run of any kind (native, a Flower ServerApp's) starts."""
    out_dir = Path(out_dir) if out_dir is not None else None
    # a directory that already holds files (a run restarted by --resume) is never cleared
    clear = out_dir is None or not out_dir.exists() or not any(out_dir.iterdir())
    if out_dir is None:
        made = missing_directories(scenario.output.dir / scenario.name)
        run_dir = new_run_dir(scenario.output.dir, scenario.name)
        made.insert(0, run_dir)
    else:
        run_dir, made = out_dir, make_directory(out_dir, "--out")
    with ExitStack() as held:
        try:
            held.enter_context(writing(run_dir))
        except ConfigError:  # another process writes there: nothing in it is ours to remove
            remove_empty(made)
            raise
        try:
            if announce is not None:
                announce(run_dir)
            write_atomic(run_dir / "config.yaml", yaml.safe_dump(resolved_dump(scenario), sort_keys=False))
            session = build(run_dir)
        except BaseException:
            if clear:
                _remove_unstarted(run_dir, made)
            raise
        session.run()
    return run_dir


def _remove_unstarted(run_dir: Path, made: list[Path]) -> None:
    """Empty ``run_dir`` (nothing was recorded in it yet), then remove the directories made for it."""
    for child in run_dir.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    remove_empty(made)


def resume_run(run_dir: Path, quiet: bool = True, announce: Announce | None = None) -> Path:
    """Continue a run that was killed (at any moment) from its last checkpoint; see asyncfl.runner.checkpoint.
    Nothing is read for the resume nor written before the run directory is held."""
    if not run_dir.is_dir():
        raise ConfigError(f"--resume {run_dir}: no such run directory.")
    with writing(run_dir):
        scenario, checkpoint = load_for_resume(run_dir)
        if scenario.flower is not None:  # its ClientApp is the flower command's to load (asyncfl.flower.resume)
            raise ConfigError(
                f"--resume {run_dir}: a Flower run resumes through the flower command; allowed: python -m asyncfl "
                f"flower --resume {run_dir} (a K-async one; a ServerApp's run cannot be resumed)"
            )
        if announce is not None:
            announce(run_dir)
        if checkpoint is None:  # died before its first checkpoint: start it again in place
            return run_scenario(scenario, run_dir, quiet)
        Simulation(scenario, run_dir, quiet, resume=checkpoint).run()
    return run_dir
