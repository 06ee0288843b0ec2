"""The fused batched trainer for convolutional chains (``cnn1d``, ``lenet5``, the FLGo anchor's CNN):
forward and backward of a whole cohort as explicit tensor operations, no ``torch.func``.

Profiling ``cnn1d`` on MNIST-1D (100 clients, 20 rounds, 2-core CPU) showed the ``vmap`` path spends
about 80% of a step in the grouped convolutions it turns per-client convolutions into (oneDNN's
forward and ``convolution_backward`` on channels-first tensors), not in Python dispatch.  Measured
per layer for 55 clients x 32 samples (forward + backward, one thread), the same grouped
convolution in channels-last memory took 2.4 ms for cnn1d's second layer (6.2 ms channels-first,
5.0 ms as im2col + ``bmm``) and 2.7 ms for LeNet-5's second (11.1 ms channels-first, 18.6 ms im2col).
So the cohort's activations are one channels-last tensor [B, J * C, H, W] -- client j's channels
are j * C ... j * C + C - 1, the batch axis shared -- and each convolution is ONE grouped
convolution with groups = J, its backward ``aten.convolution_backward`` called directly (the
first layer's input gradient is never formed).  1-D layers run as 2-D ones of height 1.
Max-pooling (kernel = stride, no padding) and ReLU use their own aten backward; the Linear layers
and the loss are those of :class:`asyncfl.learn.batched.FusedTrainer` on [J, B, features], and
``Flatten`` reorders to the channels-first order the model's Linear layer expects.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from asyncfl.learn.batched import (
    CHUNK_BUDGET_BYTES,
    BatchedTrainer,
    FusedTrainer,
    cross_entropy_backward,
    linear_backward,
    linear_forward,
)

CHANNELS_LAST = torch.channels_last
CONV_CPU_CHUNK_BYTES = 32 << 20  # the default bound of one call on the CPU (ConvFusedTrainer.chunk_budget_bytes)
CONV_CUDA_CHUNK_CLIENTS = 100  # the default bound of one call on CUDA, in clients (ConvFusedTrainer.__init__)


class ConvFusedTrainer(BatchedTrainer):
    """The batched trainer for ``nn.Sequential`` chains of Conv1d/Conv2d, ReLU, MaxPool1d/2d,
    Flatten and Linear (see the module docstring); same deltas as the reference to float tolerance."""

    kernel = "fused"
    CALL_OVERHEAD_ROWS = FusedTrainer.CALL_OVERHEAD_ROWS

    def chunk_budget_bytes(self) -> int:
        """On the CPU, chunks of a few tens of clients: per client-step, cnn2d on digits ran 1.3x
        faster in chunks of 32 clients than of 64, 2.5x than of 128 and 5.7x than of 512; cnn1d and
        LeNet-5 were flat from 32 to 128 and a little slower below and above.  The budget gives about
        32 cnn2d, 39 LeNet-5 and 58 cnn1d clients (batch 32)."""
        if self.federation.features.device.type == "cpu":
            return min(CONV_CPU_CHUNK_BYTES, CHUNK_BUDGET_BYTES)
        return CHUNK_BUDGET_BYTES

    def __init__(self, model: nn.Module, federation, training, seed: int, chunk_size: int | None = None) -> None:
        self.layers = conv_layers(model)
        if self.layers is None:
            raise ValueError(f"the fused convolution trainer needs a chain of supported layers, not {model!r}")
        nd = model.get_parameter(self.layers[0][1]).dim() - 2
        self.conv_input = conv_input_shape(nd, tuple(federation.features.shape[1:]))
        super().__init__(model, federation, training, seed, chunk_size)
        if chunk_size is None and federation.features.device.type == "cuda":
            # cuDNN's grouped convolutions with TF32 ran LeNet-5 3x faster in chunks of 100 clients than in
            # the memory budget's one chunk of 1,262 on an H200; in float32 the evidence is mixed
            # (docs/findings/performance.md, "On a GPU")
            self.chunk_size = min(self.chunk_size, CONV_CUDA_CHUNK_CLIENTS)

    def gradients(
        self, w: dict, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor
    ) -> tuple[dict, torch.Tensor, torch.Tensor]:
        jobs, batch = x.shape[:2]
        a = cohort_images(x.reshape(jobs, batch, *self.conv_input))
        saved = []
        for layer in self.layers:
            kind = layer[0]
            saved.append((layer, a))  # every step keeps its input; ReLU its output, pool and conv a bit more
            if kind == "conv":
                grouped = group_weight(w[layer[1]])
                a = conv_forward(w, layer, a, grouped)
                saved[-1] = (layer, (saved[-1][1], grouped))
            elif kind == "relu":
                a = torch.relu(a)
                saved[-1] = (layer, a)
            elif kind == "pool":
                a, argmax = F.max_pool2d(a, layer[1], return_indices=True)
                saved[-1] = (layer, (saved[-1][1], argmax))
            elif kind == "flatten":
                a = a.unflatten(1, (jobs, -1)).transpose(0, 1).reshape(jobs, batch, -1)
            else:
                a = linear_forward(w, layer, a)
        grad_out, loss, square = cross_entropy_backward(a, y, weight)
        grads = {}
        for i in range(len(saved) - 1, -1, -1):
            layer, kept = saved[i]
            kind = layer[0]
            if kind == "relu":
                grad_out = torch.ops.aten.threshold_backward(grad_out, kept, 0)
            elif kind == "pool":
                grad_out = pool_backward(grad_out, *kept, layer[1])
            elif kind == "flatten":
                grad_out = cohort_images(grad_out.reshape(jobs, batch, kept.shape[1] // jobs, *kept.shape[2:]))
            elif kind == "conv":
                grad_out = conv_backward(w, layer, *kept, grad_out, grads, need_input=i > 0)
            else:
                grad_out = linear_backward(w, layer, kept, grad_out, grads, need_input=i > 0)
        return grads, loss, square


def cohort_images(a: torch.Tensor) -> torch.Tensor:
    """[J, B, C, H, W] per-client images as one channels-last [B, J * C, H, W] tensor."""
    jobs, batch, channels = a.shape[:3]
    stacked = a.permute(1, 3, 4, 0, 2).reshape(batch, *a.shape[3:], jobs * channels)  # [B, H, W, J * C]
    # with one channel per client the reshape is a view whose strides are neither channels-last nor
    # contiguous, and oneDNN's convolution and its backward ran 2-3x slower on it (1.2-1.8x on whole LeNet-5
    # and cnn2d cohorts, benchmarks/performance/bench_pfl.py); with more channels this copies nothing
    return stacked.permute(0, 3, 1, 2).contiguous(memory_format=CHANNELS_LAST)  # [B, J * C, H, W]


def group_weight(weight: torch.Tensor) -> torch.Tensor:
    """[J, C_out, C_in, *kernel] stacked weights as one grouped convolution's [J * C_out, C_in, kh, kw]."""
    grouped = weight.reshape(-1, *weight.shape[2:])
    if grouped.dim() == 3:  # a 1-D kernel: height 1
        grouped = grouped.unsqueeze(2)
    return grouped.contiguous(memory_format=CHANNELS_LAST)


def conv_forward(w: dict, layer: tuple, a: torch.Tensor, grouped: torch.Tensor) -> torch.Tensor:
    """The stacked convolution ("conv", weight, bias or None, stride, padding) of the cohort ``a``;
    ``grouped``: its weights as :func:`group_weight` gives them."""
    _, weight_name, bias_name, stride, padding = layer
    bias = w[bias_name].reshape(-1) if bias_name else None
    out = F.conv2d(a, grouped, bias, stride, padding, 1, w[weight_name].shape[0])
    # oneDNN returns one input channel per group (cnn1d's first layer) channels-first; the gradient
    # arriving from the next layer is channels-last, and ReLU's backward over the two layouts ran
    # 4x slower than over one
    return out.contiguous(memory_format=CHANNELS_LAST)


def conv_backward(
    w: dict,
    layer: tuple,
    kept: torch.Tensor,
    grouped: torch.Tensor,
    grad_out: torch.Tensor,
    grads: dict,
    need_input: bool,
) -> torch.Tensor | None:
    """Puts the convolution's weight and bias gradients in ``grads``; returns its input's gradient
    (None when not ``need_input``).  ``kept``: the layer's input, ``grouped``: its grouped weights."""
    _, weight_name, bias_name, stride, padding = layer
    weight = w[weight_name]
    grad_in, grad_weight, grad_bias = torch.ops.aten.convolution_backward(
        grad_out,
        kept,
        grouped,
        [grad_out.shape[1]] if bias_name else None,
        stride,
        padding,
        [1, 1],
        False,
        [0, 0],
        weight.shape[0],
        [need_input, True, bias_name is not None],
    )
    grads[weight_name] = grad_weight.reshape(weight.shape)
    if bias_name:
        grads[bias_name] = grad_bias.view(weight.shape[:2])
    return grad_in


def pool_backward(grad_out: torch.Tensor, before: torch.Tensor, argmax: torch.Tensor, kernel: tuple) -> torch.Tensor:
    """Max-pooling's backward: each window's gradient goes to its argmax (``before``: the pooled input)."""
    return torch.ops.aten.max_pool2d_with_indices_backward(
        grad_out, before, kernel, kernel, [0, 0], [1, 1], False, argmax
    )


def conv_layers(model: nn.Module) -> list[tuple] | None:
    """The model as a list of ("conv", weight, bias or None, stride, padding), ("relu",), ("pool",
    kernel), ("flatten",) and ("linear", weight, bias or None) steps, or None when it is not a
    (nested) ``nn.Sequential`` that starts with a convolution (after Identity / Unflatten modules,
    which the input reshape replaces), flattens once and ends with a Linear layer."""
    if not isinstance(model, nn.Sequential):
        return None
    layers: list[tuple] = []
    for name, module in model.named_modules():
        step = conv_step(name, module, layers)
        if step is False:
            return None
        if step is not None:
            layers.append(step)
    names = {n for layer in layers if layer[0] in ("conv", "linear") for n in layer[1:3] if n}
    kinds = [layer[0] for layer in layers]
    if not layers or kinds[0] != "conv" or kinds.count("flatten") != 1 or kinds[-1] != "linear":
        return None
    if "conv" in kinds[kinds.index("flatten") :] or names != {n for n, _ in model.named_parameters()}:
        return None
    return layers


def conv_step(name: str, module: nn.Module, layers: list) -> tuple | None | bool:
    """One module's step for :func:`conv_layers`: a tuple, None (nothing to do) or False (unsupported)."""
    if isinstance(module, nn.Sequential):
        return None
    if isinstance(module, (nn.Identity, nn.Unflatten)):
        return None if not layers else False
    if isinstance(module, (nn.Conv1d, nn.Conv2d)):
        plain = module.groups == 1 and set(module.dilation) == {1} and module.padding_mode == "zeros"
        if not plain or isinstance(module.padding, str):
            return False
        bias = f"{name}.bias" if module.bias is not None else None
        height = ((1,), (0,)) if isinstance(module, nn.Conv1d) else ((), ())  # 1-D: 2-D of height 1
        return ("conv", f"{name}.weight", bias, height[0] + tuple(module.stride), height[1] + tuple(module.padding))
    if isinstance(module, (nn.MaxPool1d, nn.MaxPool2d)):
        nd = 1 if isinstance(module, nn.MaxPool1d) else 2
        kernel, stride = (_tuple(v, nd) for v in (module.kernel_size, module.stride or module.kernel_size))
        plain = set(_tuple(module.padding, nd)) == {0} and set(_tuple(module.dilation, nd)) == {1}
        if kernel != stride or not plain or module.ceil_mode or module.return_indices:
            return False
        return ("pool", (1,) * (2 - nd) + kernel)
    if isinstance(module, nn.ReLU):
        return ("relu",)
    if isinstance(module, nn.Flatten):
        return ("flatten",) if (module.start_dim, module.end_dim) == (1, -1) else False
    if isinstance(module, nn.Linear):
        return ("linear", f"{name}.weight", f"{name}.bias" if module.bias is not None else None)
    return False


def conv_input_shape(nd: int, sample: tuple[int, ...]) -> tuple[int, ...]:
    """A sample's (C_in, height, width) for a first convolution of ``nd`` dimensions.  A 1-D one takes
    signals as (C_in, 1, length): C_in is the sample's first axis when it has two, else 1 (a flat
    signal, which the model's own Unflatten gives one channel); a 2-D one needs (C_in, height, width)."""
    if nd == 1 and len(sample) <= 2:
        return (sample[0] if len(sample) == 2 else 1, 1, sample[-1])
    if nd == 2 and len(sample) == 3:
        return sample
    raise ValueError(f"a {nd}-D convolution cannot take samples of shape {sample}")


def _tuple(value, nd: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * nd
