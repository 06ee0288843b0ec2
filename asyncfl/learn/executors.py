"""Choosing how training jobs run: ``trainer.executor: auto | fused | batched | sequential``
(docs/explanation/architecture.md section 7).

All trainers give the same deltas to float tolerance (tests/learn/test_batched.py), so the choice is
about speed only.  ``auto`` follows a fixed rule, decided from ``benchmarks/performance/bench_trainer.py``
rather than timed at run start, so that a scenario always runs the same code path (same numbers
to the last bit) on the same kind of device:

* fused, on any device, when the model is a chain of Flatten / Linear / ReLU (logreg, mlp): on the
  CPU its hand-written batched forward and backward beat the ``torch.func`` path at every cohort
  size measured, most at small cohorts where ``vmap``'s per-step dispatch dominates; on an H200 too
  (1.4x to 5x, cohorts of 10 to 1,000);
* fused also for chains of Conv1d / Conv2d / ReLU / MaxPool / Flatten / Linear (cnn1d, lenet5;
  :mod:`asyncfl.learn.fused_conv`): each convolution is one channels-last grouped convolution over
  the cohort with its backward called directly.  On the 2-core CPU it beat ``vmap`` for cnn1d and
  LeNet-5 (``benchmarks/performance/bench_trainer.py``); on an H200 it beat ``vmap`` at cohorts of 10
  and 100 (K-async's sizes) and lost to it at 1,000 (docs/findings/performance.md, "On a GPU");
* for the character LSTM (lstm_shakespeare; :mod:`asyncfl.learn.fused_lstm`), fused on CUDA (a cohort's
  recurrent products are one ``bmm`` per time step: 4.5x the sequential trainer on an H200, 100 clients x
  5 steps) and sequential on the CPU, where torch's own LSTM kernel (oneDNN's) ran faster per client than the
  batched products (0.75x at 256 units from one base, 0.56x from a base per job, 0.89x at 64 units; one
  thread of the shared 2-core CPU; ``benchmarks/performance/bench_lstm.py``, docs/findings/shakespeare.md;
  measured again at cohorts of 10 and 100 with ``bench_realistic.py`` on a quiet machine: 0.80x and 0.97x);
  ``trainer.executor: fused`` asks for it anywhere;
* otherwise batched (``torch.func.vmap``) on CUDA for every model (ResNet-18) -- one kernel launch
  for the whole cohort instead of one per client and layer;
* otherwise, on the CPU, batched for models up to ``CPU_BATCHED_MAX_PARAMS`` parameters.
  ResNet-18 with GroupNorm (11M parameters) stays sequential on the CPU, measured
  (``benchmarks/performance/bench_realistic.py``, CIFAR-shaped 3x32x32 images, batch 32, one thread of the
  2-core CPU, quiet): ``vmap`` ran at 0.84x to 0.93x the sequential trainer's client-steps, cohorts of 10 and
  100, one thread or two, in its default chunks of one client (slower in chunks of 2 and 4).  Nothing
  is left to batch: convolutions are 85% of a sequential step and already run at about 110 GFLOP/s on one
  core (36 GFLOP forward per client-step), while ``vmap`` adds about 20% in the copies and elementwise
  operations of its grouped convolutions and decomposed GroupNorm (torch.profiler); channels-last grouped
  convolutions over a cohort (:mod:`asyncfl.learn.fused_conv`'s layout, backward by autograd) took 1.2x to
  2x the per-client time at cohorts of 4 and 10 (convolution and GroupNorm backward).  LEAF's FEMNIST CNN
  (``leaf_cnn``, 6.6M parameters) is a convolution chain and runs fused: 1.17x to 1.38x the sequential trainer
  (cohorts of 10 and 100, one thread or two: docs/findings/performance.md).

In bfloat16 (``trainer.precision``) the fused convolution and LSTM kernels are out (float32 only): those models
take what the rule gives without them (batched on CUDA; on the CPU batched up to ``CPU_BATCHED_MAX_PARAMS``, else
sequential, and sequential for the LSTM).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

from asyncfl.errors import ConfigError
from asyncfl.learn.batched import BatchedTrainer, FusedTrainer, fused_layers
from asyncfl.learn.fused_conv import ConvFusedTrainer, conv_layers
from asyncfl.learn.fused_lstm import LstmFusedTrainer, lstm_layers
from asyncfl.learn.models import parameter_count
from asyncfl.learn.trainer import SequentialTrainer
from asyncfl.learn.training import Trainer, Training

CPU_BATCHED_MAX_PARAMS = 1_000_000


def auto_executor(model: nn.Module, device: torch.device, precision: str = "float32") -> str:
    """The executor ``auto`` picks for ``model`` on ``device`` (see the module docstring).  In bfloat16
    (``trainer.precision``) the fused convolution and LSTM kernels are out (:data:`BFLOAT16_EXECUTORS`): their
    models take the executor they would without them."""
    fused_conv_or_lstm = precision == "float32"  # their hand-written backward is float32 only
    if fused_layers(model) is not None or (fused_conv_or_lstm and conv_layers(model) is not None):
        return "fused"
    if lstm_layers(model) is not None and device.type == "cpu":
        return "sequential"
    if lstm_layers(model) is not None and fused_conv_or_lstm:
        return "fused"
    if device.type == "cuda":
        return "batched"
    small = parameter_count(model) <= CPU_BATCHED_MAX_PARAMS
    return "batched" if small else "sequential"


def training_threads(model: nn.Module, device: torch.device, spec: Trainer) -> int | None:
    """Torch CPU threads for a run (``trainer.threads``), or None to leave torch's default.

    null (the default) pins one thread for models up to ``CPU_BATCHED_MAX_PARAMS`` parameters on the CPU: their
    operations are too small to split, and next to other busy processes torch's default of one thread
    per core slows ``scenarios/k_async.yaml`` down, the more the busier the machine (1.8x next to one
    busy core; 7-12x while two other jobs ran; ``benchmarks/performance/bench_threads.py``).
    One thread also keeps results independent of the machine's core count.  Larger models, and the
    GPU, keep torch's default."""
    if spec.threads is not None:
        return spec.threads
    if device.type == "cpu" and parameter_count(model) <= CPU_BATCHED_MAX_PARAMS:
        return 1
    return None


def make_trainer(model: nn.Module, federation, training: Training, seed: int, spec: Trainer, device: torch.device):
    """The trainer ``spec`` asks for (``auto`` resolved by :func:`auto_executor`); with ``trainer.precision:
    bfloat16`` its runs train under bfloat16 autocast (:func:`asyncfl.learn.trainer.autocast_to`, the one place
    every executor applies it)."""
    executor = auto_executor(model, device, spec.precision) if spec.executor == "auto" else spec.executor
    if spec.precision == "bfloat16" and executor == "fused" and fused_layers(model) is None:
        raise ConfigError(
            f"trainer.precision: bfloat16 runs with trainer.executor {BFLOAT16_EXECUTORS}; executor fused only for "
            "Linear/ReLU chains (logreg, mlp): the fused convolution and LSTM kernels' hand-written backward is "
            "float32 only. Use auto, batched or sequential for this model, or precision: float32."
        )
    trainer = executor_trainer(executor, model, federation, training, seed, spec)
    if spec.precision == "bfloat16":
        trainer.autocast = torch.bfloat16
    return trainer


BFLOAT16_EXECUTORS = "auto, batched or sequential (any model) or fused (logreg, mlp)"


def executor_trainer(executor: str, model: nn.Module, federation, training: Training, seed: int, spec: Trainer):
    """The trainer of ``executor`` (auto already resolved)."""
    if executor == "fused":
        if fused_layers(model) is not None:
            return FusedTrainer(model, federation, training, seed, spec.chunk_size)
        if lstm_layers(model) is not None:
            return LstmFusedTrainer(model, federation, training, seed, spec.chunk_size)
        if conv_layers(model) is None:
            raise ConfigError(
                "trainer.executor: fused needs a chain of Conv1d/Conv2d, ReLU, MaxPool, Flatten and Linear layers "
                "or the character LSTM (model.name logreg, mlp, cnn1d, lenet5 or lstm_shakespeare); use auto, "
                "batched or sequential for this model."
            )
        return ConvFusedTrainer(model, federation, training, seed, spec.chunk_size)
    if executor == "batched":
        return BatchedTrainer(model, federation, training, seed, spec.chunk_size)
    return SequentialTrainer(model, federation, training, seed)


@contextmanager
def float32_precision(spec: Trainer) -> Iterator[None]:
    """Full float32 (IEEE) or TF32 (``trainer.tf32``) arithmetic for cuDNN convolutions and recurrent
    layers and for CUDA matrix products while the run trains and evaluates; the caller's settings are
    restored on exit.  torch's own default lets cuDNN convolutions use TF32 on Ampere and later GPUs:
    on an H200 that made the fused and the sequential LeNet-5 trainers differ by 2e-3 after seven steps
    (1e-6 in float32), so asyncfl asks for float32 unless the scenario opts in.  The new per-backend
    API (torch >= 2.9) is used where it exists: torch refuses reads that mix it with the legacy flags."""
    precision = "tf32" if spec.tf32 else "ieee"
    cudnn = torch.backends.cudnn
    if hasattr(cudnn, "conv") and hasattr(cudnn.conv, "fp32_precision"):
        backends = (cudnn.conv, cudnn.rnn, torch.backends.cuda.matmul)
        saved = [backend.fp32_precision for backend in backends]
        try:
            for backend in backends:
                backend.fp32_precision = precision
            yield
        finally:
            for backend, value in zip(backends, saved):
                backend.fp32_precision = value
    else:  # torch < 2.9: the legacy switches
        saved = cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
        try:
            cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = spec.tf32
            yield
        finally:
            cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
