"""A run's figures are a declared extension point (issue 45, design): each built-in figure is one
registration in :data:`asyncfl.figures.FIGURES`, drawn in its order, and a figure registered from outside is
drawn into the run directory with the others, its data read through the same :class:`FigureInput`."""

from __future__ import annotations

import pytest
from conftest import run
from matplotlib.figure import Figure

from asyncfl import registry
from asyncfl.figures import FIGURES, FigureInput, RunFigure, render_run_figures


def test_the_built_in_figures_are_registrations_in_drawing_order():
    assert list(FIGURES) == [
        "accuracy", "timeline", "staleness", "participation", "client_accuracy", "time_breakdown", "timezones"
    ]  # fmt: skip
    assert FIGURES in registry.ALL and FIGURES.axis == "figures"


@pytest.fixture
def speeds_figure():
    """A plug-in figure: a bar per client of clients.csv's samples_per_s."""
    seen: list[FigureInput] = []

    def draw(run: FigureInput) -> tuple[str, Figure]:
        seen.append(run)
        fig = Figure(figsize=(3, 2))
        speeds = run.table["samples_per_s"].astype(float)
        fig.subplots().bar(range(len(speeds)), speeds)
        return "speeds.png", fig

    figure = RunFigure("speeds", draw)
    registry.register_object(figure)  # routed to FIGURES by its type, as an entry point's object is
    yield seen
    FIGURES.unregister("speeds")


def test_a_registered_figure_is_drawn_after_the_built_ins(tmp_path, speeds_figure):
    run_dir = run(tmp_path, data={"dataset": "digits", "clients": 3}, model={"name": "logreg"},
                  stop={"rounds": 2}, timing_only=True, output={"plot": False})  # fmt: skip
    written = render_run_figures(run_dir)
    assert [p.name for p in written][-1] == "speeds.png" and (run_dir / "speeds.png").is_file()
    assert written[0].name == "updates_vs_time.png" and (run_dir / "timeline.png") in written
    (given,) = speeds_figure
    assert given.run_dir == run_dir and given.timeline_name == "timeline.png" and len(given.table["client"]) == 3
    with pytest.raises(registry.NameTaken, match="figures: the name 'speeds' is already registered"):
        FIGURES.register(RunFigure("speeds", lambda run: None))
