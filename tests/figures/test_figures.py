"""The files a run writes for its figures, and the figures drawn from them: every written file is
documented, the timeline files are complete whatever output.events says, and the figures show what
they claim (axis limits, labels, --window / --clients read back from the figure objects)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from conftest import events, run, table
from matplotlib.collections import PolyCollection

from asyncfl.cli import main
from asyncfl.figures.accuracy import draw_accuracy
from asyncfl.figures.client_accuracy import draw_client_accuracy
from asyncfl.figures.common import accuracy_limits
from asyncfl.figures.participation import draw_participation
from asyncfl.figures.timeline import draw_timeline
from asyncfl.figures.timeline_files import timeline_clients
from asyncfl.output.reading import read_csv
from asyncfl.output.run_directory import TIMELINE_BINS, timeline_sample

RUN_FILES_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "run-files.md"
SYNC = dict(
    data={"dataset": "digits", "clients": 40},
    model={"name": "logreg"},
    training={"local_steps": 2},
    population={
        "compute": {"samples_per_s": {"dist": "lognormal", "median": 40, "sigma": 0.8}},
        "availability": {"kind": "markov", "p": {"dist": "uniform", "low": 0.3, "high": 0.9}, "mean_cycle_s": 30},
    },
    server={"mode": "sync", "deadline_s": 6, "late_updates": "next_round", "clients_per_round": 20},
    algorithm={"name": "fedavg"},
    stop={"rounds": 12},
    checkpoint={"every_rounds": 5, "min_wall_s": 0},
)
K_ASYNC = {
    **SYNC,
    "server": {"mode": "k_async", "k": 3, "concurrency": 8, "max_staleness": 3},
    "algorithm": {"name": "fedbuff"},
    "stop": {"rounds": 20},
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A sync and a K-async run with figures on, and the same two with ``events: none`` and ``sample``."""
    base = tmp_path_factory.mktemp("figures")
    out = {}
    for mode, sections in (("sync", SYNC), ("k_async", K_ASYNC)):
        out[mode] = run(base, mode, **sections)
        out[f"{mode}_none"] = run(base, f"{mode}_none", **sections, output={"events": "none", "plot": False})
    sample = {"events": "sample", "event_sample": 5, "plot": False}
    out["k_async_sample"] = run(base, "sample", **K_ASYNC, output=sample)
    return out


def documented_files() -> set[str]:
    """Every file name in the first column of the tables of docs/reference/run-files.md's "What a run
    writes" and "What a sweep writes"."""
    text = RUN_FILES_PAGE.read_text(encoding="utf-8")
    sections = [
        text.split(f"## {title}", 1)[1].split("\n## ", 1)[0] for title in ("What a run writes", "What a sweep writes")
    ]
    cells = [line.split("|")[1] for section in sections for line in section.splitlines() if line.startswith("| `")]
    return {name for cell in cells for name in re.findall(r"`([^`]+)`", cell)}


@pytest.mark.slow
def test_every_file_a_run_or_a_sweep_writes_is_documented(runs, tmp_path, capsys):
    written = {p.name for d in runs.values() for p in d.iterdir()}
    sweep_file = tmp_path / "study.yaml"
    sweep_file.write_text(
        json.dumps({
            **{k: v for k, v in SYNC.items() if k != "checkpoint"},
            "timing_only": True, "stop": {"rounds": 3}, "seeds": [0], "targets": [0.5],
            "compare": [{"name": "a"}, {"name": "b", "set": {"server.deadline_s": 3}}],
            "output": {"dir": str(tmp_path / "runs")},
        })
    )  # fmt: skip
    assert main([str(sweep_file), "--quiet"]) == 0  # the command, in this process
    sweep_dir = Path(capsys.readouterr().out.strip().splitlines()[-1])
    written |= {p.name for p in sweep_dir.rglob("*") if p.is_file()}
    for expected in ("updates.csv", "timeline_tasks.csv", "offline_periods.csv", "timeline.png", "study.yaml"):
        assert expected in written
    assert "checkpoint.pt" not in written  # a run that ended drops it (see test below)
    algorithms = Path(__file__).resolve().parents[2] / "asyncfl" / "algorithms"
    for source in algorithms.glob("*.py"):  # tables a strategy writes at the end (extra_outputs)
        text = source.read_text(encoding="utf-8")
        if "def extra_outputs" in text:
            written |= set(re.findall(r'"(\w+\.csv)"', text.split("def extra_outputs", 1)[1]))
    assert {"fedar_exclusions.csv", "fl_fdms_similarity.csv"} <= written
    undocumented = written - documented_files()
    assert not undocumented, f"write these into docs/reference/run-files.md: {sorted(undocumented)}"


@pytest.mark.slow
def test_an_ended_run_drops_its_checkpoint(runs):
    assert json.loads((runs["sync"] / "summary.json").read_text())["status"] == "finished"
    assert not any((d / "checkpoint.pt").exists() for d in runs.values())


def test_offline_periods_csv_cannot_be_mistaken_for_an_availability_trace(runs):
    from asyncfl.sim.tracefiles import read_rows

    header = (runs["sync"] / "offline_periods.csv").read_text().splitlines()[0]
    assert header == "client,offline_from_s,offline_until_s"
    assert not (runs["sync"] / "availability.csv").exists()
    with pytest.raises(Exception, match="expected the header client,start_s,end_s"):
        read_rows(runs["sync"] / "offline_periods.csv", ("client", "start_s", "end_s"), "trace")


@pytest.mark.parametrize("mode", ["sync", "k_async"])
def test_timeline_files_agree_with_events_jsonl_whatever_the_events_mode(runs, mode):
    """timeline_tasks.csv holds every task of the timeline clients, phase by phase as events.jsonl
    logs them, and is the same file with events: none (and sample) as with events: all."""
    full = runs[mode]
    chosen = timeline_clients(full)
    speeds = [float(r["samples_per_s"]) for r in table(full / "clients.csv")]
    sample = timeline_sample(speeds)  # spread over speeds, and the first worker of each range of speeds
    assert len(sample) == 32 and set(sample) <= set(chosen) and len(chosen) <= 32 + TIMELINE_BINS
    by_speed = sorted(range(40), key=lambda c: (speeds[c], c))
    assert by_speed[0] in chosen and by_speed[-1] in chosen  # the slowest and the fastest are on it
    tasks = table(full / "timeline_tasks.csv")  # times rounded to 6 decimals, like every CSV
    done = [t for t in tasks if t["outcome"] != "running"]
    ends = [e for e in events(full) if e["client"] in chosen and e["event"] in ("arrive", "fail")]
    assert [(int(t["client"]), float(t["end_s"])) for t in done] == [(e["client"], round(e["t"], 6)) for e in ends]
    assert [t["outcome"] for t in done] == ["delivered" if e["event"] == "arrive" else e["reason"] for e in ends]
    running = [t for t in tasks if t["outcome"] == "running"]
    assert all(float(t["end_s"]) == float(table(full / "rounds.csv")[-1]["time"]) for t in running)
    for phase in ("download", "compute", "upload"):
        logged = sorted(
            (e["client"], round(e["t"], 6)) for e in events(full) if e["client"] in chosen and e["event"] == phase
        )
        assert sorted((int(t["client"]), float(t[f"{phase}_s"])) for t in tasks if t[f"{phase}_s"]) == logged
    for other in [f"{mode}_none"] + (["k_async_sample"] if mode == "k_async" else []):
        for name in ("timeline_tasks.csv", "offline_periods.csv", "updates.csv"):
            assert (runs[other] / name).read_bytes() == (full / name).read_bytes(), (other, name)


def test_updates_csv_holds_every_aggregated_update(runs):
    for mode in ("sync", "k_async"):
        updates = table(runs[mode] / "updates.csv")
        rounds = table(runs[mode] / "rounds.csv")
        assert len(updates) == sum(int(r["received"]) for r in rounds)
        for u in updates:
            assert int(u["round"]) - 1 - int(u["base_version"]) == int(u["staleness"]) >= 0
        arrivals = {(e["client"], e["base_version"]) for e in events(runs[mode]) if e["event"] == "arrive"}
        assert {(int(u["client"]), int(u["base_version"])) for u in updates} <= arrivals
    k_async = table(runs["k_async"] / "updates.csv")
    assert max(int(u["staleness"]) for u in k_async) == 3  # server.max_staleness
    assert [int(u["round"]) for u in k_async] == sorted(i // 3 + 1 for i in range(60))  # K = 3, 20 versions


def test_accuracy_axis_fits_the_data_and_the_title_names_the_algorithm(runs):
    assert accuracy_limits([0.5, 0.7]) == pytest.approx((0.48, 0.72))  # pad max(5 % of 0.2, 0.02) = 0.02
    assert accuracy_limits([0.1, 0.9]) == pytest.approx((0.06, 0.94))  # 5 % of 0.8 = 0.04
    assert accuracy_limits([0.99, 1.0]) == pytest.approx((0.97, 1.0))  # never above 1
    rows = [r for r in read_csv(runs["k_async"] / "metrics.csv") if r["test_accuracy"]]
    accuracy = [float(r["test_accuracy"]) for r in rows]
    fig = draw_accuracy(runs["k_async"])
    for ax in fig.axes:
        assert ax.get_ylim() == pytest.approx(accuracy_limits(accuracy))
        assert ax.get_ylim() != (0, 1)
    assert fig._suptitle.get_text() == "scenario, seed 0: fedbuff (k_async, K=3)"
    plt.close(fig)


def _rows_and_window(fig) -> tuple[list[str], tuple[float, float]]:
    ax = fig.axes[0]
    return [t.get_text().split(" (")[0] for t in ax.get_yticklabels()], ax.get_xlim()


def test_timeline_window_and_clients_change_what_is_drawn(runs):
    sync = runs["sync"]
    recorded = timeline_clients(sync)
    fig = draw_timeline(sync)
    labels, window = _rows_and_window(fig)
    assert len(labels) == 16 and {int(x.split()[1]) for x in labels} <= set(recorded)
    rounds = table(sync / "rounds.csv")
    assert window == (0, pytest.approx(max(float(r["time"]) for r in rounds), abs=1e-3))  # < 30 aggregations
    plt.close(fig)
    fig = draw_timeline(sync, window=(10.0, 25.0), clients=[recorded[3], recorded[0]])
    labels, window = _rows_and_window(fig)
    assert window == (10.0, 25.0) and set(labels) == {f"client {recorded[3]}", f"client {recorded[0]}"}
    bars = [p.get_extents() for c in fig.axes[0].collections if isinstance(c, PolyCollection) for p in c.get_paths()]
    assert bars and all(b.x1 > 10.0 - 1e-9 and b.x0 < 25.0 + 1e-9 for b in bars)  # nothing outside the window
    plt.close(fig)
    fig = draw_timeline(sync, clients=5)
    assert len(_rows_and_window(fig)[0]) == 5
    plt.close(fig)


@pytest.mark.slow
def test_plot_command_takes_window_and_clients_and_rejects_bad_values(runs, capsys):
    sync = str(runs["sync"])
    recorded = len(timeline_clients(runs["sync"]))  # 32 spread over speeds, and workers that joined them
    assert main(["plot", sync, "--window", "5:", "--clients", "4"]) == 0
    assert "timeline_5-end_4clients.png" in capsys.readouterr().out
    for args, message in (
        (["--window", "9:3"], "--window 9:3: expected START:END in virtual seconds"),
        (["--window", "abc"], "--window abc: expected START:END"),
        (["--clients", "0"], "--clients 0: expected a count"),
        (["--clients", str(recorded + 1)], f"--clients {recorded + 1}: this run recorded the tasks of {recorded}"),
        (["--clients", "100000"], f"recorded the tasks of {recorded} clients"),
        (["--clients", "1,2,99"], "client(s) 99 are not on this run's timeline"),
        (["--window", "1e6:"], "--window 1e+06:: the run's records end at"),
    ):
        assert main(["plot", sync, *args]) == 2
        assert message in capsys.readouterr().err


@pytest.mark.slow
def test_an_old_run_directory_says_what_it_lacks(runs, tmp_path, capsys):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(runs["k_async"], old)
    for name in ("timeline_tasks.csv", "offline_periods.csv", "updates.csv"):
        (old / name).unlink()
    capsys.readouterr()
    assert main(["plot", str(old)]) == 0
    out, err = capsys.readouterr()
    assert "participation.png" in out and "timeline.png" not in out
    assert "has no timeline_tasks.csv / offline_periods.csv" in err
    assert "has no updates.csv" in err and "run its scenario again" in err


@pytest.mark.parametrize("sigma", [0.8, 1.5])
def test_participation_tick_labels_do_not_overlap(tmp_path, sigma):
    """10^5 clients with log-normal speeds over 3 to 6 decades (the old labels overlapped on both axes)."""
    rng = np.random.default_rng(0)
    n = 100_000
    attempts = rng.integers(1, 11, n)
    delivered = attempts // 2
    pd.DataFrame({
        "client": np.arange(n), "samples_per_s": np.round(60 * np.exp(sigma * rng.standard_normal(n)), 6),
        "availability_p": rng.uniform(0.1, 1, n), "attempts": attempts, "participations": delivered,
        "failed_offline": attempts - delivered, "failed_battery": 0, "failed_deadline": 0,
    }).to_csv(tmp_path / "clients.csv", index=False)  # fmt: skip
    fig = draw_participation(tmp_path)
    fig.canvas.draw()
    left, right = fig.axes[:2]  # then the colour bar
    assert len(right.get_xticklabels()) == 5  # speed quintiles
    assert all("20,000 clients" in t.get_text() for t in right.get_xticklabels())
    for ax in (left, right):
        low, high = ax.get_xlim()
        shown = [t for t in ax.get_xticklabels() if t.get_text() and low <= t.get_position()[0] <= high]
        boxes = [t.get_window_extent() for t in shown]
        assert len(boxes) >= 3 and all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    plt.close(fig)


def test_client_accuracy_is_drawn_in_fractions_like_every_other_accuracy(runs):
    fig = draw_client_accuracy(runs["sync"])
    ax = fig.axes[0]
    assert ax.get_xlim() == (-0.03, 1.03)  # 0 to 1 with a margin: a mean of 1.0 is drawn inside the frame
    accuracies = [float(r["accuracy"]) for r in table(runs["sync"] / "clients.csv")]
    mean_line = ax.get_lines()[0]
    assert mean_line.get_xdata()[0] == pytest.approx(sum(accuracies) / len(accuracies), abs=1e-6)
    assert sum(p.get_height() for p in ax.patches) == len(accuracies)
    plt.close(fig)


def test_comparison_axis_fits_the_bands_and_targets(tmp_path, monkeypatch):
    from asyncfl.figures import compare as figures

    closed = []  # the figure, caught as it is saved
    monkeypatch.setattr(figures.Figure, "savefig", lambda fig, *args, **kwargs: closed.append(fig))
    rows = [
        {"axis": "time", "variant": "a", "x": 0.0, "accuracy_mean": 0.5, "accuracy_std": 0.1, "seeds": 2},
        {"axis": "time", "variant": "a", "x": 10.0, "accuracy_mean": 0.7, "accuracy_std": 0.0, "seeds": 2},
    ]
    figures.plot_comparison(pd.DataFrame(rows), "time", tmp_path / "c.png", targets=[0.9])
    # band 0.4 .. 0.7 and the target 0.9: range 0.5, padded by 5 % of it (0.025) each side
    assert closed[0].axes[0].get_ylim() == pytest.approx((0.375, 0.925))


def test_comparison_tells_eleven_variants_apart(tmp_path, monkeypatch):
    """Matplotlib's cycle has ten colours: the 11th variant (a study of issue 21 has 11) reuses C0, so it is
    dashed; the first ten stay solid."""
    from asyncfl.figures import compare as figures

    closed = []
    monkeypatch.setattr(figures.Figure, "savefig", lambda fig, *args, **kwargs: closed.append(fig))
    rows = [
        {"axis": "time", "variant": f"v{i}", "x": x, "accuracy_mean": 0.5, "accuracy_std": 0.0, "seeds": 1}
        for i in range(11)
        for x in (0.0, 10.0)
    ]
    figures.plot_comparison(pd.DataFrame(rows), "time", tmp_path / "c.png")
    lines = {line.get_label(): line for line in closed[0].axes[0].get_lines()}
    styles = {i: (lines[f"v{i} (1 seed)"].get_color(), lines[f"v{i} (1 seed)"].get_linestyle()) for i in range(11)}
    assert styles[0] == ("C0", "-") and styles[9] == ("C9", "-")
    assert styles[10] == ("C0", "--")  # same colour as v0, told apart by the dashes


@pytest.mark.parametrize("seed", range(5))
def test_timeline_sample_ranks_like_sorting_by_speed_then_id(seed):
    """The sample is drawn from a stable argsort (in C); it picks what sorting (speed, id) picks,
    ties included (tiers give many equal speeds), and falls back to that sort on non-finite speeds."""
    rng = np.random.default_rng(seed)
    for n in (1, 5, 32, 33, 1000):
        speeds = rng.choice([4.0, 40.0, 120.0], size=n).tolist() if seed % 2 else rng.lognormal(size=n).tolist()
        ranked = sorted(range(n), key=lambda c: (speeds[c], c))
        if n > 32:
            ranked = [ranked[round(i * (n - 1) / 31)] for i in range(32)]
        assert timeline_sample(speeds) == sorted(ranked)
    assert timeline_sample([2.0, math.inf, 1.0]) == [0, 1, 2]
