"""Checkpoints for ``--resume``: what a killed run needs to finish exactly as if it never stopped.

A checkpoint is written atomically (temporary file, fsync, rename) at aggregation boundaries
(``checkpoint.every_rounds`` / ``every_virtual_s``, and when the run stops), in the run loop
(:class:`CheckpointWriter`).  A kill before the rename leaves the previous checkpoint, whose offsets the
logs have only grown past: resuming from it is exact too.  It holds the learning
state only: global parameters and version, the strategy's memories (its ``state_dict``: tensors and
plain values, never the strategy object), the job book (outstanding training jobs, their base vectors
and any results already computed), the progress record, and the byte offsets of every log file at
that moment with a CRC-32 of each log's bytes up to its offset.

The clock world is not saved.  It never depends on what is learned, so resuming replays it from
t = 0 with the same seed (no training, no logging: as fast as ``timing_only``) up to the
checkpoint's aggregation, swaps the saved learning state in, cuts the logs back to the saved
offsets and goes on live.  Every random stream, client battery, availability process, in-flight
task and buffered update is therefore exactly where it was.  Before anything is cut, every log is
checked to be the one the checkpoint saw (long enough, the same bytes, no NUL blocks): a run is
never continued on top of damaged files.
"""

from __future__ import annotations

import io
import os
import zlib
from pathlib import Path

import torch

from asyncfl.config import ConfigError, Scenario, read_yaml, validate_scenario
from asyncfl.output.reading import read_summary
from asyncfl.output.run_directory import CHECKPOINT_FILE as FILE
from asyncfl.output.run_directory import ENDED
from asyncfl.runner.callbacks.base import Checkpoint

FINAL = ENDED  # a run that ended cannot be resumed
CHUNK = 1 << 24  # bytes read at a time when a log is read back


def save_checkpoint(run_dir: Path, state: Checkpoint) -> None:
    write_serialized(run_dir, serialized(state))


def serialized(state: dict) -> memoryview:
    """The checkpoint's bytes (one buffer: torch.save writes each tensor as a record of its own)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getbuffer()


def write_serialized(run_dir: Path, data: memoryview) -> None:
    """Temporary file, fsync, rename: a reader sees the previous checkpoint or this one, whole."""
    tmp = run_dir / f".{FILE}.tmp"
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, run_dir / FILE)


class CheckpointWriter:
    """Saves the checkpoints of one run directory, each with ``crc32``: the CRC-32 of every log's first
    ``offsets[log]`` bytes.  The logs are read back incrementally (each byte once per run, and only
    when a checkpoint is written), from the page cache they were just flushed to.

    The state is serialised and written (fsync, rename) at the call, in the run loop: a run killed after an
    aggregation that checkpoints finds that checkpoint on disk.  (Writing on a thread saved ~0.2 s of
    scenarios/k_async.yaml's loop but let a run killed right after the aggregation resume from an older
    checkpoint than the one it had reached; tests/study/test_study.py's kill-and-resume caught it.)"""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.read: dict[str, tuple[int, int]] = {}  # log -> (bytes read back, their CRC-32)

    def __call__(self, state: Checkpoint) -> None:
        crcs = {}
        for name, end in state["offsets"].items():
            start, crc = self.read.get(name, (0, 0))
            crc, _ = log_crc32(self.run_dir / name, end, start, crc)
            self.read[name] = (end, crc)
            crcs[name] = crc
        write_serialized(self.run_dir, serialized({**packed(state), "crc32": crcs}))


def packed(state: Checkpoint) -> dict:
    """The progress record's staleness of every update so far as one int64 tensor: a list is pickled number by
    number, at every checkpoint of a run that only grows (:func:`unpacked` reads it back)."""
    progress = state["progress"]
    return {**state, "progress": {**progress, "staleness": torch.tensor(progress["staleness"], dtype=torch.int64)}}


def unpacked(checkpoint: dict) -> Checkpoint:
    """A checkpoint as the run saved it (the staleness a list again; older checkpoints hold one already)."""
    staleness = checkpoint["progress"]["staleness"]
    if isinstance(staleness, torch.Tensor):
        checkpoint["progress"]["staleness"] = staleness.tolist()
    return Checkpoint(**checkpoint)


def log_crc32(path: Path, end: int, start: int = 0, crc: int = 0) -> tuple[int, int]:
    """CRC-32 of bytes [start, end) of ``path`` (continuing ``crc``), and the offset of the first NUL byte
    among them (-1: none).  Fewer than ``end`` bytes is an EOFError."""
    first_nul = -1
    with open(path, "rb") as handle:
        handle.seek(start)
        at = start
        while at < end:
            chunk = handle.read(min(CHUNK, end - at))
            if not chunk:
                raise EOFError(f"{path} ends at byte {at}")
            nul = chunk.find(b"\0")
            if nul >= 0 and first_nul < 0:
                first_nul = at + nul
            crc = zlib.crc32(chunk, crc)
            at += len(chunk)
    return crc, first_nul


def check_logs(run_dir: Path, checkpoint: Checkpoint) -> None:
    """Every log a resume continues is the one the checkpoint saw: at least as long as its offset, with
    those bytes unchanged (their CRC-32; checkpoints of older versions have none) and free of NUL bytes,
    the blocks two processes writing at once leave.  A damaged log is a ConfigError naming it."""
    crcs = checkpoint.get("crc32", {})
    for name, offset in checkpoint["offsets"].items():
        path = run_dir / name
        size = path.stat().st_size if path.is_file() else None
        if size is None:
            problem = "is missing"
        elif size < offset:
            problem = f"is {size} bytes long, shorter than the {offset} bytes the checkpoint recorded"
        else:
            crc, nul = log_crc32(path, offset)
            if nul >= 0:
                problem = f"holds NUL bytes (the first at byte {nul})"
            elif name in crcs and crc != crcs[name]:
                problem = f"differs from what the checkpoint recorded in its first {offset} bytes"
            else:
                continue
        raise ConfigError(
            f"--resume {run_dir}: {name} {problem}, so the run cannot be continued from its checkpoint "
            "(nothing was changed). Start the scenario again into a new directory."
        )


def read_summary_status(run_dir: Path) -> str | None:
    """summary.json's ``status`` (None without a summary: the run died before writing one).  An
    unreadable summary.json is a ConfigError naming it: it is only ever replaced whole, so that is
    damage from outside."""
    try:
        summary = read_summary(run_dir, required=False)
    except ConfigError as exc:
        raise ConfigError(
            f"--resume {run_dir}: {exc} It is only ever written whole, so it was damaged from outside. "
            "Nothing was changed; restore it, or delete it to resume from the checkpoint."
        ) from None
    return summary.get("status") if summary else None


def load_for_resume(run_dir: Path) -> tuple[Scenario, Checkpoint | None]:
    """The run's scenario and its last checkpoint (None if it died before the first one), after
    checking that the logs it continues are intact (call it holding the run directory)."""
    if not (run_dir / "config.yaml").is_file():
        raise ConfigError(f"--resume {run_dir}: not a run directory (no config.yaml).")
    status = read_summary_status(run_dir)
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
    check_logs(run_dir, checkpoint)
    return scenario, unpacked(checkpoint)
