"""Choosing how training jobs run: ``trainer.executor: auto | batched | sequential`` (DESIGN.md 7).

Both trainers give the same deltas to float tolerance (tests/test_batched.py), so the choice is
about speed only.  ``auto`` follows a fixed rule, decided from ``benchmarks/bench_trainer.py``
rather than timed at run start, so that a scenario always runs the same code path (same numbers
to the last bit) on the same kind of device:

* CUDA: batched for every model -- one kernel launch for the whole cohort instead of one per
  client and layer;
* CPU: batched for models up to ``CPU_BATCHED_MAX_PARAMS`` parameters.  On the 2-core CPU it beat
  the sequential trainer for logreg (2-16x), mlp (1.9-3.5x) and even LeNet-5 (1.8-2.8x, vmap turns
  the convolutions into grouped ones) at cohorts of 10, 100 and 1,000 (README, "Performance").
  ResNet-18 (11M parameters) stays sequential on the CPU: it was not measured, and a cohort's
  stacked copies of its parameters cost more memory than they can save in time.
"""

from __future__ import annotations

import torch
from torch import nn

from asyncfl.config.schema import Trainer, Training
from asyncfl.learn.batched import BatchedTrainer
from asyncfl.learn.trainer import SequentialTrainer

CPU_BATCHED_MAX_PARAMS = 1_000_000


def auto_executor(model: nn.Module, device: torch.device) -> str:
    """The executor ``auto`` picks for ``model`` on ``device`` (see the module docstring)."""
    if device.type == "cuda":
        return "batched"
    small = sum(p.numel() for p in model.parameters()) <= CPU_BATCHED_MAX_PARAMS
    return "batched" if small else "sequential"


def make_trainer(model: nn.Module, federation, training: Training, seed: int, spec: Trainer, device: torch.device):
    """The trainer ``spec`` asks for (``auto`` resolved by :func:`auto_executor`)."""
    executor = auto_executor(model, device) if spec.executor == "auto" else spec.executor
    if executor == "batched":
        return BatchedTrainer(model, federation, training, seed, spec.chunk_size)
    return SequentialTrainer(model, federation, training, seed)
