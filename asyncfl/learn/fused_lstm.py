"""A fused batched trainer for the character LSTM (``model.name: lstm_shakespeare``): a cohort's LSTMs in one
set of batched matrix products per time step, forward and backward written out (docs/explanation/architecture.md
section 7).

Every client has its own weights, so each product is a ``bmm`` over the cohort ([J, B, in] x [J, in, 4H]);
the one exception is a chunk's first local step when all its jobs start from one base (a sync round, or any
cohort of one model version): the weights are then the same for every client, and each step's products are
one ``mm`` of all J*B rows ([J*B, H] x [H, 4H]), which a CPU runs several times faster per row than J
products of B = 10 rows.  Only the weight gradients stay per client.  Tensors are kept time first
([T, J, B, n]), so that a step's rows are one contiguous block for either product.

Forward, per layer (gate order i, f, g, o as ``nn.LSTM``): the input projection of all time steps at once,
``P = x W_ih^T + b_ih + b_hh``; then per step ``a_t = P_t + h_{t-1} W_hh^T`` (``h_{-1} = c_{-1} = 0``),
``i, f, o = sigmoid(a_t)``, ``g = tanh(a_t)`` (in place, on their slices), ``c_t = f c_{t-1} + i g``,
``h_t = o tanh(c_t)``.  The head reads the last layer's last ``h``.  Backward through time, per layer from
the last step, with ``dh_t`` the loss's gradient with respect to ``h_t``:

    dh_t = dA_{t+1} W_hh + (the layer above's input gradient at t, or the head's at the last step)
    dc_t = dc_{t+1} f_{t+1} + dh_t o_t (1 - tanh^2 c_t)
    dA_t = [dc_t g_t * i_t (1 - i_t),  dc_t c_{t-1} * f_t (1 - f_t),  dc_t i_t * (1 - g_t^2),
            dh_t tanh(c_t) * o_t (1 - o_t)]                      (the gate pre-activations' gradients)

then the weight gradients as one product per client over all steps (``dW_hh = sum_t dA_t^T h_{t-1}``,
``dW_ih = sum_t dA_t^T x_t``, ``db_ih = db_hh = sum_t dA_t``), and the layer's input gradient ``dA W_ih``
for the layer below.  The embedding's gradient is an ``index_add`` of the first layer's input gradient into
the characters' rows.  A step's elementwise work is a dozen operations on that step's slices, which stay in
the cache on the CPU.

Speed on the CPU (``benchmarks/performance/bench_lstm.py``; docs/findings/shakespeare.md): the sequential
trainer runs torch's own LSTM, oneDNN's fused kernel, at most of the machine's matrix-product rate, and the
work is the same matrix products on both sides, so this trainer cannot be several times faster there; it
is the faster one on CUDA, where one launch per step for the whole cohort replaces one per client.
The loop over steps reads nothing back to the host, so on CUDA it queues its kernels without waiting.
Results equal :class:`asyncfl.learn.trainer.SequentialTrainer`'s to float tolerance (tests/learn/test_fused_lstm.py).
"""

from __future__ import annotations

import torch
from torch import nn

from asyncfl.learn.batched import CHUNK_BUDGET_BYTES, FusedTrainer, cross_entropy_backward, linear_forward
from asyncfl.learn.models import parameter_count
from asyncfl.learn.models._char_lstm import CharLSTM
from asyncfl.learn.training import Training

CPU_LSTM_CHUNK_BYTES = 256 << 20  # the CPU's default bound on one call (see LstmFusedTrainer.chunk_budget_bytes)


def lstm_layers(model: nn.Module) -> int | None:
    """The number of LSTM layers of a :class:`CharLSTM` the fused kernel can train (unidirectional, with
    biases, batch first, no projection, no dropout), else None."""
    if not isinstance(model, CharLSTM):
        return None
    lstm = model.lstm
    plain = lstm.batch_first and lstm.bias and not lstm.bidirectional and lstm.proj_size == 0 and lstm.dropout == 0
    return lstm.num_layers if plain else None


class LstmFusedTrainer(FusedTrainer):
    """The batched trainer with :class:`CharLSTM`'s gradients written out as batched products (module docstring)."""

    kernel = "fused"

    def __init__(
        self, model: nn.Module, federation, training: Training, seed: int, chunk_size: int | None = None
    ) -> None:
        layers = lstm_layers(model)
        if layers is None:
            raise ValueError(f"the fused LSTM trainer needs a plain CharLSTM, not {model!r}")
        self.num_layers, self.units = layers, model.lstm.hidden_size
        self.vocabulary = model.embedding.num_embeddings
        self.length = int(federation.features.shape[1])
        self.layers = []  # FusedTrainer's Linear chain: unused here
        self.shared_step = False  # the next gradients() call runs on shared weights (train_rows)
        self.model, self.federation, self.training = model, federation, training
        chunk = chunk_size or max(1, self.chunk_budget_bytes() // self.bytes_per_client())
        super(FusedTrainer, self).__init__(model, federation, training, seed, chunk)

    def chunk_budget_bytes(self) -> int:
        """On the CPU, a bound of 256 MB (about ten clients of LEAF's model at batch 10): products over
        cohorts whose weights spill far out of the cache ran no faster per client on the 2-core CPU."""
        if self.federation.features.device.type == "cpu":
            return min(CPU_LSTM_CHUNK_BYTES, CHUNK_BUDGET_BYTES)
        return CHUNK_BUDGET_BYTES

    def bytes_per_client(self) -> int:
        """Parameters, gradient, momentum and new parameters (4 d floats) plus what the steps keep for the
        backward pass: per layer and step the gates, cell, tanh(cell) and output (7 H a sample), and the
        gate gradients (4 H)."""
        steps, units, batch = self.length, self.units, self.training.batch_size
        kept = batch * steps * (7 * units * self.num_layers + 4 * units)
        return 4 * (4 * parameter_count(self.model) + kept)

    def train_rows(
        self, rows: torch.Tensor, index: torch.Tensor, weight: torch.Tensor, steps: list[int]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`BatchedTrainer.train_rows`, noting whether the chunk's jobs start from one base (the rows
        are then one vector expanded, stride 0: :func:`asyncfl.learn.batched.stack_bases`): its first
        step then runs on shared weights (module docstring)."""
        self.shared_step = rows.shape[0] == 1 or rows.stride(0) == 0
        return super().train_rows(rows, index, weight, steps)

    def gradients(
        self, w: dict, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor
    ) -> tuple[dict, torch.Tensor, torch.Tensor]:
        shared, self.shared_step = self.shared_step, False  # only a chunk's first step
        jobs = x.shape[0]
        chars = x.long().permute(2, 0, 1)  # [T, J, B]: time first, so that a step's rows are one block
        rows = torch.arange(jobs, device=x.device).view(1, -1, 1) * self.vocabulary + chars
        table = w["embedding.weight"]
        embedded = inputs = table.reshape(-1, table.shape[-1])[rows]  # [T, J, B, E]
        kept = []
        for layer in range(self.num_layers):
            kept.append(self.layer_forward(w, layer, inputs, shared))
            inputs = kept[-1][0]
        last = inputs[-1]  # [J, B, H]
        head = ("linear", "head.weight", "head.bias")
        grad_out, loss, square = cross_entropy_backward(linear_forward(w, head, last), y, weight)
        grads = {"head.weight": torch.bmm(grad_out.transpose(1, 2), last), "head.bias": grad_out.sum(1)}
        grad_h = torch.bmm(grad_out, w["head.weight"])  # [J, B, H]: the top layer's last step only
        for layer in range(self.num_layers - 1, -1, -1):
            below = kept[layer - 1][0] if layer else embedded
            grad_h = self.layer_backward(w, layer, below, kept[layer], grad_h, grads, shared)
        embedding_grad = torch.zeros(jobs * self.vocabulary, table.shape[-1], device=x.device, dtype=table.dtype)
        embedding_grad.index_add_(0, rows.reshape(-1), grad_h.reshape(-1, table.shape[-1]))
        grads["embedding.weight"] = embedding_grad.view_as(table)
        return grads, loss, square

    def layer_forward(self, w: dict, layer: int, inputs: torch.Tensor, shared: bool) -> tuple[torch.Tensor, ...]:
        """(outputs h, gates after their activations, cells c, tanh(c)), each [T, J, B, H or 4H], of one LSTM
        layer over ``inputs`` [T, J, B, in] (time first: a step's slice is one contiguous [J, B, n] block,
        what the products read without a copy, and on shared weights one [J*B, n] matrix)."""
        steps, jobs, batch, width = inputs.shape
        units = self.units
        bias = w[f"lstm.bias_ih_l{layer}"] + w[f"lstm.bias_hh_l{layer}"]  # [J, 4H]
        w_ih = w[f"lstm.weight_ih_l{layer}"]  # [J, 4H, in]
        if shared:
            projected = torch.addmm(bias[0], inputs.reshape(-1, width), w_ih[0].t())
        else:  # one product per client over all its steps, then back to time first (a copy)
            by_client = inputs.transpose(0, 1).reshape(jobs, -1, width)
            projected = torch.baddbmm(bias.unsqueeze(1), by_client, w_ih.transpose(1, 2))
            projected = projected.view(jobs, steps, batch, -1).transpose(0, 1)
        gates = projected.reshape(steps, jobs, batch, 4 * units)  # pre-activations, activated in place
        recurrent = w[f"lstm.weight_hh_l{layer}"].transpose(1, 2)  # [J, H, 4H]
        out = inputs.new_empty(steps, jobs, batch, units)
        cells, tanh_cells = torch.empty_like(out), torch.empty_like(out)
        i, f, g, o = gates.split(units, -1)  # [T, J, B, H] views
        sigmoid_if = gates[..., : 2 * units]
        for t in range(steps):
            if t:  # h_{-1} = 0: step 0's pre-activation is the projection alone
                product_add(gates[t], out[t - 1], recurrent, shared)
            sigmoid_if[t].sigmoid_()
            o[t].sigmoid_()
            g[t].tanh_()
            if t:
                torch.mul(f[t], cells[t - 1], out=cells[t]).addcmul_(i[t], g[t])
            else:
                torch.mul(i[t], g[t], out=cells[t])
            torch.tanh(cells[t], out=tanh_cells[t])
            torch.mul(o[t], tanh_cells[t], out=out[t])
        return out, gates, cells, tanh_cells

    def layer_backward(
        self, w: dict, layer: int, below: torch.Tensor, kept: tuple, grad_h: torch.Tensor, grads: dict, shared: bool
    ) -> torch.Tensor:
        """Puts the layer's parameter gradients in ``grads``; returns its input's gradient [T, J, B, in].
        ``below``: the layer's input [T, J, B, in]; ``grad_h``: the loss's gradient with respect to its
        outputs, [T, J, B, H] (the layer above's input gradient, updated here) or [J, B, H] (the head's, last
        step only).  Every step's elementwise work stays on that step's slices (cache-sized on the CPU; the
        same derivatives over all steps at once cost more in memory traffic than they saved in calls)."""
        out, gates, cells, tanh_cells = kept
        steps, jobs, batch, units = out.shape
        recurrent = w[f"lstm.weight_hh_l{layer}"]  # [J, 4H, H]
        top = grad_h.dim() == 3
        i, f, g, o = gates.split(units, -1)
        grad_gates = torch.empty_like(gates)
        di, df, dg, do = grad_gates.split(units, -1)
        dc = torch.zeros_like(out[0])
        one = out.new_ones(())
        slope, cell_slope = torch.empty_like(gates[0]), torch.empty_like(dc)  # scratch, one step's worth
        g_gate = slice(2 * units, 3 * units)
        for t in range(steps - 1, -1, -1):
            if t == steps - 1:
                dh = grad_h if top else grad_h[t]
            elif top:  # dh_t = dA_{t+1} W_hh (+ what the layer above sends)
                dh = product(grad_gates[t + 1], recurrent, shared)
            else:
                dh = product_add(grad_h[t], grad_gates[t + 1], recurrent, shared)
            torch.addcmul(one, tanh_cells[t], tanh_cells[t], value=-1, out=cell_slope)
            dc.addcmul_(dh, cell_slope.mul_(o[t]))  # dc += dh o (1 - tanh^2 c)
            torch.mul(dc, g[t], out=di[t])
            if t:
                torch.mul(dc, cells[t - 1], out=df[t])
            else:
                df[t].zero_()  # c_{-1} = 0
            torch.mul(dc, i[t], out=dg[t])
            torch.mul(dh, tanh_cells[t], out=do[t])
            torch.addcmul(gates[t], gates[t], gates[t], value=-1, out=slope)  # s (1 - s) of the sigmoids,
            torch.addcmul(one, g[t], g[t], value=-1, out=slope[..., g_gate])  # 1 - g^2 of the tanh
            grad_gates[t].mul_(slope)
            dc.mul_(f[t])
        # the weight gradients: one product per client over all its steps (client first: copies)
        by_client = grad_gates.transpose(0, 1).reshape(jobs, steps * batch, 4 * units)
        previous = out[:-1].transpose(0, 1).reshape(jobs, -1, units)  # h_{t-1} for t >= 1 (h_{-1} = 0)
        grads[f"lstm.weight_hh_l{layer}"] = torch.bmm(by_client[:, batch:].transpose(1, 2), previous)
        width = below.shape[-1]
        below_by_client = below.transpose(0, 1).reshape(jobs, -1, width)
        grads[f"lstm.weight_ih_l{layer}"] = torch.bmm(by_client.transpose(1, 2), below_by_client)
        bias = by_client.sum(1)
        grads[f"lstm.bias_ih_l{layer}"], grads[f"lstm.bias_hh_l{layer}"] = bias, bias.clone()
        w_ih = w[f"lstm.weight_ih_l{layer}"]  # [J, 4H, in]
        if shared:
            return torch.mm(grad_gates.view(-1, 4 * units), w_ih[0]).view(steps, jobs, batch, width)
        return torch.bmm(by_client, w_ih).view(jobs, steps, batch, width).transpose(0, 1)


def product_add(target: torch.Tensor, a: torch.Tensor, weight: torch.Tensor, shared: bool) -> torch.Tensor:
    """``target += a weight`` in place, per client ([J, B, n] += [J, B, m] x [J, m, n]); on shared weights
    (``shared``) one product of all J*B rows with the first client's ``weight``."""
    if shared:
        target.view(-1, target.shape[-1]).addmm_(a.reshape(-1, a.shape[-1]), weight[0])
        return target
    return target.baddbmm_(a, weight)


def product(a: torch.Tensor, weight: torch.Tensor, shared: bool) -> torch.Tensor:
    """``a weight`` per client ([J, B, m] x [J, m, n]); on shared weights one product of all J*B rows."""
    if shared:
        return torch.mm(a.reshape(-1, a.shape[-1]), weight[0]).view(*a.shape[:-1], weight.shape[-1])
    return torch.bmm(a, weight)
