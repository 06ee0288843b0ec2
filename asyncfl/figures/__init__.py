"""Figures, drawn from the files of a run directory (or a comparison's tables) alone: one module per
figure family, :func:`render_run_figures` draws every one a run directory holds the data for.  This
package reads run files only: it imports no simulation, no learning and no study code (studies draw
through it)."""

from asyncfl.figures.run_figures import render_run_figures

__all__ = ["render_run_figures"]
