"""A long study's wall time over the commands that ran it (benchmarks/tools/study_wall_clock.py), which the
paper reproductions and the straggler pages publish."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from asyncfl.errors import ConfigError
from asyncfl.output.lock import writing
from asyncfl.study.compare import STUDY_FILE

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.tools import study_wall_clock as clock_module  # noqa: E402
from benchmarks.tools.study_wall_clock import WALL_FILE, StudyWallClock  # noqa: E402


def test_a_studys_wall_time_sums_its_commands_and_a_stopped_one_keeps_its_last_beat(tmp_path, monkeypatch):
    """A long study runs over sessions: each command's segment is rewritten while it runs (a stop from outside
    keeps its time up to then), the study's wall time is their sum and its load the first command's; a study
    resumed without a record, or with one from before segments, gets no new one, and one refused because another
    command holds the study writes nothing."""
    monkeypatch.setattr(clock_module, "HEARTBEAT_SECONDS", 0.02)
    sweep = tmp_path / "study"
    sweep.mkdir()
    (sweep / STUDY_FILE).write_text("name: x\n")
    first, second = ({"load_1min": x, "cores": "2", "forced": "false"} for x in ("0.20", "1.40"))
    clock = StudyWallClock(sweep, fresh=True, load=first)
    with clock, writing(sweep, "sweep"):  # the sweep holds its folder while it runs
        deadline = time.monotonic() + 30  # the first beat, however busy the machine (no bound on its timing)
        while not (sweep / WALL_FILE).is_file() and time.monotonic() < deadline:
            time.sleep(0.01)
        stopped = json.loads((sweep / WALL_FILE).read_text())  # what a stop from outside would leave
    assert stopped["commands"] == 1 and stopped["segments"][0]["finished"] is False
    assert 0 < stopped["wall_seconds"] <= clock.seconds()
    started = time.perf_counter()
    with StudyWallClock(sweep, fresh=False, load=second):
        pass
    second_command = time.perf_counter() - started
    record = json.loads((sweep / WALL_FILE).read_text())
    segments = record["segments"]
    assert record["commands"] == 2 and [s["finished"] for s in segments] == [True, True]
    assert record["wall_seconds"] == pytest.approx(sum(s["wall_seconds"] for s in segments))
    assert segments[0]["wall_seconds"] >= stopped["wall_seconds"] and record["load"] == first
    assert 0 < segments[1]["wall_seconds"] <= second_command  # its own time, not the study's so far
    held = subprocess.Popen(  # another command running this study: this one (refused by its sweep) writes nothing
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from asyncfl.output.lock import writing\n"
         "with writing(Path(sys.argv[1]), 'sweep'):\n    print('held', flush=True); time.sleep(30)", str(sweep)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert held.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError), StudyWallClock(sweep, fresh=False, load=second):
            with writing(sweep, "sweep"):
                pass
    finally:
        held.kill()
        held.wait()
    assert json.loads((sweep / WALL_FILE).read_text()) == record
    flat = {"wall_seconds": 5.0, "runs": 3, "load": first}  # a command from before segments
    (sweep / WALL_FILE).write_text(json.dumps(flat))
    with StudyWallClock(sweep, fresh=False, load=second):
        pass
    assert json.loads((sweep / WALL_FILE).read_text()) == flat
    (sweep / WALL_FILE).unlink()
    with StudyWallClock(sweep, fresh=False, load=second):
        pass
    assert not (sweep / WALL_FILE).exists()
    (sweep / STUDY_FILE).unlink()  # a fresh sweep not yet made: nowhere to write
    with StudyWallClock(sweep, fresh=True, load=first):
        pass
    assert not (sweep / WALL_FILE).exists()
