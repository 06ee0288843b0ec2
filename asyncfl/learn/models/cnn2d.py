"""``cnn2d``: the FLGo anchor's small image CNN (``/work/shared/anchors/flgo/common.py``, ``CNN``):
two 3x3 convolutions of 16 and 32 channels (padding 1), each followed by ReLU and 2x2 max-pooling,
then one linear layer; 6,090 parameters on digits' 1x8x8."""

from __future__ import annotations

from typing import Any

from asyncfl.learn.models._base import ModelSpec


def build(input_shape: tuple[int, ...], num_classes: int, **options: Any) -> Any:
    import torch
    from torch import nn

    if len(input_shape) != 3:
        raise ValueError(f"cnn2d needs image inputs (channels, height, width), got shape {input_shape}")
    body = nn.Sequential(
        nn.Conv2d(input_shape[0], 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
    )  # fmt: skip
    with torch.no_grad():
        flat = body(torch.zeros(1, *input_shape)).shape[1]
    return nn.Sequential(body, nn.Linear(flat, num_classes))


MODEL = ModelSpec("cnn2d", build, inputs=("images",), needs="convolves over images", order=35)
