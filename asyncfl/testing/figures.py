"""The run-figure contract (:data:`asyncfl.figures.FIGURES`) as plain checks, run on one small run made
once per process (:func:`example_run`: 4 clients, 3 sync rounds, on and off availability, clients
evaluated):

* ``draw`` returns None (nothing worth drawing) or a ``.png`` file name and a matplotlib Figure;
* drawing writes nothing into the run directory (files beside a figure are ``writes_beside``'s);
* the same run gives the same PNG, byte for byte;
* the file it draws is its own: no other registered figure draws a file of that name.

Every check takes the figure (its registered name or its :class:`~asyncfl.figures.common.RunFigure`).
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from matplotlib.figure import Figure

from asyncfl.config import validate_scenario
from asyncfl.figures import FIGURES, FigureInput, RunFigure
from asyncfl.figures.common import read_clients, save_figure
from asyncfl.runner.start import run_scenario
from asyncfl.testing.suite import CheckOutcome, expected_failures, names, run_checks

EXAMPLE = {
    "name": "figure_checks", "seed": 1, "data": {"dataset": "digits", "clients": 4}, "model": {"name": "logreg"},
    "training": {"local_steps": 2}, "server": {"mode": "sync", "deadline_s": 30},
    "population": {"availability": {"kind": "bernoulli", "p": 0.7, "slot_s": 20}},
    "stop": {"rounds": 3}, "eval": {"per_client": True}, "output": {"plot": False},
}  # fmt: skip


def figure_of(entry: str | RunFigure) -> RunFigure:
    if isinstance(entry, RunFigure):
        return entry
    if entry not in FIGURES:
        raise ValueError(f"no run figure named {entry!r}; registered: {', '.join(FIGURES)}")
    return FIGURES[entry]


@functools.cache
def _runs_folder() -> tempfile.TemporaryDirectory:
    """Where the example runs: made on first use, removed when the process exits (a mkdtemp folder was left
    behind in the temporary directory by every process that ran the checks)."""
    return tempfile.TemporaryDirectory(prefix="asyncfl-figure-checks-")


@functools.cache
def example_run() -> Path:
    """The checks' run directory, made on first use (it lives as long as the process)."""
    folder = Path(_runs_folder().name)
    return run_scenario(validate_scenario(EXAMPLE), folder / "run", quiet=True)


def _input() -> FigureInput:
    run_dir = example_run()
    return FigureInput(run_dir, read_clients(run_dir))


def check_draws_a_png_or_nothing(entry: str | RunFigure) -> None:
    figure = figure_of(entry)
    made = figure.draw(_input())
    if made is not None:
        name, fig = made
        assert isinstance(name, str) and name.endswith(".png"), f"{figure.name}: draws {name!r}, not a .png file"
        assert isinstance(fig, Figure), f"{figure.name}: draws a {type(fig).__name__}, not a matplotlib Figure"


def _listing(run_dir: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(run_dir)): (p.stat().st_size, p.stat().st_mtime_ns) for p in run_dir.rglob("*")}


def check_drawing_writes_nothing(entry: str | RunFigure) -> None:
    figure = figure_of(entry)
    run = _input()
    before = _listing(run.run_dir)
    figure.draw(run)
    assert _listing(run.run_dir) == before, f"{figure.name}: drawing changed the run directory"


def check_same_run_same_png(entry: str | RunFigure) -> None:
    figure = figure_of(entry)
    with tempfile.TemporaryDirectory() as folder:
        pngs = []
        for i in range(2):
            made = figure.draw(_input())
            if made is None:
                return
            pngs.append(save_figure(made[1], Path(folder) / f"{i}.png", "title").read_bytes())
    assert pngs[0] == pngs[1], f"{figure.name}: the same run gives two different PNGs"


def check_draws_a_file_of_its_own(entry: str | RunFigure) -> None:
    figure = figure_of(entry)
    run = _input()
    made = figure.draw(run)
    if made is None:
        return
    for other in FIGURES.values():
        if other.name != figure.name:
            theirs = other.draw(run)
            assert theirs is None or theirs[0] != made[0], f"{figure.name}: draws {made[0]}, as {other.name} does"


CHECKS = (check_draws_a_png_or_nothing, check_drawing_writes_nothing, check_same_run_same_png,
          check_draws_a_file_of_its_own)  # fmt: skip


def check_run_figure(
    entry: str | RunFigure, *, expected_failed_checks: dict[str, str] | None = None
) -> list[CheckOutcome]:
    """Every check above; AssertionError on the first broken contract, except for the checks in
    ``expected_failed_checks`` ({check name: why}: reported as ``xfail``, see :mod:`asyncfl.testing.suite`)."""
    what = f"a run figure ({entry if isinstance(entry, str) else entry.name})"
    expected = expected_failures(expected_failed_checks, names(CHECKS), what)
    return run_checks(((c.__name__, None, lambda c=c: c(entry)) for c in CHECKS), expected)
