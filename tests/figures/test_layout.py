"""RowLayout places every run figure's axes from the sizes of its texts: in the crowded cases (long
client ids and scenario names, many curves, a colorbar and legends beside the axes, a legend below,
two-line tick labels) every text stays inside the canvas and no axes' texts run into another's or
into a figure legend or title, as constrained layout guaranteed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from asyncfl.figures.accuracy import draw_timing
from asyncfl.figures.common import ClientTable, save_figure
from asyncfl.figures.compare import plot_comparison
from asyncfl.figures.layout import RowLayout
from asyncfl.figures.participation import draw_participation
from asyncfl.figures.time_breakdown import draw_time_breakdown
from asyncfl.figures.timeline import draw_timeline

LONG_NAME = "diurnal_fedscale_like / deadline_300s"  # a sweep's: study / variant
ONE_PIXEL = 1.0


def _laid_out(fig, dpi: int = 120):
    """``fig`` drawn as save_figure draws it (at the file's dpi, the layout run once); its renderer."""
    fig.set_dpi(dpi)
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _inside(inner, outer) -> bool:
    return (
        inner.x0 >= outer.x0 - ONE_PIXEL
        and inner.y0 >= outer.y0 - ONE_PIXEL
        and inner.x1 <= outer.x1 + ONE_PIXEL
        and inner.y1 <= outer.y1 + ONE_PIXEL
    )


def _overlap(a, b) -> bool:
    return min(a.x1, b.x1) - max(a.x0, b.x0) > ONE_PIXEL and min(a.y1, b.y1) - max(a.y0, b.y0) > ONE_PIXEL


def assert_nothing_clipped_or_overlapping(fig) -> None:
    """Each axes with every text drawn around it (tick labels, labels, title, its legend, secondary
    axes), each figure legend and the figure's title lie inside the canvas, and no two overlap."""
    renderer = _laid_out(fig)
    boxes = {
        f"axes {i} ({ax.get_label() or ax.get_ylabel()})": ax.get_tightbbox(renderer) for i, ax in enumerate(fig.axes)
    }
    boxes |= {f"figure legend {i}": legend.get_window_extent(renderer) for i, legend in enumerate(fig.legends)}
    if fig.get_suptitle():
        boxes["figure title"] = fig._suptitle.get_window_extent(renderer)
    for name, box in boxes.items():
        assert _inside(box, fig.bbox), f"{name} {box.bounds} leaves the canvas {fig.bbox.bounds}"
    names = list(boxes)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not _overlap(boxes[a], boxes[b]), f"{a} {boxes[a].bounds} overlaps {b} {boxes[b].bounds}"


def _config(run_dir: Path, name: str = LONG_NAME, **extra) -> None:
    run_dir.mkdir(exist_ok=True)
    text = "\n".join([f"name: {name}", "seed: 123456", *[f"{k}: {v}" for k, v in extra.items()]])
    (run_dir / "config.yaml").write_text(text + "\n", encoding="utf-8")


def test_a_timeline_of_many_clients_with_long_ids_keeps_its_labels_and_legend_on_the_canvas(tmp_path):
    """40 rows labelled ``client 9999981 (12345 samples/s)``, every failure marker in the legend below."""
    run_dir = tmp_path / "run"
    _config(run_dir, name="diurnal_fedscale_like")  # the title must fit the figure's width, whatever the layout
    ids = [9_999_960 + i for i in range(40)]
    (run_dir / "summary.json").write_text(json.dumps({"timeline_clients": ids}), encoding="utf-8")
    outcomes = ["delivered", "offline", "battery", "deadline", "charging", "network", "cancelled"]
    rows = [f"{c},0,{i},{i},{i + 1},{i + 3},{i + 4},{outcomes[i % len(outcomes)]}" for i, c in enumerate(ids)]
    header = "client,base_version,start_s,download_s,compute_s,upload_s,end_s,outcome\n"
    (run_dir / "timeline_tasks.csv").write_text(header + "\n".join(rows) + "\n", encoding="utf-8")
    (run_dir / "offline_periods.csv").write_text("client,offline_from_s,offline_until_s\n", encoding="utf-8")
    (run_dir / "rounds.csv").write_text("round,time,started,received\n1,50,0,1\n", encoding="utf-8")
    speeds = "\n".join(f"{c},{12345 - i},1,1" for i, c in enumerate(ids))
    (run_dir / "clients.csv").write_text(f"client,samples_per_s,attempts,participations\n{speeds}\n", encoding="utf-8")
    fig = draw_timeline(run_dir, clients=40)
    assert len(fig.axes[0].get_yticks()) == 40
    assert_nothing_clipped_or_overlapping(fig)


def _crowded_clients(rows: int) -> ClientTable:
    """Clients of five speed decades with varied availability, every failure column (eligibility's too),
    and a time breakdown that adds up to 86,400 virtual s per client."""
    rng = np.random.default_rng(0)
    attempts = rng.integers(1, 200, rows)
    columns = {
        "client": np.arange(rows) + 10_000_000,
        "samples_per_s": 10 ** rng.uniform(0, 5, rows),
        "availability_p": rng.uniform(0.1, 0.9, rows),
        "attempts": attempts,
        "participations": attempts // 2,
        **{f"failed_{r}": attempts // 10 for r in ("offline", "battery", "deadline", "charging", "network")},
        "download_s": np.full(rows, 400.0),
        "compute_s": np.full(rows, 30_000.0),
        "lost_compute_s": np.full(rows, 1_000.0),
        "upload_s": np.full(rows, 2_000.0),
        "idle_s": np.full(rows, 4_000.0),
        "offline_s": np.full(rows, 50_000.0),
    }
    return ClientTable(columns, rows)


def test_participation_with_a_colorbar_and_a_legend_of_six_outcomes_fits(tmp_path):
    run_dir = tmp_path / "run"
    _config(run_dir)
    fig = draw_participation(run_dir, _crowded_clients(3000))
    assert len(fig.axes) == 3  # scatter, colorbar, outcomes
    assert_nothing_clipped_or_overlapping(fig)


def test_time_breakdown_with_its_second_axis_and_figure_legend_fits(tmp_path):
    run_dir = tmp_path / "run"
    _config(
        run_dir, name="diurnal_fedscale_like"
    )  # a sweep's longer title overhangs, as it did with constrained layout
    fig = draw_time_breakdown(run_dir, _crowded_clients(500))
    assert_nothing_clipped_or_overlapping(fig)


def test_updates_vs_time_on_a_day_clock_fits(tmp_path):
    """Two panels, two-line tick labels (the day under midnight), a legend of every failure reason."""
    run_dir = tmp_path / "run"
    _config(run_dir, clock='{start_time: "2026-01-05T00:00"}', server="{mode: sync}", algorithm="{name: fedavg}")
    t = np.arange(1, 2001) * 43.2
    frame = {"round": np.arange(1, 2001), "time": t, "started": t - 40, "received": np.full(2000, 123_456)}
    frame |= {f"failed_{r}": np.full(2000, 7) for r in ("offline", "battery", "deadline", "charging", "network")}
    pd.DataFrame(frame).to_csv(run_dir / "rounds.csv", index=False)
    assert_nothing_clipped_or_overlapping(draw_timing(run_dir))


def test_a_comparison_of_fourteen_long_named_variants_fits(tmp_path, monkeypatch):
    """The legend of 14 long names sits inside the axes (``loc="best"``); the title is long."""
    from asyncfl.figures import compare

    drawn = []
    monkeypatch.setattr(compare, "save_figure", lambda fig, path, dpi: drawn.append(fig))
    rows = [
        {"axis": "time", "variant": f"variant_{i}_with_a_long_name", "x": x, "accuracy_mean": 0.5 + i / 40,
         "accuracy_std": 0.01, "seeds": 3}
        for i in range(14)
        for x in (0.0, 10_000.0)
    ]  # fmt: skip
    plot_comparison(pd.DataFrame(rows), "time", tmp_path / "c.png", targets=[0.8], title=LONG_NAME)
    assert_nothing_clipped_or_overlapping(drawn[0])


def test_the_layout_runs_once_and_the_saved_png_keeps_size_and_dpi(tmp_path):
    """save_figure runs the layout at the file's dpi and then drops it (one draw); the PNG is the
    figure's size at that dpi."""
    from matplotlib.figure import Figure
    from PIL import Image

    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    ax.set_ylabel("a label\non two lines")
    fig.set_layout_engine(RowLayout([ax]))
    path = save_figure(fig, tmp_path / "f.png", "title")
    assert fig.get_layout_engine() is None
    assert Image.open(path).size == (720, 480)
    x0, y0, w, h = ax.get_position().bounds
    assert 0 < x0 < 0.25 and 0 < y0 < 0.25 and x0 + w < 1 and y0 + h < 1


@pytest.mark.parametrize("names", [["x"], ["x", "a much longer x label that overhangs its axes by far"]])
def test_a_centred_label_wider_than_its_axes_takes_room_beside_it(names):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3))
    axes = fig.subplots(1, len(names))
    axes = list(np.atleast_1d(axes))
    for ax, name in zip(axes, names):
        ax.set_xlabel(name)
    fig.set_layout_engine(RowLayout(axes))
    assert_nothing_clipped_or_overlapping(fig)


@pytest.mark.parametrize("dpi", [72, 120, 200])
@pytest.mark.parametrize("text", ["0.95", "Virtual time (s)", "a label\non two lines", "$\\tau$ staleness"])
def test_text_sizes_read_through_the_cache_are_the_renderers_own(text, dpi):
    """The layout measures through matplotlib's metrics cache (shared with the draw); every size is the one
    the renderer measures itself at that dpi (also when another figure's renderer, at another dpi, measured the
    string first): the widest line, and lines 1.2 heights apart, each at least as tall as "lp"; math as math."""
    from matplotlib.figure import Figure
    from matplotlib.font_manager import FontProperties

    from asyncfl.figures.layout import _text_size

    font = FontProperties(size=10)
    other = Figure(dpi=dpi + 30)
    _text_size(FigureCanvasAgg(other).get_renderer(), text, font)  # fills the cache at another dpi
    renderer = FigureCanvasAgg(Figure(dpi=dpi)).get_renderer()
    lines = text.split("\n")
    own = [renderer.get_text_width_height_descent(line, font, ismath=line.startswith("$")) for line in lines]
    line_height = max(max(h for _, h, _ in own), renderer.get_text_width_height_descent("lp", font, ismath=False)[1])
    expected = (max(w for w, _, _ in own), line_height * (1.2 * len(lines) - 0.2))
    assert _text_size(renderer, text, font) == pytest.approx(expected, rel=1e-12)
    assert _text_size(renderer, text, font) == _text_size(renderer, text, font)  # a cache hit: the same numbers
