"""What the per-run figures say (issue 19, item 15): titles name the scenario (or study and variant)
and seed, time_breakdown.png splits thrown-away computing from kept, staleness.png is left out when
every update is fresh, updates_vs_time.png puts both panels on the clock, client_accuracy.png shows
the test split sizes that clients.csv now holds, and ``plot --window`` writes beside timeline.png."""

from __future__ import annotations

import shutil

import matplotlib.pyplot as plt
import pytest
from conftest import run, table
from PIL import Image

from asyncfl.cli import main
from asyncfl.figures import render_run_figures
from asyncfl.figures.client_accuracy import draw_client_accuracy
from asyncfl.figures.time_breakdown import draw_time_breakdown

TRANSFER = 0.5026  # 2,600 bytes over 8 Mbit/s + 0.5 s latency (see tests/sim/test_timing.py)
COMPUTE = (0.16, 0.32, 1.6)  # 16 samples at 100, 50 and 10 samples/s


def _base(device_trace, rounds: int, **server) -> dict:
    trace = device_trace([(0, 100, 8, 8, 0.5), (1, 50, 8, 8, 0.5), (2, 10, 8, 8, 0.5)])
    return dict(
        data={"dataset": "digits", "clients": 3},
        model={"name": "logreg"},
        training={"local_steps": 2, "batch_size": 8, "lr": 0.1},
        population={"device_trace": str(trace), "network": {"latency_s": 0.5}},
        server={"mode": "sync", **server},
        eval={"per_client": False},
        stop={"rounds": rounds},
        timing_only=True,
        output={"plot": False},
    )


@pytest.fixture
def cut_off(tmp_path, device_trace):
    """Deadline 2 s, late updates dropped: client 2 (compute 1.6 s from t0 + 0.5026) is cut at
    t0 + 2 in every one of 3 rounds, each round 2 s long."""
    return run(tmp_path, "cut_off", **_base(device_trace, 3, deadline_s=2.0, late_updates="drop"))


def test_lost_compute_per_client_and_the_breakdown_split_match_hand_computed_numbers(cut_off):
    clients = table(cut_off / "clients.csv")
    lost = [float(c["lost_compute_s"]) for c in clients]
    computed = [float(c["compute_s"]) for c in clients]
    assert lost == pytest.approx([0.0, 0.0, 3 * (2.0 - TRANSFER)], abs=1e-5)  # 3 rounds x 1.4974 s thrown away
    assert computed == pytest.approx([3 * COMPUTE[0], 3 * COMPUTE[1], 3 * (2.0 - TRANSFER)], abs=1e-5)
    rounds = table(cut_off / "rounds.csv")
    assert sum(lost) == pytest.approx(sum(float(r["lost_compute_s"]) for r in rounds), abs=1e-5)
    fig = draw_time_breakdown(cut_off)
    ax = fig.axes[0]
    shares = {bars.get_label(): [b.get_height() for b in bars] for bars in ax.containers}
    length = 6.0  # 3 rounds of 2 s; one speed group per client, slowest (client 2) first
    kept = shares["computing, kept (update delivered or still running)"]
    thrown = shares["computing, thrown away (task failed)"]
    assert kept == pytest.approx([0.0, 3 * COMPUTE[1] / length, 3 * COMPUTE[0] / length], abs=1e-5)
    assert thrown == pytest.approx([3 * (2.0 - TRANSFER) / length, 0.0, 0.0], abs=1e-5)
    plt.close(fig)


def test_staleness_figure_is_left_out_when_every_update_is_fresh(cut_off, tmp_path, device_trace):
    written = {p.name for p in render_run_figures(cut_off)}
    assert "staleness.png" not in written and "timeline.png" in written
    assert {int(u["staleness"]) for u in table(cut_off / "updates.csv")} == {0}
    stale = run(tmp_path, "stale", **_base(device_trace, 6, deadline_s=2.0, late_updates="next_round"))
    assert max(int(u["staleness"]) for u in table(stale / "updates.csv")) == 1  # client 2 arrives a round late
    assert "staleness.png" in {p.name for p in render_run_figures(stale)}


def test_updates_vs_time_puts_both_panels_on_the_clock_without_a_mass_of_markers(tmp_path, device_trace):
    long = run(tmp_path, "long", **_base(device_trace, 250, deadline_s=2.0, late_updates="drop"))
    from asyncfl.figures.accuracy import draw_timing

    fig = draw_timing(long)
    left, right = fig.axes
    times = [float(r["time"]) for r in table(long / "rounds.csv")]
    assert list(right.get_lines()[0].get_xdata()) == pytest.approx(times)  # clock time, not round numbers
    assert left.get_xlim() == right.get_xlim()
    assert all(line.get_marker() in (None, "None", "") for ax in (left, right) for line in ax.get_lines())
    assert "time" in right.get_xlabel()
    plt.close(fig)


@pytest.mark.slow
def test_titles_name_scenario_variant_and_seed_inside_a_sweep(drawn_sweep):
    """Every run of a study used to be titled '<study>: fedavg (sync)', and a single run by its
    timestamp directory.  Each PNG also carries its run's title in its metadata."""
    sweep = drawn_sweep  # the study "drawn": variants a and b, seeds 0 and 1 (tests/conftest.py)
    titles = {}
    for variant in ("a", "b"):
        for seed in (0, 1):
            png = sweep / variant / f"seed{seed}" / "updates_vs_time.png"
            titles[variant, seed] = Image.open(png).text["Title"]
    assert titles == {(v, s): f"drawn / {v}, seed {s}: fedavg (sync)" for v in ("a", "b") for s in (0, 1)}


def test_a_single_run_is_titled_by_its_scenario_not_its_directory(cut_off, tmp_path):
    timestamped = tmp_path / "20261123-184146"
    shutil.copytree(cut_off, timestamped)
    render_run_figures(timestamped)
    title = Image.open(timestamped / "updates_vs_time.png").text["Title"]
    assert title == "scenario, seed 0: fedavg (sync)"


@pytest.mark.slow
def test_plot_window_writes_beside_timeline_png(cut_off, capsys):
    render_run_figures(cut_off)
    default = (cut_off / "timeline.png").read_bytes()
    assert main(["plot", str(cut_off), "--window", "1:4"]) == 0
    out = capsys.readouterr().out
    assert str(cut_off / "timeline_1-4.png") in out and "timeline.png" not in out
    assert (cut_off / "timeline.png").read_bytes() == default
    assert main(["plot", str(cut_off), "--window", "2:", "--clients", "2"]) == 0
    assert (cut_off / "timeline_2-end_2clients.png").is_file()


def test_clients_csv_has_each_clients_test_split_size(tmp_path):
    """accuracy is hits / test_samples: every accuracy times its client's test_samples is a whole number."""
    done = run(
        tmp_path, "learn", data={"dataset": "digits", "clients": 12}, model={"name": "logreg"},
        stop={"rounds": 2}, output={"plot": False},
    )  # fmt: skip
    clients = table(done / "clients.csv")
    sizes = [int(c["test_samples"]) for c in clients]
    assert all(n > 0 for n in sizes)
    for c, n in zip(clients, sizes):
        hits = float(c["accuracy"]) * n
        assert hits == pytest.approx(round(hits), abs=1e-4)
    fig = draw_client_accuracy(done)
    left, right = fig.axes
    assert left.get_xlim()[1] > 1.0  # a mean of 1.0 is drawn inside the frame
    assert sorted(right.collections[0].get_offsets()[:, 1]) == pytest.approx(
        sorted(float(c["accuracy"]) for c in clients)
    )
    plt.close(fig)
