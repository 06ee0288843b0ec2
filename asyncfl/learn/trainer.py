"""Local SGD: training jobs and the one-by-one (reference) trainer (docs/explanation/architecture.md sections 2 and 6).

A job's result depends only on its inputs: the base parameters, the client's data and a minibatch
order drawn from the stream keyed by (seed, client, attempt).  A batched trainer must give the same
deltas, which is what makes it a drop-in replacement.

The update rule (identical to ``torch.optim.SGD`` with dampening 0, no Nesterov, when prox_mu is 0):
    g_s = grad L(w_s; batch_s) + weight_decay * w_s + prox_mu * (w_s - w_0)
    b_s = g_s (s = 0),  b_s = momentum * b_{s-1} + g_s (s > 0)
    w_{s+1} = w_s - lr * b_s
w_0 is the global model the job starts from: the prox_mu term is the gradient of FedProx's proximal
term (mu / 2) ||w - w_0||^2 (Li et al., MLSys 2020, eq. 2).

Besides the mean minibatch loss, a job reports ``train_loss_sq``: the mean over its steps of the mean
over the batch of each sample's squared loss, i.e. the mean of loss_k^2 over every sample it processed
(all of a job's batches have the same size), the statistic Oort's utility is built from.
"""

from __future__ import annotations

import math
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn.utils import vector_to_parameters

from asyncfl.learn.training import Training
from asyncfl.seeding import stream


@dataclass(frozen=True)
class TrainingJob:
    client: int
    base_version: int
    attempt: int  # the client's attempt counter: keys the minibatch stream
    steps: int


@dataclass(frozen=True)
class TrainingResult:
    delta: torch.Tensor  # w_local - w_base, flat
    train_loss: float  # mean minibatch loss over the local steps
    num_steps: int
    train_loss_sq: float = math.nan  # mean squared per-sample loss over every sample processed


def minibatch_positions(
    seed: int, client: int, attempt: int, n: int, steps: int, batch_size: int, rng: np.random.Generator | None = None
) -> np.ndarray:
    """Positions into a client's training indices, shape [steps, min(batch_size, n)].

    Consecutive epochs are independent permutations, so every sample is seen once per epoch.  ``rng``: the
    job's stream ``stream(seed, "minibatch", client, attempt)`` when the caller built it already (a cohort's
    at once, :func:`asyncfl.seeding.streams`).
    """
    b = min(batch_size, n)
    rng = stream(seed, "minibatch", client, attempt) if rng is None else rng
    epochs = -(-steps * b // n)
    order = np.concatenate([rng.permutation(n) for _ in range(epochs)])
    return order[: steps * b].reshape(steps, b)


def calls_of(count: int, jobs_per_call: int) -> list[range]:
    """Positions of a group of ``count`` jobs cut into the fewest calls of at most ``jobs_per_call`` jobs, of
    near-equal sizes (the first ones one longer): 10 jobs by 8 -> 5 + 5, 20 by 8 -> 7 + 7 + 6."""
    calls = math.ceil(count / jobs_per_call) if count else 0
    size, extra = divmod(count, calls) if calls else (0, 0)
    out, start = [], 0
    for i in range(calls):
        end = start + size + (1 if i < extra else 0)
        out.append(range(start, end))
        start = end
    return out


def unflatten(model: nn.Module, flat: torch.Tensor) -> dict[str, torch.Tensor]:
    """Views of a flat parameter vector, named like ``model.named_parameters()``."""
    out, start = {}, 0
    for name, p in model.named_parameters():
        out[name] = flat[start : start + p.numel()].view_as(p)
        start += p.numel()
    return out


def sgd_step(
    w: torch.Tensor, grad: torch.Tensor, buf: torch.Tensor | None, cfg: Training, w0: torch.Tensor | None = None
):
    """One step of the update rule in the module docstring; ``w0``: the job's base (needed when prox_mu > 0).
    Returns (w, momentum buffer)."""
    if cfg.weight_decay:
        grad = grad + cfg.weight_decay * w
    if cfg.prox_mu:
        grad = grad + cfg.prox_mu * (w - w0)
    if cfg.momentum:
        buf = grad if buf is None else cfg.momentum * buf + grad
        grad = buf
    return w - cfg.lr * grad, buf


def flat_gradient(loss: torch.Tensor, leaves: list[torch.Tensor]) -> torch.Tensor:
    """The gradient of ``loss`` with respect to every leaf (one per parameter tensor), as one flat vector.

    One leaf per tensor rather than views of one flat leaf: autograd would turn each view's gradient into
    a zero-padded copy of the whole vector and add them up (62 copies of 11M floats per ResNet-18 step,
    half of its time on the CPU).  The numbers are the same; a parameter the loss does not use gets zeros."""
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(leaves, grads)])


def autocast_to(dtype: torch.dtype | None, device: torch.device) -> AbstractContextManager:
    """``torch.autocast`` to ``dtype`` on ``device``'s type around a trainer's run (``trainer.precision:
    bfloat16``), or nothing (None: float32).  Autocast computes matrix products and convolutions, forward and
    backward, in bfloat16; the parameters stay float32 leaves (autograd casts each gradient back to its leaf's
    dtype; the batched trainers cast theirs), so the SGD update and the deltas are float32."""
    return nullcontext() if dtype is None else torch.autocast(device.type, dtype=dtype)


class SequentialTrainer:
    """Trains the jobs one after the other: the reference implementation."""

    batched = False
    autocast: torch.dtype | None = None  # torch.bfloat16 for trainer.precision: bfloat16 (executors.make_trainer)

    def __init__(self, model: nn.Module, federation, training: Training, seed: int) -> None:
        self.model, self.federation, self.training, self.seed = model, federation, training, seed

    def run(self, base: torch.Tensor | Sequence[torch.Tensor], jobs: Sequence[TrainingJob]) -> list[TrainingResult]:
        """Train ``jobs``; ``base`` is one flat parameter vector for all of them or one per job."""
        self.model.train()
        bases = [base] * len(jobs) if isinstance(base, torch.Tensor) else base
        with autocast_to(self.autocast, self.federation.features.device):
            return [self._train_one(b, job) for b, job in zip(bases, jobs)]

    def _train_one(self, base: torch.Tensor, job: TrainingJob) -> TrainingResult:
        from torch.func import functional_call  # imports torch._dynamo (~1 s): only when training

        fed, cfg = self.federation, self.training
        train_idx = fed.client_train[job.client]
        positions = minibatch_positions(self.seed, job.client, job.attempt, len(train_idx), job.steps, cfg.batch_size)
        batches = train_idx[torch.from_numpy(positions).to(train_idx.device)]
        w, buf = base.detach(), None
        losses = torch.zeros(job.steps, device=base.device)
        squares = torch.zeros(job.steps, device=base.device)
        for step in range(job.steps):
            idx = batches[step]
            leaves = {name: view.detach().requires_grad_(True) for name, view in unflatten(self.model, w).items()}
            logits = functional_call(self.model, leaves, (fed.features[idx],))
            loss = nn.functional.cross_entropy(logits, fed.labels[idx])
            grad = flat_gradient(loss, list(leaves.values()))
            with torch.no_grad():
                w, buf = sgd_step(w.detach(), grad, buf, cfg, base)
                each = nn.functional.cross_entropy(logits, fed.labels[idx], reduction="none")
                squares[step] = each.square().mean()
            losses[step] = loss.detach()
        return TrainingResult(w - base, float(losses.mean()), job.steps, float(squares.mean()))


@torch.no_grad()
def evaluate(model: nn.Module, params: torch.Tensor, federation, indices: torch.Tensor, chunk: int = 8192):
    """(accuracy, mean loss, per-sample correctness) of ``params`` on the samples ``indices``.

    The accuracy is the integer count of correct predictions divided in float64 (:func:`hit_rate`), so
    337 right of 359 is written as ``337 / 359``, not as the float32 mean of the correctness vector."""
    if len(indices) == 0:
        return float("nan"), float("nan"), torch.zeros(0, dtype=torch.bool)
    vector_to_parameters(params, model.parameters())
    model.eval()
    correct, loss_sum = [], 0.0
    with torch.inference_mode():  # no autograd graph: nothing here is back-propagated
        for start in range(0, len(indices), chunk):
            idx = indices[start : start + chunk]
            logits = model(federation.features[idx])
            loss_sum += float(nn.functional.cross_entropy(logits, federation.labels[idx], reduction="sum"))
            correct.append(logits.argmax(1) == federation.labels[idx])
        hits = torch.cat(correct)
    return hit_rate(hits), loss_sum / len(indices), hits


def hit_rate(hits: torch.Tensor) -> float:
    """Share of True in a boolean tensor: the integer count over the length, divided in float64 (NaN when empty)."""
    return int(hits.sum()) / len(hits) if len(hits) else float("nan")
