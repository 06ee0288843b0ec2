"""The run's figures (``output.plot``), drawn from its closed files; the seconds they took go into
summary.json (``figures_seconds``)."""

from __future__ import annotations

import json
import time
from typing import Any

from asyncfl.callbacks.base import Callback, RunState


class RunFigures(Callback):
    def __init__(self, out: Any) -> None:
        self.out = out

    def on_end(self, state: RunState, now: float) -> None:
        # here, not at the top: a run that does not plot loads no matplotlib (tests/test_startup.py)
        from asyncfl.figures import render_run_figures

        started = time.perf_counter()
        render_run_figures(self.out.path)
        summary = json.loads((self.out.path / "summary.json").read_text(encoding="utf-8"))
        self.out.write_json("summary.json", {**summary, "figures_seconds": time.perf_counter() - started})
