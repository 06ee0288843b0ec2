"""Where a run figure's axes go: one row of axes, margins from the sizes of the texts that sit around
them, measured once.

Constrained layout places the axes by asking every artist for its tight bounding box, twice, which
lays out (and measures) every text of the figure each time: it cost more than drawing and saving
the figure (k_async's six figures: 2.8 of 7.7 profiled seconds).  Every run figure is a row of axes
with texts at known places (tick labels and axis labels beside the axes, a title above, a colorbar
or legend to the right, a legend below, the figure's title on top), so :class:`RowLayout` measures
only those strings, once (the renderer's font metrics, not a layout of each artist), and sets the
axes' positions from them: the same picture, with margins as tight as constrained layout's."""

from __future__ import annotations

from typing import Sequence

from matplotlib import cbook, rcParams
from matplotlib.axes import Axes
from matplotlib.font_manager import FontProperties
from matplotlib.layout_engine import LayoutEngine
from matplotlib.legend import Legend
from matplotlib.text import Text

try:  # matplotlib's cache of text metrics, the one its draw reads (private: same signature from 3.7 to 3.11)
    from matplotlib.text import _get_text_metrics_with_cache
except ImportError:  # a matplotlib without it: the same sizes, measured each time

    def _get_text_metrics_with_cache(renderer, text, font, ismath, dpi):
        return renderer.get_text_width_height_descent(text, font, ismath=ismath)


EDGE = 4 / 72  # inches between the outermost text and the figure's edge
GAP = 8 / 72  # inches between the texts of one axes and the next
COLORBAR_GAP = 0.18  # inches between an axes and its colorbar
COLORBAR_ASPECT = 20  # a colorbar is this many times taller than wide (matplotlib's default)
LINE_SPACING = 1.2  # matplotlib's: a line of text every 1.2 heights


class RowLayout(LayoutEngine):
    """Lays out ``axes``, one row, left to right, in ``width_ratios`` (default: equal widths).
    ``beside``: what sits right of an axes (a colorbar's axes, a legend anchored outside it);
    ``right`` / ``below``: a figure legend at the figure's right edge / bottom.  Secondary axes
    (``secondary_yaxis``) follow their parent; the figure's title (``suptitle``) gets its room on top.
    Run by :func:`asyncfl.figures.common.save_figure` at the file's dpi, once."""

    _adjust_compatible = False
    _colorbar_gridspec = False

    def __init__(
        self,
        axes: Sequence[Axes],
        width_ratios: Sequence[float] | None = None,
        beside: dict[Axes, Sequence[Axes | Legend]] | None = None,
        right: Legend | None = None,
        below: Legend | None = None,
    ) -> None:
        super().__init__()
        self.axes, self.ratios = list(axes), list(width_ratios or [1.0] * len(axes))
        self.beside, self.right, self.below = beside or {}, right, below

    def execute(self, fig) -> None:
        renderer = fig.canvas.get_renderer()
        inch = fig.dpi  # pixels per inch: every measure below is in pixels, then in inches
        width, height = fig.get_size_inches()
        top = max(_above(ax, renderer) for ax in self.axes) / inch
        title = fig.get_suptitle()
        if title:  # suptitle: y 0.98 of the figure, its top there
            top += (1 - 0.98) * height + _text_size(renderer, title, FontProperties(size=rcParams["figure.titlesize"]))[
                1
            ] / inch
        bottom = max(_below(ax, renderer) for ax in self.axes) / inch
        if self.below is not None:
            bottom += _legend_size(self.below, renderer)[1] / inch
        axes_height = max(height - top - bottom - 2 * EDGE, 0.1 * height)
        lefts = [_side(ax, "left", renderer) / inch for ax in self.axes]
        rights = [_side(ax, "right", renderer) / inch for ax in self.axes]
        for i, ax in enumerate(self.axes):  # the first and last x tick labels reach half their width past the ends
            half_tick = _tick_labels(ax.xaxis, "label1", renderer)[0] / 2 / inch
            lefts[i], rights[i] = max(lefts[i], half_tick), max(rights[i], half_tick)
        extras = [self._beside_width(ax, renderer, axes_height) for ax in self.axes]
        legend_right = _legend_size(self.right, renderer)[0] / inch if self.right is not None else 0.0
        centred = [_centred_width(ax, renderer) / inch for ax in self.axes]
        widths = natural = self._widths(width, lefts, rights, extras, legend_right)
        for _ in range(20):  # an x label or title wider than its axes takes room beside it (which narrows it) ...
            over = [(c - w) / 2 for c, w in zip(centred, widths)]
            if all(o <= min(left, right) + 1e-3 for o, left, right in zip(over, lefts, rights)):
                break
            wider = [max(a, o) for a, o in zip(lefts, over)], [max(a, o) for a, o in zip(rights, over)]
            narrower = self._widths(width, *wider, extras, legend_right)
            if min(n / w for n, w in zip(narrower, natural)) < 0.6:
                break  # ... but a title longer than the figure can hold overhangs rather than squash the axes
            (lefts, rights), widths = wider, narrower
        x, y0 = EDGE + lefts[0], EDGE + bottom
        for i, (ax, w) in enumerate(zip(self.axes, widths)):
            ax.set_position((x / width, y0 / height, w / width, axes_height / height))
            self._place_beside(ax, x + w + rights[i], y0, axes_height, width, height)
            x += w + rights[i] + extras[i] + GAP + (lefts[i + 1] if i + 1 < len(self.axes) else 0.0)

    def _widths(self, width: float, lefts: list, rights: list, extras: list, legend_right: float) -> list[float]:
        """The axes' widths in inches: what the margins leave, shared in the width ratios."""
        spaces = sum(lefts) + sum(rights) + sum(extras) + GAP * (len(self.axes) - 1) + legend_right + 2 * EDGE
        free = max(width - spaces, 0.1 * width)
        return [free * r / sum(self.ratios) for r in self.ratios]

    def _beside_width(self, ax: Axes, renderer, axes_height: float) -> float:
        """Inches the colorbars and outside legends right of ``ax`` take."""
        inch, total = renderer.points_to_pixels(72), 0.0
        for item in self.beside.get(ax, ()):
            if isinstance(item, Legend):
                total += _legend_size(item, renderer)[0] / inch
            else:  # a colorbar: the bar, then its ticks and label
                total += COLORBAR_GAP + axes_height / COLORBAR_ASPECT + _side(item, "right", renderer) / inch
        return total

    def _place_beside(self, ax: Axes, x: float, y0: float, h: float, width: float, height: float) -> None:
        for item in self.beside.get(ax, ()):
            if isinstance(item, Axes):
                bar = h / COLORBAR_ASPECT
                item.set_position(((x + COLORBAR_GAP) / width, y0 / height, bar / width, h / height))


def _text_size(renderer, text: str, font: FontProperties) -> tuple[float, float]:
    """Width and height in pixels of ``text`` (lines apart), as the renderer draws it.  Measured through
    matplotlib's own cache of text metrics (per renderer and dpi, the one its draw reads), so a string laid
    out here is not shaped again when drawn, nor twice here: k_async's six figures shape 202 strings instead
    of 689, and shaping a string costs ~0.3 ms with matplotlib 3.11's text layout."""
    lines = text.split("\n")
    dpi = renderer.dpi
    sizes = [_get_text_metrics_with_cache(renderer, line or " ", font, cbook.is_math_text(line), dpi) for line in lines]
    line_height = max(max(h for _, h, _ in sizes), _get_text_metrics_with_cache(renderer, "lp", font, False, dpi)[1])
    return max(w for w, _, _ in sizes), line_height * (LINE_SPACING * len(lines) - (LINE_SPACING - 1))


def _label_size(text: Text, renderer) -> tuple[float, float]:
    return _text_size(renderer, text.get_text(), text.get_fontproperties()) if text.get_text() else (0.0, 0.0)


def _ticks(axis) -> list:
    """The ticks drawn (those in the view), positions and labels set as drawing sets them."""
    return axis._update_ticks()  # matplotlib's own choice of what is drawn (constrained layout's too)


def _tick_labels(axis, which: str, renderer) -> tuple[float, float]:
    """Widest and tallest label in pixels (``which``: label1 left/bottom, label2 right/top), with
    the tick's length and its pad, or 0 when none is drawn there."""
    ticks = _ticks(axis)
    labels = [getattr(t, which) for t in ticks if getattr(t, which).get_visible() and getattr(t, which).get_text()]
    if not labels:
        return 0.0, 0.0
    sizes = [_label_size(label, renderer) for label in labels]
    out = max(max(t.get_tick_padding(), 0.0) + t.get_pad() for t in ticks)  # points
    reach = renderer.points_to_pixels(out)
    return max(w for w, _ in sizes) + reach, max(h for _, h in sizes) + reach


def _axis_label(axis, renderer) -> float:
    """The axis label's thickness (across the axis) and its pad, in pixels; 0 without one."""
    if not axis.label.get_visible() or not axis.label.get_text():
        return 0.0
    w, h = _label_size(axis.label, renderer)
    return h + renderer.points_to_pixels(axis.labelpad)


def _side(ax: Axes, side: str, renderer) -> float:
    """Pixels the y axes' texts of ``ax`` (and of its secondary axes) reach out on ``side``."""
    reach = 0.0
    for each in [ax, *ax.child_axes]:
        yaxis = each.yaxis
        which = "label1" if side == "left" else "label2"
        ticks = _tick_labels(yaxis, which, renderer)[0]
        label = _axis_label(yaxis, renderer) if yaxis.get_label_position() == side else 0.0
        reach = max(reach, ticks + label)
    return reach


def _below(ax: Axes, renderer) -> float:
    """Pixels the x axis's tick labels and label reach below ``ax``."""
    return _tick_labels(ax.xaxis, "label1", renderer)[1] + _axis_label(ax.xaxis, renderer)


def _above(ax: Axes, renderer) -> float:
    """Pixels above ``ax``: its title (and pad), or the y axis's offset text (``1e6``)."""
    title = _label_size(ax.title, renderer)[1]  # the run figures' titles are centred
    if title:
        title += renderer.points_to_pixels(rcParams["axes.titlepad"])
    offset = ax.yaxis.get_major_formatter().get_offset()
    if offset:
        title = max(title, _text_size(renderer, offset, ax.yaxis.offsetText.get_fontproperties())[1])
    return title


def _centred_width(ax: Axes, renderer) -> float:
    """Pixels of the widest text centred on ``ax``: its x label or its title."""
    return max(_label_size(ax.xaxis.label, renderer)[0], _label_size(ax.title, renderer)[0])


def _legend_size(legend: Legend, renderer) -> tuple[float, float]:
    """The legend's box in pixels, with the pad that keeps it off the edge."""
    box = legend.get_window_extent(renderer)
    pad = renderer.points_to_pixels(legend.borderaxespad * legend.prop.get_size_in_points())
    return box.width + pad, box.height + pad
