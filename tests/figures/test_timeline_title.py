"""timeline.png's title counts as "clients that worked" only the rows with a task in the window shown
(issue 45 item 13): two clients that worked early and are offline for the whole window are not."""

from __future__ import annotations

import json

from asyncfl.figures.timeline import draw_timeline


def _write_run(run_dir) -> None:
    """Clients 1 (100 samples/s) and 2 (50) each deliver a task in 0-5 s, then are offline from 6 to 40 s;
    client 3 (10) computes from 12 to 25 s."""
    run_dir.mkdir()
    (run_dir / "summary.json").write_text(json.dumps({"timeline_clients": [1, 2, 3]}), encoding="utf-8")
    (run_dir / "timeline_tasks.csv").write_text(
        "client,base_version,start_s,download_s,compute_s,upload_s,end_s,outcome\n"
        "1,0,0,0,1,4,5,delivered\n"
        "2,0,0,0,2,4,5,delivered\n"
        "3,1,11,11,12,25,26,delivered\n",
        encoding="utf-8",
    )
    (run_dir / "offline_periods.csv").write_text(
        "client,offline_from_s,offline_until_s\n1,6,40\n2,6,40\n", encoding="utf-8"
    )
    (run_dir / "rounds.csv").write_text("round,time,started,received\n1,5,0,2\n2,26,5,1\n3,40,26,0\n", encoding="utf-8")
    (run_dir / "clients.csv").write_text(
        "client,samples_per_s,attempts,participations\n1,100,1,1\n2,50,1,1\n3,10,1,1\n", encoding="utf-8"
    )


def test_clients_offline_throughout_the_window_are_not_counted_as_working(tmp_path):
    run_dir = tmp_path / "run"
    _write_run(run_dir)
    title = draw_timeline(run_dir, window=(10, 30)).axes[0].get_title()
    assert title.endswith(": 1 clients that worked and 2 with no task in this window, spread over their speeds, "
                          "virtual s 10 to 30")  # fmt: skip
    whole = draw_timeline(run_dir).axes[0].get_title()  # 0 to the last aggregation (40 s): all three worked
    assert whole.endswith(": 3 clients that worked, spread over their speeds, virtual s 0 to 40")
