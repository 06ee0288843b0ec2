"""Batched trainers: a whole cohort of jobs in one vectorised call per local step
(docs/explanation/architecture.md section 7).

The cohort's parameters are stacked per tensor ([J, *shape]) and trained together.  Jobs may start
from different base versions (one base row per job): a job's result depends only on its inputs, so
any set of outstanding jobs can share a call.  Each local step gathers every client's minibatch
with one index operation on the on-device data set.  Two masks make the result equal to the
one-by-one reference (:class:`asyncfl.learn.trainer.SequentialTrainer`):

* sample weights: a client with n < batch_size samples uses batches of n (as the reference does);
  its batch is padded to the cohort's widest batch with weight-0 samples and the real ones weigh
  1/n, so the weighted loss sum equals the reference's mean loss;
* step masks: a client with fewer local steps keeps its parameters and momentum buffer unchanged
  on the steps it does not take.

Two kernels compute the per-client gradients of a step:

* :class:`BatchedTrainer` -- any ``nn.Module``: ``torch.func`` ``vmap`` over ``grad_and_value`` of
  a ``functional_call``.  Its dispatch costs a few milliseconds per step whatever the cohort size.
* :class:`FusedTrainer` -- chains of ``Flatten`` / ``Linear`` / ``ReLU`` (logreg, mlp): the forward
  and backward pass written out as batched matrix products (``baddbmm`` / ``bmm``), about twenty
  plain tensor operations per step.

The minibatch order comes from :func:`asyncfl.learn.trainer.minibatch_positions`, keyed by
(seed, client, attempt): a client's result never depends on who shares its batch.  Cohorts are
split into the fewest near-equal chunks of at most ``chunk_size`` clients to bound memory (default: as many as fit in
``CHUNK_BUDGET_BYTES`` by the estimate in :func:`bytes_per_client`; for the fused kernel on the CPU,
``CPU_CACHE_CHUNK_BYTES``, which is faster).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

from asyncfl.learn.models import parameter_count
from asyncfl.learn.trainer import TrainingJob, TrainingResult, autocast_to, calls_of, minibatch_positions
from asyncfl.learn.training import Training
from asyncfl.seeding import streams

CHUNK_BUDGET_BYTES = 1 << 30  # default memory bound of one batched call (parameters + activations)
CPU_CACHE_CHUNK_BYTES = 16 << 20  # the fused kernel's default bound on the CPU (FusedTrainer.chunk_budget_bytes)

Bases = torch.Tensor | Sequence[torch.Tensor]  # one flat base shared by all jobs, or one per job


class BatchedTrainer:
    """Trains a cohort of jobs with ``torch.func.vmap``; same deltas as the reference."""

    batched = True
    kernel = "vmap"
    autocast: torch.dtype | None = None  # torch.bfloat16 for trainer.precision: bfloat16 (executors.make_trainer)

    def __init__(
        self, model: nn.Module, federation, training: Training, seed: int, chunk_size: int | None = None
    ) -> None:
        self.model, self.federation, self.training, self.seed = model, federation, training, seed
        self.layout = [(name, p.numel(), p.shape) for name, p in model.named_parameters()]
        self.dim = sum(n for _, n, _ in self.layout)
        self.train_np = [idx.cpu().numpy() for idx in federation.client_train]
        self.chunk_size = chunk_size or max(
            1, self.chunk_budget_bytes() // bytes_per_client(model, federation, training)
        )
        self._vmap_step = None

    def gradients(
        self, w: dict, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor
    ) -> tuple[dict, torch.Tensor, torch.Tensor]:
        """Per-client gradients {name: [J, *shape]}, weighted losses [J] and weighted squared per-sample
        losses [J] of one local step; x: [J, B, *input], y and weight: [J, B]."""
        if self._vmap_step is None:  # torch.func imports torch._dynamo (~1 s): only when first needed
            from torch.func import grad_and_value, vmap

            self._vmap_step = vmap(grad_and_value(self._loss, has_aux=True))
        grads, (loss, square) = self._vmap_step(w, x, y, weight)
        return grads, loss, square

    def _loss(self, params: dict, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor):
        """Weighted cross-entropy of one client's padded minibatch (weights: 1/b real, 0 padding), and
        the weighted sum of the squared per-sample losses (not differentiated)."""
        from torch.func import functional_call

        logits = functional_call(self.model, params, (x,))
        each = nn.functional.cross_entropy(logits, y, reduction="none")
        return (each * weight).sum(), (each.detach().square() * weight).sum()

    def run(self, base: Bases, jobs: Sequence[TrainingJob]) -> list[TrainingResult]:
        """Train ``jobs``; ``base`` is one flat parameter vector for all of them or one per job."""
        self.model.train()
        out: list[TrainingResult | None] = [None] * len(jobs)
        widths = [min(self.training.batch_size, len(self.train_np[job.client])) for job in jobs]
        with autocast_to(self.autocast, self.federation.features.device):
            for group in width_groups(widths, self.call_overhead_rows()):
                for part in calls_of(len(group), self.chunk_size):  # near-equal: no small remainder call
                    chunk = [group[i] for i in part]
                    chunk_base = base if isinstance(base, torch.Tensor) else [base[j] for j in chunk]
                    for j, result in zip(chunk, self._run_chunk(chunk_base, [jobs[j] for j in chunk])):
                        out[j] = result
        return out

    def plain_sgd(self) -> bool:
        """Whether a step may fold its update into the backward pass (``descend``, which only
        :class:`FusedTrainer` has): that kernel, a plain SGD rule (no momentum, weight decay or proximal term)
        and full precision.  Here: no."""
        return False

    def call_overhead_rows(self) -> int | None:
        """What one more call per local step costs, in padded sample rows (see :func:`width_groups`);
        None: never split a cohort by batch width.  Measured on the 2-core CPU (about 0.2 ms per
        fused call, 3 ms per vmap call, 1.7 us per row of the MLP); on CUDA per-row work is nearly
        free next to a kernel launch, so cohorts are not split there."""
        if self.federation.features.device.type != "cpu":
            return None
        return self.CALL_OVERHEAD_ROWS

    CALL_OVERHEAD_ROWS = 2048

    def chunk_budget_bytes(self) -> int:
        """Memory one batched call may use by :func:`bytes_per_client` (the default chunk size)."""
        return CHUNK_BUDGET_BYTES

    def _run_chunk(self, base: Bases, jobs: Sequence[TrainingJob]) -> list[TrainingResult]:
        index, weight, steps = self.cohort_batches(jobs)
        rows = stack_bases(base, len(jobs))
        delta, losses, squares = self.train_rows(rows, index, weight, steps)
        mean_loss = (losses.sum(1) / steps_t(steps, losses)).tolist()
        mean_square = (squares.sum(1) / steps_t(steps, losses)).tolist()  # padded steps have weight 0: they add 0
        return [TrainingResult(delta[j], mean_loss[j], steps[j], mean_square[j]) for j in range(len(jobs))]

    def train_rows(
        self, rows: torch.Tensor, index: torch.Tensor, weight: torch.Tensor, steps: list[int]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(deltas [J, d], weighted losses [J, S], weighted squared losses [J, S]) of local SGD from the
        base ``rows`` [J, d] over the minibatches of :meth:`cohort_batches`, all on the rows' device.

        The indices and weights move to that device once; then the loop over the local steps reads
        nothing back to the host (no ``.item()``, ``.tolist()`` or ``.cpu()``: the step masks come
        from the Python list ``steps``), so a GPU runs the whole job without waiting on the CPU.
        Each parameter is its own contiguous [J, *shape] copy that the steps update in place: an in-place
        batched product into a tensor whose clients are not one contiguous block runs on the CPU as one
        matrix product per client (the fused MLP's weight update took 1.4x as long in views of one flat
        [J, d] copy).  The delta is the copies joined, less the rows in place (one new [J, d] tensor)."""
        fed, cfg, jobs = self.federation, self.training, len(steps)
        device = rows.device
        index, weight = index.to(device), weight.to(device, rows.dtype)
        active_after = steps_t(steps, rows)
        w, w0, start = {}, {}, 0
        for name, n, shape in self.layout:
            w0[name] = rows[:, start : start + n].reshape(jobs, *shape)
            w[name] = w0[name].clone(memory_format=torch.contiguous_format)
            start += n
        buf: dict = {}
        losses = torch.zeros(jobs, index.shape[1], device=device, dtype=rows.dtype)
        squares = torch.zeros_like(losses)
        plain = self.plain_sgd()
        for s in range(index.shape[1]):
            idx = index[:, s]
            active = None if s < min(steps) else active_after > s  # None: every job takes this step
            if plain and active is None:  # the step's update fused into its backward pass
                loss, square = self.descend(w, fed.features[idx], fed.labels[idx], weight[:, s])
                losses[:, s], squares[:, s] = loss, square
                continue
            grads, loss, square = self.gradients(w, fed.features[idx], fed.labels[idx], weight[:, s])
            losses[:, s] = loss.detach()
            squares[:, s] = square.detach()
            for name, _, shape in self.layout:
                mask = None if active is None else active.view(-1, *([1] * len(shape)))
                grad = grads[name].to(w[name].dtype)  # bfloat16 autocast: the update stays float32 (no-op otherwise)
                stepped, buf[name] = masked_sgd_step(w[name], grad, buf.get(name), cfg, mask, w0[name])
                if stepped is not w[name]:  # a masked step returns a new tensor: back into the copy
                    w[name].copy_(stepped)
        delta = torch.cat([w[name].reshape(jobs, -1) for name, _, _ in self.layout], 1).sub_(rows)
        return delta, losses, squares

    def cohort_batches(self, jobs: Sequence[TrainingJob]) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
        """Global sample indices [J, S, B], sample weights [J, S, B] and per-job step counts.

        Row j, step s holds the reference's minibatch s of job j, padded with the client's first
        sample at weight 0 to B, the widest batch in the cohort (at most batch_size); steps past a
        job's own count are all padding.
        """
        batch, steps = self.training.batch_size, [job.steps for job in jobs]
        rngs = streams(self.seed, "minibatch", np.array([(job.client, job.attempt) for job in jobs], dtype=np.int64))
        positions = [
            minibatch_positions(
                self.seed, job.client, job.attempt, len(self.train_np[job.client]), job.steps, batch, rng
            )
            for job, rng in zip(jobs, rngs)
        ]
        width = max(pos.shape[1] for pos in positions)
        index = np.zeros((len(jobs), max(steps), width), dtype=np.int64)
        weight = np.zeros(index.shape, dtype=np.float32)
        for j, (job, pos) in enumerate(zip(jobs, positions)):
            train = self.train_np[job.client]
            b = pos.shape[1]
            index[j] = train[0]
            index[j, : job.steps, :b] = train[pos]
            weight[j, : job.steps, :b] = 1.0 / b
        return torch.from_numpy(index), torch.from_numpy(weight), steps


class FusedTrainer(BatchedTrainer):
    """The batched trainer with the gradients of a ``Flatten`` / ``Linear`` / ``ReLU`` chain written
    out as batched matrix products: no ``torch.func`` dispatch, so small cohorts are fast too.

    Forward, per Linear layer: ``h = baddbmm(b, a, W^T)``; loss: weighted cross-entropy.  Backward:
    ``dlogits = (softmax - onehot) * weight``, then per layer ``dW = dh^T a``, ``db = sum_b dh``,
    ``da = dh W``, and ReLU passes ``da`` where its output is positive.
    """

    kernel = "fused"
    CALL_OVERHEAD_ROWS = 128

    def chunk_budget_bytes(self) -> int:
        """On the CPU, chunks that stay near the cache: the fused MLP on the 2-core CPU ran 1.4-1.7x
        faster in chunks of 32-64 clients (12-24 MB) than in one call of 100 or 1,000 (logreg,
        46 KB a client, gained nothing from smaller chunks; this budget leaves it at 350)."""
        if self.federation.features.device.type == "cpu":
            return min(CPU_CACHE_CHUNK_BYTES, CHUNK_BUDGET_BYTES)
        return CHUNK_BUDGET_BYTES

    def __init__(
        self, model: nn.Module, federation, training: Training, seed: int, chunk_size: int | None = None
    ) -> None:
        self.layers = fused_layers(model)
        if self.layers is None:
            raise ValueError(f"the fused trainer needs a chain of Flatten, Linear and ReLU modules, not {model!r}")
        super().__init__(model, federation, training, seed, chunk_size)

    def gradients(
        self, w: dict, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor
    ) -> tuple[dict, torch.Tensor, torch.Tensor]:
        grad_out, loss, square, saved = self._forward(w, x, y, weight)
        grads = {}
        for i in range(len(saved) - 1, -1, -1):
            layer, kept = saved[i]
            if layer[0] == "relu":
                grad_out = torch.ops.aten.threshold_backward(grad_out, kept, 0)  # ReLU's own backward
                continue
            grad_out = linear_backward(w, layer, kept, grad_out, grads, need_input=i > 0)
        return grads, loss, square

    def _forward(self, w: dict, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor) -> tuple:
        """The chain's forward pass and the loss's gradient: (gradient of the weighted loss sum with respect to
        the logits, weighted losses [J], weighted squared losses [J], [(layer, its input or ReLU output)])."""
        a = x.reshape(x.shape[0], x.shape[1], -1)  # Flatten: every supported chain works on [J, B, features]
        saved = []
        for layer in self.layers:
            if layer[0] == "linear":
                saved.append((layer, a))
                a = linear_forward(w, layer, a)
            elif layer[0] == "relu":
                a = torch.relu(a)
                saved.append((layer, a))
        return (*cross_entropy_backward(a, y, weight), saved)

    def plain_sgd(self) -> bool:
        cfg = self.training
        own_chain = type(self).gradients is FusedTrainer.gradients  # not a subclass's kernel (conv, LSTM)
        return own_chain and not (cfg.momentum or cfg.weight_decay or cfg.prox_mu) and self.autocast is None

    def descend(
        self, w: dict, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`gradients` and the SGD step in one pass: each Linear layer's weight is updated by one
        ``baddbmm_`` (``W -= lr * dh^T a``, the product accumulated into W in place, no gradient tensor and
        no second pass over W: 8 % of the MLP's training on the CPU), after its input's gradient has been
        taken from the old W.  The weights' last bits may differ from :meth:`gradients` then
        ``masked_sgd_step`` (one rounding fewer); the biases' update is the same."""
        lr = self.training.lr
        grad_out, loss, square, saved = self._forward(w, x, y, weight)
        for i in range(len(saved) - 1, -1, -1):
            layer, kept = saved[i]
            if layer[0] == "relu":
                grad_out = torch.ops.aten.threshold_backward(grad_out, kept, 0)
                continue
            _, weight_name, bias_name = layer
            grad_in = torch.bmm(grad_out, w[weight_name]) if i > 0 else None  # from the weights before the step
            w[weight_name].baddbmm_(grad_out.transpose(1, 2), kept, alpha=-lr)
            if bias_name:
                w[bias_name].sub_(grad_out.sum(1), alpha=lr)
            grad_out = grad_in
        return loss, square


def linear_forward(w: dict, layer: tuple, a: torch.Tensor) -> torch.Tensor:
    """A stacked Linear layer ("linear", weight name, bias name or None) on ``a`` [J, B, in]."""
    _, weight_name, bias_name = layer
    wt = w[weight_name].transpose(1, 2)
    h = torch.bmm(a, wt)  # then the bias: baddbmm with a broadcast bias took 1.1-1.2x as long on the CPU
    return h.add_(w[bias_name].unsqueeze(1)) if bias_name else h


def linear_backward(
    w: dict, layer: tuple, kept: torch.Tensor, grad_out: torch.Tensor, grads: dict, need_input: bool
) -> torch.Tensor | None:
    """Puts the layer's parameter gradients in ``grads``; returns its input's gradient (None when not
    ``need_input``).  ``kept``: the layer's input."""
    _, weight_name, bias_name = layer
    grads[weight_name] = torch.bmm(grad_out.transpose(1, 2), kept)
    if bias_name:
        grads[bias_name] = grad_out.sum(1)
    return torch.bmm(grad_out, w[weight_name]) if need_input else None


def cross_entropy_backward(
    logits: torch.Tensor, y: torch.Tensor, weight: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(gradient of the weighted loss sum with respect to ``logits`` [J, B, classes], weighted losses
    [J], weighted squared per-sample losses [J]): ``(softmax - onehot) * weight``."""
    log_p = log_softmax(logits)
    target = y.unsqueeze(-1)
    each = log_p.gather(-1, target).squeeze(-1)  # minus the per-sample losses
    loss = -(each * weight).sum(1)
    square = (each.square() * weight).sum(1)
    grad_out = log_p.exp_()
    grad_out.scatter_add_(-1, target, torch.full_like(target, -1, dtype=grad_out.dtype))
    grad_out.mul_(weight.unsqueeze(-1))
    return grad_out, loss, square


def log_softmax(logits: torch.Tensor) -> torch.Tensor:
    """``torch.log_softmax(logits, -1)``; at full precision written out, since torch's kernel over 10
    classes took 3x as long on the CPU (54 us against 18 for 25 x 14 rows).  Lower precision keeps torch's
    kernel, which sums the exponentials in float32."""
    if logits.dtype not in (torch.float32, torch.float64):
        return torch.log_softmax(logits, -1)
    shifted = logits - logits.amax(-1, keepdim=True)
    return shifted.sub_(shifted.exp().sum(-1, keepdim=True).log_())


def steps_t(steps: list[int], like: torch.Tensor) -> torch.Tensor:
    """The jobs' step counts as a tensor on ``like``'s device."""
    return torch.as_tensor(steps, device=like.device)


def width_groups(widths: Sequence[int], overhead_rows: int | None) -> list[list[int]]:
    """Job indices grouped by batch width, so that ``sum(overhead_rows + len(g) * max width of g)``
    over the groups is least: a cohort's batches are padded to its widest one, so narrow clients in
    a wide cohort cost padding, and each extra group costs one more call per local step.  Exact, by
    dynamic programming over the distinct widths in increasing order (at most batch_size of them).
    ``overhead_rows`` None: one group.  Groups change no result (a job depends only on its inputs)."""
    if overhead_rows is None or len(set(widths)) < 2:
        return [list(range(len(widths)))]
    distinct = sorted(set(widths))
    below = np.searchsorted(np.sort(widths), distinct, side="right")  # jobs with width <= distinct[i]
    best, cut = [0.0], [0]
    for i, width in enumerate(distinct):
        options = [best[k] + overhead_rows + (below[i] - (below[k - 1] if k else 0)) * width for k in range(i + 1)]
        k = int(np.argmin(options))
        best.append(options[k])
        cut.append(k)
    bounds, i = [], len(distinct)
    while i > 0:
        bounds.append((distinct[cut[i]], distinct[i - 1]))
        i = cut[i]
    return [[j for j, w in enumerate(widths) if low <= w <= high] for low, high in reversed(bounds)]


def fused_layers(model: nn.Module) -> list[tuple] | None:
    """The model as a list of ("linear", weight name, bias name or None) and ("relu",) steps, or
    None when it is not a (nested) ``nn.Sequential`` of Flatten (over all but the batch dimension),
    Linear and ReLU with exactly the parameters those layers hold."""
    if not isinstance(model, nn.Sequential):
        return None
    layers: list[tuple] = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Sequential):
            continue
        if isinstance(module, nn.Linear):
            layers.append(("linear", f"{name}.weight", f"{name}.bias" if module.bias is not None else None))
        elif isinstance(module, nn.ReLU):
            layers.append(("relu",))
        elif isinstance(module, nn.Flatten):
            if (module.start_dim, module.end_dim) != (1, -1):
                return None
        else:
            return None
    names = {n for layer in layers if layer[0] == "linear" for n in layer[1:] if n}
    if not layers or layers[-1][0] != "linear" or names != {n for n, _ in model.named_parameters()}:
        return None
    return layers


def stack_bases(base: Bases, jobs: int) -> torch.Tensor:
    """[J, d] base rows: a shared vector is expanded (no copy), per-job vectors are stacked (one
    copy per distinct vector is avoided only when all jobs share it)."""
    if isinstance(base, torch.Tensor):
        return base.unsqueeze(0).expand(jobs, -1)
    if all(b is base[0] for b in base):
        return base[0].unsqueeze(0).expand(jobs, -1)
    return torch.stack(list(base))


def masked_sgd_step(
    w: torch.Tensor,
    grad: torch.Tensor,
    buf: torch.Tensor | None,
    cfg: Training,
    active: torch.Tensor | None,
    w0: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`asyncfl.learn.trainer.sgd_step` on stacked rows, in place on ``w``, ``grad`` and ``buf``
    (all owned by the batched trainer), from the jobs' bases ``w0`` (read only for prox_mu > 0); rows
    with ``active`` False stay as they are (``active`` None: every row steps).  In place because fresh
    [J, *shape] results per step cost more than the arithmetic at small cohorts; ``a - lr * b`` as one
    fused operation may round the last bit differently from the reference.

    Every job takes step 0 (steps >= 1), so the momentum buffer starts as the first gradient for all.
    """
    if cfg.weight_decay:
        grad = grad.add_(w, alpha=cfg.weight_decay)
    if cfg.prox_mu:  # FedProx: w0 holds the jobs' base rows
        grad = grad.add_(w - w0, alpha=cfg.prox_mu)
    if cfg.momentum:
        if buf is None:
            buf = grad
        elif active is None:
            buf = buf.mul_(cfg.momentum).add_(grad)
        else:
            buf = torch.where(active, cfg.momentum * buf + grad, buf)
        grad = buf
    if active is None:
        return w.sub_(grad, alpha=cfg.lr), buf
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
    dim = parameter_count(model)
    element = federation.features.element_size()
    return element * (4 * dim + 2 * training.batch_size * (numel[0] + federation.features[0].numel()))
