"""``plot RUN_OR_SWEEP_DIR``: re-render a run's figures (or a sweep's comparison and every run's
figures), with the timeline's ``--window`` and ``--clients``."""

from __future__ import annotations

import math
from contextlib import ExitStack
from pathlib import Path

from asyncfl.config import ConfigError, read_yaml


def add_plot_parser(sub) -> None:
    plot = sub.add_parser("plot", help="re-render the figures of a run (or sweep) directory")
    plot.add_argument("run_dir", type=Path, help="a run or sweep directory")
    plot.add_argument("--window", metavar="START:END",
                      help="timeline.png: virtual seconds e.g. 100:400 or 500: (default: first 30 rounds)")  # fmt: skip
    plot.add_argument("--clients", metavar="N|ID,ID,...",
                      help="timeline.png: how many recorded clients (default 16), or which ones")  # fmt: skip


def plot_dir(path: Path, window: str | None = None, clients: str | None = None) -> int:
    """Re-render a run's figures, or a sweep's comparison and every run's figures (each redrawn: a figure
    depends on the code that draws it as much as on the files), printing every file as it is written;
    ``window`` and ``clients`` choose what the timeline shows (see asyncfl.figures.timeline.draw_timeline;
    it is then written beside timeline.png).  Every file the figures read is checked first: a damaged one is an
    error naming it, and no figure is redrawn."""
    from asyncfl.figures import render_run_figures
    from asyncfl.output.lock import refuse_if_written, writing
    from asyncfl.output.reading import check_run_files, has_table
    from asyncfl.study.compare import sweep_records, write_comparison

    span, rows, timeline = parse_window(window), parse_clients(clients), timeline_file(window, clients)
    sweep = (path / "study.yaml").is_file()
    if not sweep and not has_table(path / "metrics.csv"):
        raise ConfigError(f"{path}: not a run directory (no metrics.csv) nor a sweep directory (no study.yaml).")
    raw = read_yaml(path / "study.yaml") if sweep else {}
    run_dirs = [record.path for record in sweep_records(path)] if sweep else [path]
    try:
        for run_dir in run_dirs:
            check_run_files(run_dir)
    except ConfigError as damaged:
        raise ConfigError(f"{damaged} No figure was drawn.") from None
    with ExitStack() as held:  # the directories it draws into: one a process is writing refuses the command
        if sweep:
            held.enter_context(writing(path, "sweep"))
        for run_dir in run_dirs:  # before anything is drawn; one lock at a time (a sweep may have thousands)
            refuse_if_written(run_dir)
        for run_dir in run_dirs:  # every file written is listed, a sweep's runs' figures too
            with writing(run_dir):
                for figure in render_run_figures(run_dir, span, rows, timeline):
                    print(figure, flush=True)
        if sweep:
            for written in write_comparison(
                path, sweep_records(path), raw.get("targets") or (), title=str(raw.get("name", ""))
            ):
                print(written)
    return 0


def timeline_file(window: str | None, clients: str | None) -> str:
    """Where ``plot --window/--clients`` writes the timeline: beside timeline.png (the default view,
    kept), named after the options, e.g. ``timeline_100-400.png``, ``timeline_1000-end_8clients.png``."""
    if window is None and clients is None:
        return "timeline.png"
    name = "timeline"
    if window is not None:
        lo, hi = parse_window(window)
        name += f"_{lo:g}-{'end' if hi is None else f'{hi:g}'}"
    if clients is not None:
        rows = parse_clients(clients)
        name += f"_{rows}clients" if isinstance(rows, int) else "_clients" + "-".join(map(str, rows))
    return f"{name}.png"


def parse_window(text: str | None) -> tuple[float, float | None] | None:
    """``--window START:END`` in virtual seconds; either end may be left out (``:500``, ``1000:``)."""
    if text is None:
        return None
    problem = (
        f"--window {text}: expected START:END in virtual seconds with 0 <= START < END, e.g. 100:400, :500 or 1000:."
    )
    start, sep, end = text.partition(":")
    try:
        lo, hi = float(start or 0), (float(end) if end else None)
    except ValueError:
        raise ConfigError(problem) from None
    if not sep or not math.isfinite(lo) or lo < 0 or (hi is not None and not lo < hi < math.inf):
        raise ConfigError(problem)
    return lo, hi


def parse_clients(text: str | None) -> int | list[int] | None:
    """``--clients N`` (how many recorded clients, spread over speeds) or ``--clients 3,17,40`` (which)."""
    if text is None:
        return None
    problem = f"--clients {text}: expected a count (e.g. 8) or a comma-separated list of client ids (e.g. 3,17,40)."
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise ConfigError(problem) from None
    if any(v < (1 if len(values) == 1 else 0) for v in values):
        raise ConfigError(problem)
    return values[0] if "," not in text else list(dict.fromkeys(values))
