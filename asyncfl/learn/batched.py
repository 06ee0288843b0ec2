"""The batched trainer: every job that starts from one model version in one vectorised call (DESIGN.md 7).

The cohort's parameters are stacked into a [J x d] matrix and trained together with ``torch.func``
(``vmap`` over ``grad_and_value`` of a ``functional_call``).  Each local step gathers every client's
minibatch with one index operation on the on-device data set.  Two masks make the result equal to
the one-by-one reference (:class:`asyncfl.learn.trainer.SequentialTrainer`):

* sample weights: a client with n < batch_size samples uses batches of n (as the reference does);
  its batch is padded to batch_size with weight-0 samples and the real ones weigh 1/n, so the
  weighted loss sum equals the reference's mean loss;
* step masks: a client with fewer local steps keeps its parameters and momentum buffer unchanged
  on the steps it does not take.

The minibatch order comes from :func:`asyncfl.learn.trainer.minibatch_positions`, keyed by
(seed, client, attempt): a client's result never depends on who shares its batch.  Cohorts are
split into chunks of at most ``chunk_size`` clients to bound memory (default: as many as fit in
``CHUNK_BUDGET_BYTES`` by the estimate in :func:`bytes_per_client`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from asyncfl.config.schema import Training
from asyncfl.learn.trainer import TrainingJob, TrainingResult, minibatch_positions

CHUNK_BUDGET_BYTES = 1 << 30  # default memory bound of one batched call (parameters + activations)


class BatchedTrainer:
    """Trains a cohort of jobs sharing one base vector with ``vmap``; same deltas as the reference."""

    batched = True

    def __init__(
        self, model: nn.Module, federation, training: Training, seed: int, chunk_size: int | None = None
    ) -> None:
        self.model, self.federation, self.training, self.seed = model, federation, training, seed
        self.layout = [(name, p.numel(), p.shape) for name, p in model.named_parameters()]
        self.dim = sum(n for _, n, _ in self.layout)
        self.train_np = [idx.cpu().numpy() for idx in federation.client_train]
        self.chunk_size = chunk_size or max(1, CHUNK_BUDGET_BYTES // bytes_per_client(model, federation, training))
        self.step = vmap(grad_and_value(self._loss))

    def _loss(self, params: dict, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """Weighted cross-entropy of one client's padded minibatch (weights: 1/b real, 0 padding)."""
        logits = functional_call(self.model, params, (x,))
        return (nn.functional.cross_entropy(logits, y, reduction="none") * weight).sum()

    def run(self, base: torch.Tensor, jobs: Sequence[TrainingJob]) -> list[TrainingResult]:
        self.model.train()
        out: list[TrainingResult] = []
        for start in range(0, len(jobs), self.chunk_size):
            out.extend(self._run_chunk(base, jobs[start : start + self.chunk_size]))
        return out

    def _run_chunk(self, base: torch.Tensor, jobs: Sequence[TrainingJob]) -> list[TrainingResult]:
        """Parameters stay stacked per tensor ([J, *shape]) during the steps -- gradients of slices of
        one flat vector would cost a [J, d] scatter per parameter tensor -- and are flattened at the end."""
        fed, cfg = self.federation, self.training
        index, weight, steps = self.cohort_batches(jobs)
        device = base.device
        index, weight = index.to(device), weight.to(device, base.dtype)
        steps_t = torch.as_tensor(steps, device=device)
        w, start = {}, 0
        for name, n, shape in self.layout:
            w[name] = base[start : start + n].view(shape).expand(len(jobs), *shape).clone()
            start += n
        buf: dict = {}
        losses = torch.zeros(len(jobs), index.shape[1], device=device, dtype=base.dtype)
        for s in range(index.shape[1]):
            idx = index[:, s]
            grads, loss = self.step(w, fed.features[idx], fed.labels[idx], weight[:, s])
            losses[:, s] = loss.detach()
            active = steps_t > s
            for name, _, shape in self.layout:
                mask = active.view(-1, *([1] * len(shape)))
                w[name], buf[name] = masked_sgd_step(w[name], grads[name], buf.get(name), cfg, mask, s == 0)
        delta = torch.cat([w[name].reshape(len(jobs), -1) for name, _, _ in self.layout], 1) - base
        mean_loss = (losses.sum(1) / steps_t).tolist()
        return [TrainingResult(delta[j], mean_loss[j], steps[j]) for j in range(len(jobs))]

    def cohort_batches(self, jobs: Sequence[TrainingJob]) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
        """Global sample indices [J, S, B], sample weights [J, S, B] and per-job step counts.

        Row j, step s holds the reference's minibatch s of job j (padded with the client's first
        sample at weight 0); steps past a job's own count are all padding.
        """
        batch, steps = self.training.batch_size, [job.steps for job in jobs]
        index = np.zeros((len(jobs), max(steps), batch), dtype=np.int64)
        weight = np.zeros(index.shape, dtype=np.float32)
        for j, job in enumerate(jobs):
            train = self.train_np[job.client]
            pos = minibatch_positions(self.seed, job.client, job.attempt, len(train), job.steps, batch)
            b = pos.shape[1]
            index[j] = train[0]
            index[j, : job.steps, :b] = train[pos]
            weight[j, : job.steps, :b] = 1.0 / b
        return torch.from_numpy(index), torch.from_numpy(weight), steps


def masked_sgd_step(
    w: torch.Tensor, grad: torch.Tensor, buf: torch.Tensor | None, cfg: Training, active: torch.Tensor, first: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`asyncfl.learn.trainer.sgd_step` on stacked rows; rows with ``active`` False stay as they are.

    Every job takes step 0 (steps >= 1), so the momentum buffer starts as the first gradient for all.
    """
    if cfg.weight_decay:
        grad = grad + cfg.weight_decay * w
    if cfg.momentum:
        buf = grad if first else torch.where(active, cfg.momentum * buf + grad, buf)
        grad = buf
    return torch.where(active, w - cfg.lr * grad, w), buf


def bytes_per_client(model: nn.Module, federation, training: Training) -> int:
    """Rough memory of one client in a batched step: parameters, gradient, momentum and the new
    parameters (4 d floats) plus forward activations of a minibatch, counted twice for backward."""
    numel = [0]

    def count(_module, _inputs, output) -> None:
        if isinstance(output, torch.Tensor):
            numel[0] += output.numel()

    leaves = [m for m in model.modules() if not list(m.children())]
    hooks = [m.register_forward_hook(count) for m in leaves]
    try:
        with torch.no_grad():
            model(federation.features[:1])
    finally:
        for h in hooks:
            h.remove()
    dim = sum(p.numel() for p in model.parameters())
    element = federation.features.element_size()
    return element * (4 * dim + 2 * training.batch_size * (numel[0] + federation.features[0].numel()))
