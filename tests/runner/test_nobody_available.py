"""A population with nobody able to work (issue 29, item 1): a round in which every asked client fails at
its start takes no time, so the sync server used to start the next one at the same instant forever (27,758
rounds at t = 0 in 20 s with ``stop.virtual_time_s``).  Now it waits for the next moment something can change
(a trace's next row, a battery charged, a busy client done), or, when nothing ever can, ends (or sits idle up
to the time limit) with a warning in summary.json and on stderr.  The K-async server says so too.

Every run is timing-only over 4 clients: ``stop.rounds: 1000`` bounds a run that would spin, so a failure
before the fix is a wrong answer, not a hang."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import table

from asyncfl.cli import main

CLIENTS = 4


def _trace(tmp_path: Path, start: float, end: float) -> Path:
    """Every client online during [start, end) only."""
    path = tmp_path / "online.csv"
    path.write_text("client,start_s,end_s\n" + "".join(f"{c},{start},{end}\n" for c in range(CLIENTS)))
    return path


def _run(tmp_path: Path, capsys, population: dict, server: dict, stop: dict) -> tuple[dict, list[dict], str]:
    spec = dict(
        name="nobody",
        data={"dataset": "digits", "clients": CLIENTS},
        model={"name": "logreg"},
        timing_only=True,
        population=population,
        server=server,
        stop={"rounds": 1000, "virtual_time_s": None, **stop},
        output={"plot": False},
    )
    path = tmp_path / "nobody.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert main([str(path), "--quiet", "--out", str(tmp_path / "run")]) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    return summary, table(tmp_path / "run" / "rounds.csv"), capsys.readouterr().err


SYNC = {"mode": "sync", "deadline_s": 10.0}
K_ASYNC = {"mode": "k_async", "k": 2, "concurrency": 3}
FLAT = {"capacity_j": 10.0, "initial_level": 0.05, "min_level": 0.1}  # below min_level, never charged


def test_sync_population_offline_for_good_sits_idle_to_the_time_limit_with_a_warning(tmp_path, capsys):
    """Online only in [0, 0.001): round 0's tasks start and fail at 0.001 (offline mid-download); round 1
    starts there and every task fails at once.  Nothing can ever change: idle up to 500 s, then the end."""
    population = {"availability": {"kind": "trace", "file": str(_trace(tmp_path, 0, 0.001))}}
    summary, rounds, err = _run(tmp_path, capsys, population, SYNC, {"virtual_time_s": 500})
    assert (summary["status"], summary["virtual_time_s"], summary["rounds"]) == ("finished", 500.0, 2)
    assert [(r["started"], r["time"], r["failed_offline"]) for r in rounds] == [
        ("0", "0.001", "4"),
        ("0.001",) * 2 + ("4",),
    ]
    stalled, nothing = summary["warnings"]
    assert stalled.startswith("from 0.001 virtual s on, none of the 4 clients could ever take work again")
    assert "the run sat idle from there to 500 s" in stalled
    assert nothing.startswith("no update was aggregated in the whole run (2 aggregation(s), 500.0 virtual s")
    assert f"warning: {stalled}" in err


def test_sync_population_offline_for_good_without_a_time_limit_ends_there(tmp_path, capsys):
    population = {"availability": {"kind": "trace", "file": str(_trace(tmp_path, 0, 0.001))}}
    summary, rounds, err = _run(tmp_path, capsys, population, SYNC, {})
    assert (summary["status"], summary["virtual_time_s"], summary["rounds"]) == ("finished", 0.001, 2)
    assert "could ever take work again" in summary["warnings"][0] and "the run ended there" in summary["warnings"][0]


def test_sync_every_battery_flat_without_charging_sits_idle_to_the_time_limit(tmp_path, capsys):
    summary, rounds, err = _run(tmp_path, capsys, {"battery": FLAT}, SYNC, {"virtual_time_s": 500})
    assert (summary["status"], summary["virtual_time_s"], summary["rounds"]) == ("finished", 500.0, 1)
    assert [(r["time"], r["failed_battery"]) for r in rounds] == [("0", "4")]
    assert summary["warnings"][0].startswith("from 0 virtual s on, none of the 4 clients could ever take work")


def test_sync_population_coming_online_later_works_from_that_moment(tmp_path, capsys):
    """Everybody offline until t = 1000 (the trace's first row): round 0 fails at 0, round 1 starts at 1000
    and its tasks are delivered; no warning."""
    population = {"availability": {"kind": "trace", "file": str(_trace(tmp_path, 1000, 5000))}}
    summary, rounds, err = _run(tmp_path, capsys, population, SYNC, {"virtual_time_s": 1100})
    assert (summary["status"], summary["virtual_time_s"], summary["warnings"]) == ("finished", 1100.0, [])
    assert [(r["started"], r["time"], r["failed_offline"]) for r in rounds[:1]] == [("0", "0", "4")]
    assert float(rounds[1]["started"]) == 1000 and int(rounds[1]["received"]) == CLIENTS
    assert all(float(r["started"]) >= 1000 for r in rounds[1:]) and len(rounds) > 2
    assert summary["updates"] >= CLIENTS * (len(rounds) - 2)  # every round but the first (and the cut last) full


def test_sync_flat_batteries_that_charge_wait_for_the_charge(tmp_path, capsys):
    """Plugged in for good at 0.01 W: a battery at 0.5 J needs 0.5 J more to reach min_level (1 J), so
    round 1 starts at 0.5 / 0.01 = 50 s, when every battery is ready (the same draw-free levels)."""
    battery = {**FLAT, "charging": {"period_s": 100.0, "plugged_fraction": 1.0, "charge_w": 0.01}}
    summary, rounds, err = _run(tmp_path, capsys, {"battery": battery}, SYNC, {"virtual_time_s": 60})
    assert summary["status"] == "finished" and summary["virtual_time_s"] == 60.0
    assert float(rounds[0]["time"]) == 0 and float(rounds[1]["started"]) == pytest.approx(50.0)
    assert not any("could ever" in w for w in summary["warnings"])


@pytest.mark.parametrize("stop", [{"virtual_time_s": 500}, {}])
def test_k_async_population_offline_for_good_warns(tmp_path, capsys, stop):
    population = {"availability": {"kind": "trace", "file": str(_trace(tmp_path, 0, 0.001))}}
    summary, rounds, err = _run(tmp_path, capsys, population, K_ASYNC, stop)
    assert summary["status"] == "finished" and summary["virtual_time_s"] == stop.get("virtual_time_s", 0.001)
    assert summary["warnings"][0].startswith("from 0.001 virtual s on, none of the 4 clients could ever take work")


def test_k_async_every_battery_flat_warns(tmp_path, capsys):
    summary, rounds, err = _run(tmp_path, capsys, {"battery": FLAT}, K_ASYNC, {"virtual_time_s": 500})
    assert (summary["status"], summary["virtual_time_s"], summary["rounds"]) == ("finished", 500.0, 0)
    assert summary["warnings"][0].startswith("from 0 virtual s on, none of the 4 clients could ever take work")
