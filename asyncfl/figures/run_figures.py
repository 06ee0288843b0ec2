"""Every figure of one run, drawn from its run directory alone (none re-parses events.jsonl): each is a
registration (``FIGURE = RunFigure(...)``, :class:`~asyncfl.figures.common.RunFigure`) of a module of this
package, found by :data:`FIGURES`, or added by user code (``FIGURES.register``).  The built-ins, in order:

``accuracy_vs_time.png`` test accuracy against virtual time and rounds (``updates_vs_time.png`` when
                         timing only), see :mod:`asyncfl.figures.accuracy`
``timeline.png``         per-client timeline, see :mod:`asyncfl.figures.timeline`
``staleness.png``        staleness of the aggregated updates, see :mod:`asyncfl.figures.staleness`
``participation.png``    participation against device speed, see :mod:`asyncfl.figures.participation`
``client_accuracy.png``  accuracy over clients, see :mod:`asyncfl.figures.client_accuracy`
``time_breakdown.png``   where virtual time went per speed group, see :mod:`asyncfl.figures.time_breakdown`
``timezones.png``        participation by time zone, see :mod:`asyncfl.figures.timezones`
"""

from __future__ import annotations

import sys
from pathlib import Path

from matplotlib.figure import Figure  # (object API: no pyplot, no global backend)

from asyncfl.figures.common import ClientTable, FigureInput, RunFigure, read_clients, run_title, save_figure
from asyncfl.figures.timeline import timeline_rows
from asyncfl.figures.timeline_files import NotRecorded
from asyncfl.registry import Registry, discover

FIGURES: Registry = discover(
    __name__.rpartition(".")[0], [str(Path(__file__).parent)], "FIGURE", entry_type=RunFigure, axis="figures",
    schema=False,
)  # fmt: skip
"""figure name -> its registration, in the order a run's figures are drawn."""


def render_run_figures(
    run_dir: Path,
    window: tuple[float, float | None] | None = None,
    clients=None,
    timeline_name: str = "timeline.png",
    client_table: ClientTable | None = None,
) -> list[Path]:
    """Every registered figure (:data:`FIGURES`) whose data the run directory holds; returns the files
    written.  Every figure is drawn before any file is written, so a damaged file (a ConfigError naming it
    and the line) leaves every figure as it was rather than some redrawn and some stale.  A figure whose
    files an older run directory lacks is skipped with a note on stderr.  ``window`` and ``clients``: see
    :func:`~asyncfl.figures.timeline.draw_timeline`, which is written to ``timeline_name``.
    ``client_table``: clients.csv's columns as the run that wrote it holds them (default: clients.csv is
    read once, for every figure)."""
    if clients is not None:
        try:
            timeline_rows(run_dir, {}, clients)  # a bad --clients fails before anything is drawn
        except NotRecorded:
            pass  # said below, when the timeline is skipped
    table = read_clients(run_dir) if client_table is None else client_table
    run = FigureInput(run_dir, table, window, clients, timeline_name)
    figures: dict[str, Figure] = {}
    drawn: list[RunFigure] = []
    for registration in FIGURES.values():
        try:
            made = registration.draw(run)
        except NotRecorded as missing:
            print(f"note: {missing}", file=sys.stderr)
            continue
        if made is not None:
            figures[made[0]] = made[1]
            drawn.append(registration)
    for registration in drawn:
        if registration.writes_beside is not None:
            registration.writes_beside(run)
    title = run_title(run_dir)
    return [save_figure(fig, run_dir / name, title) for name, fig in figures.items()]
