"""``cnn1d``: the MNIST-1D paper's convolutional baseline (Greydanus 2020, ``ConvBase`` of its code)."""

from __future__ import annotations

from typing import Any

from asyncfl.learn.models._base import ModelSpec


def build(input_shape: tuple[int, ...], num_classes: int, channels: int = 25, **options: Any) -> Any:
    """Three ReLU convolutions of 25 channels (kernel 5 then 3, 3; stride 2, padding 1) and a linear layer;
    5,210 parameters on 40-point signals.  A ``(length,)`` input first gains its channel axis."""
    import torch
    from torch import nn

    if len(input_shape) not in (1, 2) or (len(input_shape) == 2 and input_shape[0] != 1):
        raise ValueError(f"cnn1d needs one-channel 1-D signals (length,) or (1, length), got shape {input_shape}")
    as_signal = nn.Unflatten(1, (1, input_shape[0])) if len(input_shape) == 1 else nn.Identity()
    body = nn.Sequential(
        as_signal,
        nn.Conv1d(1, channels, 5, stride=2, padding=1), nn.ReLU(),
        nn.Conv1d(channels, channels, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv1d(channels, channels, 3, stride=2, padding=1), nn.ReLU(),
        nn.Flatten(),
    )  # fmt: skip
    with torch.no_grad():
        flat = body(torch.zeros(1, *input_shape)).shape[1]
    return nn.Sequential(body, nn.Linear(flat, num_classes))


MODEL = ModelSpec("cnn1d", build, inputs=("signals",), needs="convolves over one-dimensional signals", order=50)
