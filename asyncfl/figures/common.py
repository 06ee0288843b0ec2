"""What every run figure shares: the run's label and title (from config.yaml and the directory's
place), the accuracy axis's range, the time-of-day axis, the phase colours, clients.csv, saving a PNG that
says which run it shows, and a figure's registration (:class:`RunFigure`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TypeVar

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from asyncfl.output.csv_text import round6
from asyncfl.output.reading import read_config, read_table, table_file

if TYPE_CHECKING:  # a run's figures read its small tables without pandas (read_columns)
    import pandas as pd

T = TypeVar("T")

COLORS = {"download": "#4c72b0", "compute": "#dd8452", "upload": "#55a868", "offline": "#c8c8c8", "failed": "#c44e52"}


def accuracy_limits(values: Sequence[float]) -> tuple[float, float]:
    """y range for accuracies: the data's range plus 5 % of it each side (at least 0.02), kept in
    [0, 1], so that the part of the curve that moves is not squashed into a band of a 0-1 axis."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    pad = max(0.05 * (hi - lo), 0.02)
    return max(0.0, lo - pad), min(1.0, hi + pad)


def run_label(run_dir: Path) -> str:
    """What a figure's title calls the run: ``scenario, seed N``, and inside a sweep
    (``<sweep>/<variant>/seed<N>/`` beside study.yaml) ``study / variant, seed N``, from config.yaml
    and the directory's place; the directory's own name (a timestamp) says nothing."""
    config = run_config(run_dir)
    name, seed = config.get("name", run_dir.name), config.get("seed")
    in_sweep = re.fullmatch(r"seed(\d+)", run_dir.name) and (run_dir.parent.parent / "study.yaml").is_file()
    if in_sweep:
        name = f"{name} / {run_dir.parent.name}"
    return name if seed is None else f"{name}, seed {seed}"


def run_title(run_dir: Path) -> str:
    """``label: algorithm (mode, K)``, see :func:`run_label`."""
    config = run_config(run_dir)
    if not config:
        return run_label(run_dir)
    server = config.get("server") or {}
    mode = server.get("mode", "sync")
    detail = f"k_async, K={server.get('k')}" if mode == "k_async" else mode
    return f"{run_label(run_dir)}: {(config.get('algorithm') or {}).get('name', '?')} ({detail})"


def run_start(run_dir: Path):
    """The run's ``clock.start_time`` as a datetime in the offset it names (UTC when it names none),
    or None when the run has no time of day."""
    text = (run_config(run_dir).get("clock") or {}).get("start_time")
    if not text:
        return None
    from datetime import datetime, timezone

    moment = datetime.fromisoformat(str(text))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def time_of_day_axis(ax, run_dir: Path, start=None) -> bool:
    """Label ``ax``'s x axis (virtual seconds) as time of day when the run has ``clock.start_time``:
    ticks on whole clock steps (1, 5, 10, 15, 30 min, 1, 2, 3, 6, 12 or 24 h: at most about 12 ticks),
    labelled HH:MM in the offset start_time names (UTC by default), with the day under midnight.
    Call it after the data are drawn (it reads the axis limits)."""
    start = start if start is not None else run_start(run_dir)
    if start is None:
        return False
    from datetime import timedelta

    from matplotlib.ticker import FuncFormatter, MultipleLocator

    lo, hi = ax.get_xlim()
    span = max(hi - lo, 1e-9)
    steps = (60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
    step = next((h for h in steps if span / h <= 12), 86400 * math.ceil(span / 86400 / 12))
    of_day = start.hour * 3600 + start.minute * 60 + start.second + start.microsecond / 1e6
    ax.xaxis.set_major_locator(MultipleLocator(step, offset=-(of_day % step)))  # ticks on whole clock steps

    def label(x: float, _pos) -> str:
        moment = start + timedelta(seconds=x)
        if moment.hour == 0 and moment.minute == 0:  # midnight: name the day
            return moment.strftime("%H:%M\n%a %d %b")
        return moment.strftime("%H:%M")

    ax.xaxis.set_major_formatter(FuncFormatter(label))
    zone = start.strftime("%z")
    zone = "UTC" if zone in ("+0000", "") else f"UTC{zone[:3]}:{zone[3:]}"
    ax.set_xlabel(f"time of day ({zone}); virtual second 0 = {start.strftime('%Y-%m-%d %H:%M')}")
    return True


class ClientTable:
    """clients.csv as columns: ``table[name]`` is one column as a 1-D numpy array, ``rows`` the number
    of clients.  A run hands its figures the columns it has just written (:meth:`from_run`), so that
    at 10^7 clients nothing re-reads the file (pandas made a 17 x 10^7 float64 block of it); ``plot``
    reads the file (:func:`read_clients`).  A column is made dense only when a figure asks for it."""

    def __init__(self, columns: Mapping[str, Any], rows: int, rounded: bool = False) -> None:
        self._columns, self.rows, self._rounded = columns, rows, rounded

    @classmethod
    def from_run(cls, columns: Mapping[str, Any]) -> ClientTable:
        """The columns a run wrote to clients.csv (numpy arrays, or objects with ``dense()`` for the
        columns most clients share a value of); floats are read as the file holds them (6 decimals)."""
        rows = len(next(iter(columns.values()))) if columns else 0
        return cls(columns, rows, rounded=True)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> ClientTable:
        return cls({name: frame[name].to_numpy() for name in frame.columns}, len(frame))

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __getitem__(self, name: str) -> np.ndarray:
        column = self._columns[name]
        values = np.asarray(column.dense() if hasattr(column, "dense") else column)
        if self._rounded and values.dtype.kind == "f":
            values = round6(values.astype(np.float64, copy=False))
        return values


_last_read: dict[str, tuple[tuple, Any]] = {}  # per kind of file: the last one read, by its identity


def _read_while_unchanged(kind: str, path: Path, read: Callable[[], T]) -> T:
    """``read()``'s result, kept while ``path`` is unchanged (same path, inode, size and modification
    time) until another file of the same ``kind`` is read; the result is shared: do not modify it."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns)
    last = _last_read.get(kind)
    if last is None or last[0] != key:
        _last_read.pop(kind, None)
        last = _last_read[kind] = (key, read())
    return last[1]


def read_clients(run_dir: Path) -> ClientTable:
    """clients.csv or .parquet (an empty table when the run directory has none).  The last one read is
    kept while its file is unchanged, as at 10^6 clients each reading costs a quarter of a second.
    The table is shared: do not modify its columns."""
    path = table_file(run_dir / "clients.csv")
    if not path.is_file():
        return ClientTable({}, 0)
    return _read_while_unchanged("clients", path, lambda: ClientTable.from_frame(read_table(path)))


def run_config(run_dir: Path) -> dict:
    """config.yaml as plain data ({} when the directory has none), parsed once while the file is
    unchanged: every figure's title reads it, and one parse costs 0.03-0.1 s.  Shared: do not modify it."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        return {}
    return _read_while_unchanged("config", path, lambda: read_config(run_dir))


def spread_ties(speed: np.ndarray) -> np.ndarray:
    """Clients of one speed tier side by side (within +-6 %, in id order) instead of on top of each
    other; vectorised, as 10^5 clients of distinct speeds are common."""
    _, tier, sizes = np.unique(speed, return_inverse=True, return_counts=True)
    order = np.argsort(tier, kind="stable")
    rank = np.empty(len(speed))
    rank[order] = np.arange(len(speed)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    size = sizes[tier]
    spread = np.where(size > 1, -0.06 + 0.12 * rank / np.maximum(size - 1, 1), 0.0)
    return speed.astype(np.float64) * np.exp(spread)


def save_figure(fig: Figure, path: Path, title: str | None = None, dpi: int = 120) -> Path:
    """Write ``fig`` as a PNG (its ``Title`` metadata: ``title``, which run it shows), drawn once.
    ``savefig`` on a figure with a layout engine draws it twice (once, rendering nothing, to lay it
    out, then for real); laying it out here first (:class:`asyncfl.figures.layout.RowLayout`), at the
    file's dpi and with the canvas that then draws it, gives the same pixels for one draw."""
    fig.set_dpi(dpi)  # text is measured in pixels: lay out at the dpi the file is drawn at
    FigureCanvasAgg(fig)  # becomes fig.canvas: its renderer (and text measurements) serve both steps
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)
        fig.set_layout_engine(None)  # laid out: no engine, so savefig draws once
    fig.savefig(path, dpi=dpi, metadata={"Title": title} if title is not None else None)
    return path


@dataclass(frozen=True)
class FigureInput:
    """What a run figure may read: its run directory, clients.csv's columns (read once for every figure),
    and the timeline's view (``render --window`` / ``--clients``, written to ``timeline_name``)."""

    run_dir: Path
    table: ClientTable
    window: tuple[float, float | None] | None = None
    clients: int | list[int] | None = None
    timeline_name: str = "timeline.png"


@dataclass(frozen=True)
class RunFigure:
    """One figure of a run, registered by its module of this package as ``FIGURE = RunFigure(...)`` (or by a
    plug-in with ``asyncfl.figures.FIGURES.register``): :func:`asyncfl.figures.render_run_figures` draws every
    registered figure, in ``(order, name)`` order, into the run directory.

    ``name``: the registration's name (``"staleness"``).  ``draw(run)``: the file name and the figure, or None
    when the run holds nothing worth drawing; it raises ``NotRecorded`` (:mod:`asyncfl.figures.timeline_files`)
    when a file it needs is missing (the figure is skipped with a note).  ``writes_beside(run)``: files written
    next to a drawn figure once every figure is drawn (e.g. its numbers as tables).  ``order``: place among the
    run's figures (the built-ins 10 to 70; a new figure goes last)."""

    name: str
    draw: Callable[[FigureInput], tuple[str, Figure] | None]
    writes_beside: Callable[[FigureInput], Any] | None = None
    order: int = 1000


def named(file: str, fig: Figure | None) -> tuple[str, Figure] | None:
    """``(file, fig)``, or None when there is no figure: what :attr:`RunFigure.draw` returns."""
    return None if fig is None else (file, fig)
