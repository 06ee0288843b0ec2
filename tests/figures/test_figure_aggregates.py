"""The figures' group-bys (asyncfl.figures.aggregate) against small tables computed by hand, and the
thinned scatter against the dots it must keep."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from asyncfl.figures.aggregate import group_means, group_sums, speed_groups, visible_points
from asyncfl.figures.common import spread_ties
from asyncfl.figures.participation import draw_participation
from asyncfl.figures.timeline import recorded_speeds


def test_speed_tiers_are_groups_in_speed_order():
    speed = np.array([50.0, 10.0, 50.0, 200.0, 10.0, 10.0])
    labels, names = speed_groups(speed)
    assert labels.tolist() == [1, 0, 1, 2, 0, 0]  # tiers 10 < 50 < 200
    assert names == ["10\n3 clients", "50\n2 clients", "200\n1 clients"]


def test_speed_quintiles_split_the_stable_order_like_array_split():
    # 7 distinct speeds -> quintiles of sizes 2, 2, 1, 1, 1 (array_split: the first 7 % 5 = 2 one larger)
    speed = np.array([7.0, 1.0, 6.0, 2.0, 5.0, 3.0, 4.0])
    labels, names = speed_groups(speed)
    # sorted: 1 (id 1), 2 (id 3) | 3 (id 5), 4 (id 6) | 5 (id 4) | 6 (id 2) | 7 (id 0)
    assert labels.tolist() == [4, 0, 3, 0, 2, 1, 1]
    assert names[0] == "1 to 2\n2 clients" and names[1] == "3 to 4\n2 clients" and names[4] == "7 to 7\n1 clients"


def test_group_sums_and_means_by_hand():
    labels = np.array([0, 1, 0, 2, 1, 0])
    attempts = [3, 1, 2, 5, 0, 4]
    # group 0: 3 + 2 + 4 = 9 over 3 clients; group 1: 1 + 0 = 1 over 2; group 2: 5 over 1; group 3: empty
    assert group_sums(labels, attempts, 4).tolist() == [9.0, 1.0, 5.0, 0.0]
    means = group_means(labels, attempts, 4)
    assert means[:3].tolist() == [3.0, 0.5, 5.0] and np.isnan(means[3])


def test_group_means_equal_the_per_group_loop_they_replace():
    rng = np.random.default_rng(3)
    speed = rng.lognormal(4, 0.8, 1001)
    seconds = rng.uniform(0, 100, 1001)
    labels, _ = speed_groups(speed)
    old = [seconds[g].mean() for g in np.array_split(np.argsort(speed, kind="stable"), 5)]
    assert group_means(labels, seconds, 5) == pytest.approx(old, rel=1e-12)


def test_visible_points_keep_the_last_dot_of_each_pixel_and_the_ends():
    # x on a linear axis of 4 columns over [0, 8]: columns [0,2) [2,4) [4,6) [6,8]
    x = np.array([0.0, 1.0, 0.5, 3.0, 3.5, 8.0, 1.5])
    y = np.array([0, 0, 1, 0, 0, 0, 0])
    kept = visible_points(x, y, columns=4, log_x=False)
    # column 0, y 0: ids 0, 1, 6 -> 6 on top; column 0, y 1: id 2; column 1, y 0: ids 3, 4 -> 4;
    # column 3, y 0: id 5; plus the least x (id 0) and the largest (id 5), so the axis spans the same range
    assert kept.tolist() == [0, 2, 4, 5, 6]


def test_visible_points_on_a_log_axis_cover_every_row_and_the_range():
    rng = np.random.default_rng(0)
    x = rng.lognormal(4, 1, 100_000)
    y = rng.integers(0, 4, 100_000)
    kept = visible_points(x, y, columns=64)
    assert len(kept) <= 64 * 4 + 2 and set(y[kept]) == {0, 1, 2, 3}
    assert x[kept].min() == x.min() and x[kept].max() == x.max()
    assert (np.diff(kept) > 0).all()  # drawn in the original order


def test_timeline_speeds_are_picked_for_the_recorded_clients_only(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"timeline_clients": [4, 1]}))
    (tmp_path / "timeline_tasks.csv").write_text("client,base_version,start_s,end_s,outcome\n")
    (tmp_path / "offline_periods.csv").write_text("client,offline_from_s,offline_until_s\n")
    rows = ["client,samples_per_s,attempts,participations"] + [f"{c},{10 * c + 0.5},0,0" for c in range(6)]
    (tmp_path / "clients.csv").write_text("\n".join(rows) + "\n")
    assert recorded_speeds(tmp_path) == {1: 10.5, 4: 40.5}


def test_participation_figure_plots_the_values_of_the_per_client_computation(tmp_path):
    """30,000 clients (a thinned scatter): every bar is the share a per-group loop over clients gives,
    and every dot drawn is a client's own (spread speed, delivered updates)."""
    rng = np.random.default_rng(1)
    n = 30_000
    attempts = rng.integers(0, 6, n)
    delivered = rng.binomial(attempts, 0.6)
    offline = attempts - delivered
    table = pd.DataFrame({
        "client": np.arange(n), "samples_per_s": rng.lognormal(4, 0.8, n), "attempts": attempts,
        "participations": delivered, "failed_offline": offline, "failed_battery": 0, "failed_deadline": 0,
        "availability_p": rng.uniform(0.1, 1.0, n),
    })  # fmt: skip
    table.to_csv(tmp_path / "clients.csv", index=False)
    fig = draw_participation(tmp_path)
    left, right = fig.axes[0], fig.axes[1]
    speed = pd.read_csv(tmp_path / "clients.csv")["samples_per_s"].to_numpy()
    groups = np.array_split(np.argsort(speed, kind="stable"), 5)
    delivered_share = [delivered[g].sum() / attempts[g].sum() for g in groups]  # the loop the group-by replaced
    heights = [patch.get_height() for patch in right.patches]
    assert heights[:5] == pytest.approx(delivered_share, rel=1e-12)
    assert heights[5:10] == pytest.approx([offline[g].sum() / attempts[g].sum() for g in groups], rel=1e-12)
    dots = left.collections[0].get_offsets()
    shown = spread_ties(speed)
    every = set(zip(shown.tolist(), delivered.astype(float).tolist()))
    assert len(dots) < n and {tuple(d) for d in np.asarray(dots).tolist()} <= every
    assert set(np.asarray(dots)[:, 1]) == set(delivered.astype(float))
