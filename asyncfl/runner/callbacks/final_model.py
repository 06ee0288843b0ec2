"""final_model.npz: the global model at the run's end, one array per named parameter (numpy's format: no
framework needed to read it).  A native run's names are its torch model's ``state_dict`` keys; a Flower run's its
ArrayRecord's keys.  A timing-only run has none; an interrupted run (or one out of memory) writes it when it is
resumed and ends."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from asyncfl.runner.callbacks.base import Callback, RunState

FINAL_MODEL = "final_model.npz"
RESUMABLE = ("interrupted", "out_of_memory")  # not their end: a native run resumes


class FinalModel(Callback):
    """Writes ``learner.final_arrays()`` (None: no model) whole, through a temporary file."""

    def __init__(self, out, learner) -> None:
        self.out, self.learner = out, learner

    def on_end(self, state: RunState, now: float) -> None:
        if state.progress.status in RESUMABLE:
            return
        arrays = self.learner.final_arrays()
        if arrays is not None:
            write_arrays(self.out.path / FINAL_MODEL, arrays)


def write_arrays(path, arrays: Mapping[str, np.ndarray]) -> None:
    """``arrays`` as one .npz file (a reader sees none or all of it)."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as handle:
        np.savez(handle, **arrays)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
