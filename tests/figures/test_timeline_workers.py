"""timeline.png at population scale (issue 29, item 27): with far more clients than ever work, the
clients spread over device speeds at the start mostly never get a task; the first client of each
speed range to start a task joins the timeline, and the figure shows clients that worked only, saying
so in its title."""

from __future__ import annotations

import csv
import json

import pytest
from conftest import run

from asyncfl.figures.timeline import draw_timeline
from asyncfl.output.run_directory import TIMELINE_BINS, speed_bins, speed_order, timeline_sample


def _sparse_work(tmp_path, mode: str):
    """2,000 clients, 5 at a time, a few aggregations: at most a few dozen clients ever work."""
    server = {"mode": "sync", "clients_per_round": 5, "deadline_s": 30}
    availability = {"kind": "bernoulli", "p": 0.8}
    if mode == "k_async":
        server = {"mode": "k_async", "concurrency": 5, "k": 2}
        availability["slot_s"] = 60
    return run(
        tmp_path, mode,
        seed=1, timing_only=True,
        data={"dataset": "digits", "clients": 2000},
        model={"name": "logreg"},
        population={"compute": {"samples_per_s": {"dist": "lognormal", "median": 60, "sigma": 0.8}},
                    "availability": availability},
        server=server, stop={"rounds": 4}, eval={"per_client": False}, output={"plot": False},
    )  # fmt: skip


@pytest.mark.parametrize("mode", ["sync", "k_async"])
def test_every_row_of_the_timeline_worked(tmp_path, mode):
    run_dir = _sparse_work(tmp_path, mode)
    with open(run_dir / "timeline_tasks.csv", newline="") as handle:
        worked = {int(row["client"]) for row in csv.DictReader(handle)}
    recorded = json.loads((run_dir / "summary.json").read_text())["timeline_clients"]
    with open(run_dir / "clients.csv", newline="") as handle:
        speeds = [float(row["samples_per_s"]) for row in csv.DictReader(handle)]
    sample = timeline_sample(speeds)
    assert len([c for c in sample if c in worked]) < 8  # spread over all 2,000, most never worked
    joined = set(recorded) - set(sample)
    assert joined and joined <= worked and len(joined) <= TIMELINE_BINS  # at most one per speed range
    fig = draw_timeline(run_dir)
    ax = fig.axes[0]
    shown = [int(label.get_text().split()[1]) for label in ax.get_yticklabels()]
    assert len(shown) >= 8 and set(shown) <= worked  # every row has at least one task
    assert "clients that worked, spread over their speeds" in ax.get_title()


def test_asking_for_more_rows_than_clients_worked_tops_up_with_idle_ones_and_says_so(tmp_path):
    run_dir = _sparse_work(tmp_path, "sync")
    with open(run_dir / "timeline_tasks.csv", newline="") as handle:
        worked = {int(row["client"]) for row in csv.DictReader(handle)}
    recorded = json.loads((run_dir / "summary.json").read_text())["timeline_clients"]
    fig = draw_timeline(run_dir, clients=len(recorded))
    shown = [int(label.get_text().split()[1]) for label in fig.axes[0].get_yticklabels()]
    assert sorted(shown) == sorted(recorded)
    idle = len(set(recorded) - worked)
    assert f"{len(recorded) - idle} clients that worked and {idle} that never did" in fig.axes[0].get_title()


def test_speed_ranges_hold_equal_numbers_of_clients_by_rank():
    speeds = [5.0, 1.0, 3.0, 3.0, 9.0, 7.0, 2.0, 8.0]
    bins = speed_bins(speed_order(speeds), count=4)
    # ranks: 1.0 (id 1), 2.0 (6), 3.0 (2), 3.0 (3), 5.0 (0), 7.0 (5), 8.0 (7), 9.0 (4)
    assert bins.tolist() == [2, 0, 1, 1, 3, 2, 0, 3]
