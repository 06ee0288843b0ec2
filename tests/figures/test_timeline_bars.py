"""timeline.png draws every phase of every task and every offline period of the clients it shows,
each as one bar of the right row, span and colour, however its bars are grouped into artists (one
collection per row and colour, or one for all): a run directory written by hand, its bars counted by hand."""

from __future__ import annotations

import json

import matplotlib.colors as mcolors
from matplotlib.collections import LineCollection, PathCollection, PolyCollection

from asyncfl.figures.common import COLORS
from asyncfl.figures.timeline import draw_timeline


def _write_run(run_dir) -> None:
    """Client 1 (100 samples/s) delivers one task (download 0-1, compute 1-4, upload 4-5), then loses
    one when it goes offline at 8 (download 6-7, compute 7-8) and stays offline until 15; client 2
    (50 samples/s) is still computing at the end (download 2-3, compute 3-20); client 3 never works."""
    run_dir.mkdir()
    (run_dir / "summary.json").write_text(json.dumps({"timeline_clients": [1, 2, 3]}), encoding="utf-8")
    (run_dir / "timeline_tasks.csv").write_text(
        "client,base_version,start_s,download_s,compute_s,upload_s,end_s,outcome\n"
        "1,0,0,0,1,4,5,delivered\n"
        "2,0,2,2,3,,20,running\n"
        "1,1,6,6,7,,8,offline\n",
        encoding="utf-8",
    )
    (run_dir / "offline_periods.csv").write_text(
        "client,offline_from_s,offline_until_s\n1,8,15\n3,0,20\n", encoding="utf-8"
    )
    (run_dir / "rounds.csv").write_text("round,time,started,received\n1,5,0,1\n2,10,5,0\n3,20,10,0\n", encoding="utf-8")
    (run_dir / "clients.csv").write_text(
        "client,samples_per_s,attempts,participations\n1,100,2,1\n2,50,1,0\n3,10,0,0\n", encoding="utf-8"
    )


def _bars(fig) -> list[tuple[float, float, float, float, str]]:
    """(x0, x1, y0, y1, colour) of every rectangle of the timeline's polygon collections, in drawing
    order: offline periods, then tasks' phases by row and colour in the order they first occur."""
    bars = []
    for collection in fig.axes[0].collections:
        if not isinstance(collection, PolyCollection):
            continue
        colors = collection.get_facecolor()
        for i, path in enumerate(collection.get_paths()):
            box = path.get_extents()
            color = mcolors.to_hex(colors[i % len(colors)])
            bars.append((round(box.x0, 9), round(box.x1, 9), round(box.y0, 9), round(box.y1, 9), color))
    return bars


def test_every_phase_and_offline_period_of_the_rows_shown_is_one_bar(tmp_path):
    run_dir = tmp_path / "run"
    _write_run(run_dir)
    fig = draw_timeline(run_dir)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["client 1 (100 samples/s)", "client 2 (50 samples/s)"]
    # rows: client 1 (fastest) at y = 0, client 2 at y = 1; tasks 0.6 high, offline periods 0.8
    blue, orange, green = COLORS["download"], COLORS["compute"], COLORS["upload"]
    red, grey = COLORS["failed"], COLORS["offline"]
    expected = [
        (8, 15, -0.4, 0.4, grey),  # client 1 offline (client 3, offline 0-20, is not shown: it never worked)
        (0, 1, -0.3, 0.3, blue), (1, 4, -0.3, 0.3, orange), (4, 5, -0.3, 0.3, green),  # delivered
        (2, 3, 0.7, 1.3, blue), (3, 20, 0.7, 1.3, orange),  # still computing at the end (20 s)
        (6, 7, -0.3, 0.3, red), (7, 8, -0.3, 0.3, red),  # lost: both phases in the colour of lost work
    ]  # fmt: skip
    assert _bars(fig) == [(float(a), float(b), c, d, e) for a, b, c, d, e in expected]
    assert ax.get_xlim() == (0.0, 20.0)
    (failures,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert failures.get_offsets().tolist() == [[8.0, 0.0]]  # the lost task's end, client 1's row


def test_a_window_keeps_only_the_bars_that_reach_into_it(tmp_path):
    run_dir = tmp_path / "run"
    _write_run(run_dir)
    fig = draw_timeline(run_dir, window=(4.5, 7.5))
    spans = [(x0, x1) for x0, x1, *_ in _bars(fig)]
    # kept: offline 8-15? no (starts after 7.5); upload 4-5, lost download 6-7 and compute 7-8, compute 3-20
    assert sorted(spans) == [(3.0, 20.0), (4.0, 5.0), (6.0, 7.0), (7.0, 8.0)]


def test_every_aggregation_in_the_window_is_one_grey_line_spanning_the_rows(tmp_path):
    """rounds.csv aggregates at 5, 10 and 20 s; the default window ends at the last one: three lines,
    from the bottom of the axes to its top (axes coordinates), at those times."""
    run_dir = tmp_path / "run"
    _write_run(run_dir)
    ax = draw_timeline(run_dir).axes[0]
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert mcolors.to_hex(lines.get_color()[0]) == "#808080"
    segments = lines.get_segments()
    assert sorted((float(s[0][0]), float(s[0][1]), float(s[1][0]), float(s[1][1])) for s in segments) == [
        (5.0, 0.0, 5.0, 1.0), (10.0, 0.0, 10.0, 1.0), (20.0, 0.0, 20.0, 1.0)
    ]  # fmt: skip
    assert lines.get_transform().contains_branch_seperately(ax.transData) == (True, False)  # x: data, y: axes
