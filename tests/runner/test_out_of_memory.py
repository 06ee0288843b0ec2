"""Running out of memory (issue 29, item 12): wherever a MemoryError happens (simulation, output files,
figures) the run ends with one message and exit status 2, no traceback, every file it wrote whole, and
summary.json naming the stage that failed; and the run's figures are drawn from clients.csv's columns
as the run holds them, without reading the file back (at 10^7 clients that took gigabytes)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from conftest import table

import asyncfl.figures.common as figures_common
import asyncfl.figures.participation as participation
from asyncfl.cli import main
from asyncfl.output import writing
from asyncfl.runner.simulation import Simulation

SCENARIO = {
    "name": "memory",
    "seed": 3,
    "timing_only": True,
    "data": {"dataset": "digits", "clients": 40},
    "model": {"name": "logreg"},
    "population": {"availability": {"kind": "bernoulli", "p": 0.7}},
    "server": {"mode": "sync", "clients_per_round": 5, "deadline_s": 30},
    "stop": {"rounds": 4},
    "eval": {"per_client": False},
}
LOGS = ("metrics.csv", "rounds.csv", "updates.csv", "timeline_tasks.csv", "offline_periods.csv", "clients.csv")


def _run(tmp_path: Path, name: str, capsys, plot: bool = True) -> tuple[int, Path, str]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({**SCENARIO, "output": {"plot": plot}}))
    out = tmp_path / name
    code = main([str(path), "--quiet", "--out", str(out)])
    return code, out, capsys.readouterr().err


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def _rows(path: Path) -> list[dict]:
    """A CSV file's rows without its wall-clock columns (the only ones two runs may differ in)."""
    return [{k: v for k, v in row.items() if "wall" not in k} for row in table(path)]


def _no_leftovers(run_dir: Path) -> None:
    assert not [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp")]


def test_out_of_memory_in_the_figures_keeps_every_file_and_names_the_stage(tmp_path, capsys, monkeypatch):
    code, plain, _ = _run(tmp_path, "plain", capsys, plot=False)
    assert code == 0

    def no_memory(*_args, **_kwargs):
        raise MemoryError("Unable to allocate 1.27 GiB for an array with shape (17, 10000000)")

    monkeypatch.setattr(participation, "draw_participation", no_memory)
    code, failed, err = _run(tmp_path, "failed", capsys)
    assert code == 2
    assert "Traceback" not in err and err.count("error:") == 1
    assert f"out of memory in the figures stage of the run in {failed}" in err and "output.plot: false" in err
    summary = _summary(failed)
    assert summary["status"] == "finished" and summary["failed_stage"] == "figures"
    assert summary["error"] == "out of memory in the figures stage" and "figures_seconds" not in summary
    assert summary["rounds"] == 4 == _summary(plain)["rounds"]
    for name in LOGS:  # what the run without figures wrote
        assert _rows(failed / name) == _rows(plain / name), name
    assert not list(failed.glob("*.png"))  # every figure is drawn before any is written: none half-done
    _no_leftovers(failed)


def test_out_of_memory_writing_clients_csv_leaves_no_partial_file_and_the_rest_written(tmp_path, capsys, monkeypatch):
    real = writing._group_texts

    def no_memory(group, *args):  # clients.csv's counters only (Sparse columns): offline_periods.csv is written
        if isinstance(group[0], writing.Sparse):
            raise MemoryError
        return real(group, *args)

    monkeypatch.setattr(writing, "_group_texts", no_memory)  # after the header line is written
    code, failed, err = _run(tmp_path, "failed", capsys)
    assert code == 2 and "Traceback" not in err
    assert "out of memory in the output stage" in err
    assert not (failed / "clients.csv").exists()
    _no_leftovers(failed)
    summary = _summary(failed)
    assert summary["failed_stage"] == "output" and summary["status"] == "finished"
    assert summary["timeline_clients"]  # summary.json, written after clients.csv, is whole
    assert not list(failed.glob("*.png"))  # no figure is tried once memory ran short
    assert (failed / "offline_periods.csv").is_file() and len((failed / "rounds.csv").read_text().splitlines()) == 5


def test_out_of_memory_in_the_simulation_writes_what_has_run(tmp_path, capsys, monkeypatch):
    close_round = Simulation._close_round
    closed = []

    def second_round_fails(self, info):
        closed.append(info.round)
        if len(closed) == 2:
            raise MemoryError
        return close_round(self, info)

    monkeypatch.setattr(Simulation, "_close_round", second_round_fails)
    code, failed, err = _run(tmp_path, "failed", capsys)
    assert code == 2 and "Traceback" not in err
    assert "out of memory in the simulation stage" in err
    summary = _summary(failed)
    assert summary["failed_stage"] == "simulation" and summary["status"] == "out_of_memory"
    assert summary["rounds"] == 1
    assert len((failed / "rounds.csv").read_text().splitlines()) == 2  # the header and the one round
    assert (failed / "clients.csv").is_file() and len((failed / "clients.csv").read_text().splitlines()) == 41
    _no_leftovers(failed)


def test_a_run_draws_its_figures_from_the_columns_it_holds_not_from_clients_csv(tmp_path, capsys, monkeypatch):
    """The figures a run draws read everything but clients.csv; ``plot`` then reads clients.csv and
    draws the same pictures (the columns are rounded as the file holds them)."""
    read = []
    real_read_table = figures_common.read_table

    def read_table(path, *args, **kwargs):
        read.append(path)
        return real_read_table(path, *args, **kwargs)

    monkeypatch.setattr(figures_common, "read_table", read_table)
    code, done, _ = _run(tmp_path, "done", capsys)
    assert code == 0
    assert read == []  # clients.csv was not read back
    drawn = {p.name: p.read_bytes() for p in done.glob("*.png")}
    assert {"participation.png", "time_breakdown.png", "timeline.png"} <= set(drawn)
    assert main(["plot", str(done)]) == 0
    assert [Path(p).name for p in read] == ["clients.csv"]  # plot reads it, once for every figure
    for name, before in drawn.items():
        assert (done / name).read_bytes() == before, name
