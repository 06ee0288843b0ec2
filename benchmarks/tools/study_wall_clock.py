"""A long study's wall time over the commands that ran it (:class:`StudyWallClock`), for the scripts that
publish one (benchmarks/experiments/reproduce_papers.py, straggler_mitigation.py): such a study runs over
sessions, each stopped from outside and resumed, and the time of one command alone would understate it.

    with StudyWallClock(sweep_dir, fresh=resume is None, load=load.fields()) as clock:
        run_sweep(...)
    clock.record()   # {"wall_seconds": sum over commands, "commands": n, "load": the first's, "segments": [...]}
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from asyncfl.errors import ConfigError
from asyncfl.output.lock import holder, writing
from asyncfl.output.writing import write_atomic
from asyncfl.study.compare import STUDY_FILE

WALL_FILE = "wall_seconds.json"  # in the sweep directory, beside study.yaml
HEARTBEAT_SECONDS = 10.0  # how often a running command rewrites its segment: what a stop from outside loses


class StudyWallClock:
    """A study's wall time over the commands that ran it, in ``<sweep>/wall_seconds.json``.

    A long study runs over sessions: each command is one segment (its wall time and the load when it started),
    rewritten every ``HEARTBEAT_SECONDS`` while it runs, so a command stopped from outside (a session's end)
    keeps its time up to its last beat.  The record's ``wall_seconds`` is the sum of the segments (runs a stop
    cut short count, and so do their reruns: it is what the study cost) and its ``load`` the first segment's.  A
    study resumed without a record (its first command predates segments) gets none: part of its time is unknown.
    """

    def __init__(self, sweep_dir: Path, fresh: bool, load: dict[str, str]):
        self.path, self.load = sweep_dir / WALL_FILE, load
        if fresh:
            self.earlier: list[dict] | None = []
        elif self.path.is_file():
            self.earlier = json.loads(self.path.read_text()).get("segments")  # None: from before segments
        else:
            self.earlier = None
        self.started = time.perf_counter()
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._beat_until_stopped, daemon=True)

    def seconds(self) -> float:
        return time.perf_counter() - self.started

    def __enter__(self) -> StudyWallClock:
        self.started = time.perf_counter()
        self._beat.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._beat.join()
        try:  # the sweep has let go of its folder: hold it for the last write, unless another command has it
            with writing(self.path.parent, "sweep"):
                self.write(finished=exc[0] is None)
        except (ConfigError, FileNotFoundError):
            pass

    def _beat_until_stopped(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            if holder(self.path.parent) == f"PID {os.getpid()}":  # only while this command's sweep holds it
                self.write(finished=False)

    def write(self, finished: bool) -> None:
        if self.earlier is None or not (self.path.parent / STUDY_FILE).is_file():
            return
        segment = {"wall_seconds": self.seconds(), "load": self.load, "finished": finished}
        segments = [*self.earlier, segment]
        record = {"wall_seconds": sum(s["wall_seconds"] for s in segments), "commands": len(segments),
                  "load": segments[0]["load"], "segments": segments}  # fmt: skip
        write_atomic(self.path, json.dumps(record))

    def record(self) -> dict | None:
        """The study's record as last written (None: none is kept, e.g. resumed from before records)."""
        return read_record(self.path.parent) if self.earlier is not None else None


def read_record(sweep_dir: Path) -> dict | None:
    """A sweep's wall-time record, as a command last wrote it (None: it has none)."""
    path = sweep_dir / WALL_FILE
    return json.loads(path.read_text()) if path.is_file() else None
