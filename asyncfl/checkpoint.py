"""Checkpoints for ``--resume``: what a killed run needs to finish exactly as if it never stopped.

A checkpoint is written atomically (temporary file, fsync, rename) at aggregation boundaries
(``checkpoint.every_rounds`` / ``every_virtual_s``, and when the run stops).  It holds the learning
state only: global parameters and version, the strategy's memories (its ``state_dict``: tensors and
plain values, never the strategy object), the job book (outstanding training jobs, their base vectors
and any results already computed), the progress record, and the byte offsets of every log file at
that moment.

The clock world is not saved.  It never depends on what is learned, so resuming replays it from
t = 0 with the same seed (no training, no logging: as fast as ``timing_only``) up to the
checkpoint's aggregation, swaps the saved learning state in, cuts the logs back to the saved
offsets and goes on live.  Every random stream, client battery, availability process, in-flight
task and buffered update is therefore exactly where it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from asyncfl.config import ConfigError, Scenario, read_yaml, validate_scenario
from asyncfl.results import CHECKPOINT_FILE as FILE
from asyncfl.results import ENDED

FINAL = ENDED  # a run that ended cannot be resumed


def save_checkpoint(run_dir: Path, state: dict) -> None:
    tmp = run_dir / f".{FILE}.tmp"
    with open(tmp, "wb") as handle:
        torch.save(state, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, run_dir / FILE)


def load_for_resume(run_dir: Path) -> tuple[Scenario, dict | None]:
    """The run's scenario and its last checkpoint (None if it died before the first one)."""
    if not (run_dir / "config.yaml").is_file():
        raise ConfigError(f"--resume {run_dir}: not a run directory (no config.yaml).")
    summary = run_dir / "summary.json"
    if summary.is_file():
        status = json.loads(summary.read_text()).get("status")
        if status in FINAL:
            raise ConfigError(f"--resume {run_dir}: this run already ended ({status}); nothing to resume.")
    scenario = validate_scenario(read_yaml(run_dir / "config.yaml"), str(run_dir / "config.yaml"))
    path = run_dir / FILE
    if not path.is_file():
        return scenario, None
    try:
        # tensors come back on the devices they were saved from (the model's, or the CPU for a
        # CPU-resident memory store): resuming is promised on the same kind of machine.  Everything in a
        # checkpoint is tensors and plain values, so it loads with weights_only: reading one runs no code.
        checkpoint = torch.load(path, weights_only=True)
    except Exception as exc:  # a checkpoint is only ever replaced atomically, so this is outside damage
        raise ConfigError(f"--resume {run_dir}: {FILE} is unreadable ({exc}).") from None
    return scenario, checkpoint
