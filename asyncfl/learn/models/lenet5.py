"""``lenet5``: LeCun et al. (1998) with ReLU and max-pooling."""

from __future__ import annotations

from typing import Any

from asyncfl.learn.models._base import ModelSpec


def build(input_shape: tuple[int, ...], num_classes: int, **options: Any) -> Any:
    """Small inputs (digits' 8x8) keep padding in conv2."""
    import torch
    from torch import nn

    if len(input_shape) != 3:
        raise ValueError(f"lenet5 needs image inputs (channels, height, width), got shape {input_shape}")
    channels, height, _ = input_shape
    conv2_padding = 0 if height >= 16 else 2
    body = nn.Sequential(
        nn.Conv2d(channels, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5, padding=conv2_padding), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
    )  # fmt: skip
    with torch.no_grad():
        flat = body(torch.zeros(1, *input_shape)).shape[1]
    return nn.Sequential(
        body, nn.Linear(flat, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, num_classes)
    )


MODEL = ModelSpec("lenet5", build, inputs=("images",), needs="convolves over images", order=30)
