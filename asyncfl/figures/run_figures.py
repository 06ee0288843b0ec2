"""Every figure of one run, drawn from its run directory alone (none re-parses events.jsonl):

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

from asyncfl.figures.accuracy import draw_progress
from asyncfl.figures.client_accuracy import draw_client_accuracy, write_client_accuracy_tables
from asyncfl.figures.common import ClientTable, read_clients, run_title, save_figure
from asyncfl.figures.participation import draw_participation
from asyncfl.figures.staleness import draw_staleness
from asyncfl.figures.time_breakdown import draw_time_breakdown
from asyncfl.figures.timeline import draw_timeline, timeline_rows
from asyncfl.figures.timeline_files import NotRecorded
from asyncfl.figures.timezones import draw_timezones


def render_run_figures(
    run_dir: Path,
    window: tuple[float, float | None] | None = None,
    clients=None,
    timeline_name: str = "timeline.png",
    client_table: ClientTable | None = None,
) -> list[Path]:
    """Every figure whose data the run directory holds; returns the files written.  Every figure is
    drawn before any file is written, so a damaged file (a ConfigError naming it and the line) leaves
    every figure as it was rather than some redrawn and some stale.  A figure whose files an older
    run directory lacks is skipped with a note on stderr.  ``window`` and ``clients``: see
    :func:`draw_timeline`, which is written to ``timeline_name``.  ``client_table``: clients.csv's
    columns as the run that wrote it holds them (default: clients.csv is read once, for every figure)."""
    if clients is not None:
        try:
            timeline_rows(run_dir, {}, clients)  # a bad --clients fails before anything is drawn
        except NotRecorded:
            pass  # said below, when the timeline is skipped
    figures: dict[str, Figure] = dict([draw_progress(run_dir)])
    table = read_clients(run_dir) if client_table is None else client_table
    draws = (
        (timeline_name, lambda: draw_timeline(run_dir, window, clients, table)),
        ("staleness.png", lambda: draw_staleness(run_dir)),
        ("participation.png", lambda: draw_participation(run_dir, table)),
        ("client_accuracy.png", lambda: draw_client_accuracy(run_dir, table)),
        ("time_breakdown.png", lambda: draw_time_breakdown(run_dir, table)),
        ("timezones.png", lambda: draw_timezones(run_dir, table)),
    )
    for name, draw in draws:
        try:
            fig = draw()
        except NotRecorded as missing:
            print(f"note: {missing}", file=sys.stderr)
            continue
        if fig is not None:
            figures[name] = fig
    if "client_accuracy.png" in figures:
        write_client_accuracy_tables(run_dir, table)
    title = run_title(run_dir)
    return [save_figure(fig, run_dir / name, title) for name, fig in figures.items()]
