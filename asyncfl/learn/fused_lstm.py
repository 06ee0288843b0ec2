"""A fused batched trainer for the character LSTM (``model.name: lstm_shakespeare``): a cohort's LSTMs in one
set of batched matrix products per time step, forward and backward written out (docs/explanation/architecture.md
section 7).

Every client has its own weights, so each product is a ``bmm`` over the cohort ([J, B, in] x [J, in, 4H]).
Forward, per layer (gate order i, f, g, o as ``nn.LSTM``): the input projection of all time steps at once,
``P = x W_ih^T + b_ih + b_hh``; then per step ``a = P_t + h_{t-1} W_hh^T``, ``i, f, o = sigmoid``,
``g = tanh``, ``c_t = f c_{t-1} + i g``, ``h_t = o tanh(c_t)``.  The head reads the last layer's last
``h``.  Backward through time, per layer from the last step: ``dc += dh o (1 - tanh^2 c_t)``, the gate
pre-activation gradients ``dA_t`` from ``dc`` and ``dh``, ``dh_{t-1} = dA_t W_hh``, ``dc_{t-1} = dc f``;
then the weight gradients as one product over all steps (``dW_hh = sum_t dA_t^T h_{t-1}``,
``dW_ih = sum_t dA_t^T x_t``), and the layer's input gradient ``dA W_ih`` for the layer below.  The
embedding's gradient is an ``index_add`` of the first layer's input gradient into the characters' rows.

The loop over steps reads nothing back to the host, so on CUDA it queues its kernels without waiting.
Results equal :class:`asyncfl.learn.trainer.SequentialTrainer`'s to float tolerance (tests/test_fused_lstm.py).
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

    def gradients(
        self, w: dict, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor
    ) -> tuple[dict, torch.Tensor, torch.Tensor]:
        jobs = x.shape[0]
        chars = x.transpose(1, 2).long()  # time before batch: every step's rows are one block per client
        rows = torch.arange(jobs, device=x.device).view(-1, 1, 1) * self.vocabulary + chars  # [J, T, B]
        table = w["embedding.weight"]
        embedded = inputs = table.reshape(-1, table.shape[-1])[rows]  # [J, T, B, E]
        kept = []
        for layer in range(self.num_layers):
            kept.append(self.layer_forward(w, layer, inputs))
            inputs = kept[-1][0]
        last = inputs[:, -1]  # [J, B, H]
        head = ("linear", "head.weight", "head.bias")
        grad_out, loss, square = cross_entropy_backward(linear_forward(w, head, last), y, weight)
        grads = {"head.weight": torch.bmm(grad_out.transpose(1, 2), last), "head.bias": grad_out.sum(1)}
        grad_h = torch.zeros_like(inputs)
        grad_h[:, -1] = torch.bmm(grad_out, w["head.weight"])
        for layer in range(self.num_layers - 1, -1, -1):
            below = kept[layer - 1][0] if layer else embedded
            grad_h = self.layer_backward(w, layer, below, kept[layer], grad_h, grads)
        embedding_grad = torch.zeros(jobs * self.vocabulary, table.shape[-1], device=x.device, dtype=table.dtype)
        embedding_grad.index_add_(0, rows.reshape(-1), grad_h.reshape(-1, table.shape[-1]))
        grads["embedding.weight"] = embedding_grad.view_as(table)
        return grads, loss, square

    def layer_forward(self, w: dict, layer: int, inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(outputs h, gates after their activations, cells c, tanh(c)), each [J, T, B, H or 4H], of one LSTM
        layer over ``inputs`` [J, T, B, in] (time before batch: the step-t slice of each is one contiguous
        [B, H] block per client, what ``bmm`` reads without a copy)."""
        jobs, steps, batch, width = inputs.shape
        units = self.units
        bias = (w[f"lstm.bias_ih_l{layer}"] + w[f"lstm.bias_hh_l{layer}"]).unsqueeze(1)
        projected = torch.baddbmm(bias, inputs.reshape(jobs, -1, width), w[f"lstm.weight_ih_l{layer}"].transpose(1, 2))
        projected = projected.view(jobs, steps, batch, 4 * units)
        recurrent = w[f"lstm.weight_hh_l{layer}"].transpose(1, 2)  # [J, H, 4H]
        out = inputs.new_empty(jobs, steps, batch, units)
        gates = inputs.new_empty(jobs, steps, batch, 4 * units)
        cells, tanh_cells = torch.empty_like(out), torch.empty_like(out)
        h = inputs.new_zeros(jobs, batch, units)
        c = inputs.new_zeros(jobs, batch, units)
        for t in range(steps):
            a = torch.baddbmm(projected[:, t], h, recurrent)
            act = gates[:, t]
            torch.sigmoid(a, out=act)
            torch.tanh(a[..., 2 * units : 3 * units], out=act[..., 2 * units : 3 * units])
            i, f, g, o = act.split(units, -1)
            c = torch.addcmul(f * c, i, g, out=cells[:, t])
            torch.tanh(c, out=tanh_cells[:, t])
            h = torch.mul(o, tanh_cells[:, t], out=out[:, t])
        return out, gates, cells, tanh_cells

    def layer_backward(
        self, w: dict, layer: int, below: torch.Tensor, kept: tuple, grad_h: torch.Tensor, grads: dict
    ) -> torch.Tensor:
        """Puts the layer's parameter gradients in ``grads``; returns its input's gradient [J, B, T, in].
        ``below``: the layer's input [J, T, B, in]; ``grad_h``: the loss's gradient with respect to its
        outputs [J, T, B, H] (the layer above's input gradient, or the head's at the last step)."""
        out, gates, cells, tanh_cells = kept
        jobs, steps, batch, units = out.shape
        recurrent = w[f"lstm.weight_hh_l{layer}"]  # [J, 4H, H]
        grad_gates = torch.empty_like(gates)
        dh = torch.zeros_like(out[:, 0])
        dc = torch.zeros_like(dh)
        for t in range(steps - 1, -1, -1):
            dh = dh + grad_h[:, t]
            i, f, g, o = gates[:, t].split(units, -1)
            tc = tanh_cells[:, t]
            dc = dc + dh * o * (1 - tc * tc)
            da = grad_gates[:, t]
            di, df, dg, do = da.split(units, -1)
            torch.mul(dc * g, i * (1 - i), out=di)
            if t:
                torch.mul(dc * cells[:, t - 1], f * (1 - f), out=df)
            else:
                df.zero_()
            torch.mul(dc * i, 1 - g * g, out=dg)
            torch.mul(dh * tc, o * (1 - o), out=do)
            dc = dc * f
            dh = torch.bmm(da, recurrent)
        flat = grad_gates.view(jobs, -1, 4 * units)
        previous = out[:, :-1].reshape(jobs, -1, units)  # h_{t-1} for t >= 1 (h_{-1} = 0)
        grads[f"lstm.weight_hh_l{layer}"] = torch.bmm(
            grad_gates[:, 1:].reshape(jobs, -1, 4 * units).transpose(1, 2), previous
        )
        width = below.shape[-1]
        grads[f"lstm.weight_ih_l{layer}"] = torch.bmm(flat.transpose(1, 2), below.reshape(jobs, -1, width))
        bias = flat.sum(1)
        grads[f"lstm.bias_ih_l{layer}"], grads[f"lstm.bias_hh_l{layer}"] = bias, bias.clone()
        return torch.bmm(flat, w[f"lstm.weight_ih_l{layer}"]).view(jobs, steps, batch, width)
