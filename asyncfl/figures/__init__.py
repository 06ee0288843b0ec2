"""Figures, drawn from the files of a run directory (or a comparison's tables) alone: one module per
figure family, :func:`render_run_figures` draws every one a run directory holds the data for.  This
package reads run files only: it imports no simulation, no learning and no study code (studies draw
through it).  A run's figures are an extension point: :data:`FIGURES` holds one registration per figure
(:class:`RunFigure`), and a figure registered there is drawn with the others."""

from asyncfl.figures.common import FigureInput, RunFigure
from asyncfl.figures.run_figures import FIGURES, render_run_figures

__all__ = ["FIGURES", "FigureInput", "RunFigure", "render_run_figures"]
