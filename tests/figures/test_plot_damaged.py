"""``plot`` on a damaged run or sweep directory (issue 19, item 7): exit 2, one paragraph naming the
file and the line, no traceback, and no figure redrawn (every PNG keeps its bytes and time), rather
than some figures new and the others stale."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import run

from asyncfl.cli import main

SECTIONS = dict(
    data={"dataset": "digits", "clients": 12},
    model={"name": "logreg"},
    server={"mode": "sync", "deadline_s": 6, "late_updates": "next_round", "clients_per_round": 8},
    population={"availability": {"kind": "markov", "p": 0.7, "mean_cycle_s": 30}},
    stop={"rounds": 4},
)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> Path:
    return run(tmp_path_factory.mktemp("damaged"), **SECTIONS)


def _pictures(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*.png")}


def _append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8", newline="") as handle:
        handle.write(text)


def _last_line_cut(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + ",".join(lines[-1].split(",")[:3]) + "\r\n", encoding="utf-8")


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


def _row_like(path: Path, first: str) -> str:
    """A row with as many fields as the header, ``first`` in the first column and 1 elsewhere."""
    fields = path.read_text(encoding="utf-8").splitlines()[0].count(",")
    return first + ",1" * fields + "\r\n"


def _line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


DAMAGES = {
    "extra field": (
        "timeline_tasks.csv",
        lambda p: _append(p, "9,0,0,,,,0,offline,7\r\n"),
        "fields where the header has 8",
    ),
    "not a number": ("timeline_tasks.csv", lambda p: _append(p, "9,0,0,,abc,,0,offline\r\n"), "compute_s holds 'abc'"),
    "row cut short": ("clients.csv", _last_line_cut, "is empty (a row cut short?)"),
    "text in rounds": ("rounds.csv", lambda p: _append(p, _row_like(p, "x")), "column time holds 'x'"),
    "truncated summary": ("summary.json", _truncate, "summary.json, line"),
    "broken config": ("config.yaml", lambda p: p.write_text("name: [unclosed\n"), "config.yaml, line 2"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_plot_on_a_damaged_run_directory_draws_nothing_and_names_file_and_line(drawn, tmp_path, capsys, damage):
    name, spoil, message = DAMAGES[damage]
    folder = tmp_path / "run"
    shutil.copytree(drawn, folder)
    before = _pictures(folder)
    assert {"timeline.png", "participation.png", "accuracy_vs_time.png"} <= set(before)
    lines = _line_count(folder / name) if name.endswith(".csv") else None
    spoil(folder / name)
    assert main(["plot", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {folder / name}") and message in err and "Traceback" not in err
    if lines is not None and damage != "row cut short":
        assert f"line {lines + 1}:" in err  # the appended row (line 1 is the header)
    assert "No figure was drawn." in err and len(err.strip().splitlines()) == 1
    assert _pictures(folder) == before


@pytest.mark.slow
def test_plot_on_a_sweep_with_one_damaged_run_draws_nothing(drawn_sweep, tmp_path, capsys):
    sweep = tmp_path / "sweep"
    shutil.copytree(drawn_sweep, sweep)
    capsys.readouterr()
    before = _pictures(sweep)
    assert "a/seed0/timeline.png" in before and "b/seed1/updates_vs_time.png" in before
    _append(sweep / "b" / "seed1" / "updates.csv", "1,2\r\n3,4,5,6,7\r\n")
    assert main(["plot", str(sweep)]) == 2
    err = capsys.readouterr().err
    assert f"{sweep / 'b' / 'seed1' / 'updates.csv'}, line" in err and "Traceback" not in err
    assert _pictures(sweep) == before


@pytest.mark.slow
def test_plot_on_a_sweep_lists_every_file_it_writes(drawn_sweep, tmp_path, capsys):
    """Every figure of every run is redrawn, and listed, with the sweep's own files: what is printed is
    exactly what changed on disk."""
    sweep = tmp_path / "sweep"
    shutil.copytree(drawn_sweep, sweep)
    capsys.readouterr()
    before = {p: p.stat().st_mtime_ns for p in sweep.rglob("*") if p.is_file()}
    assert main(["plot", str(sweep)]) == 0
    listed = [Path(line) for line in capsys.readouterr().out.splitlines()]
    changed = {p for p in sweep.rglob("*") if p.is_file() and p.stat().st_mtime_ns != before.get(p)}
    assert len(listed) == len(set(listed)) and set(listed) == changed
    figures = {p.relative_to(sweep).as_posix() for p in listed if p.suffix == ".png"}
    for one in ("a/seed0", "a/seed1", "b/seed0", "b/seed1"):
        assert {f"{one}/timeline.png", f"{one}/updates_vs_time.png"} <= figures
    assert {sweep / "runs.csv", sweep / "comparison.csv"} <= set(listed)
