"""``resnet18``: torchvision's ResNet-18 with GroupNorm instead of BatchNorm and a 3x3 stem for small images.

Batch statistics would mix clients in a batched trainer and are a known problem under non-IID
federated data (Hsieh et al., 2020).
"""

from __future__ import annotations

from typing import Any

from asyncfl.learn.models._base import ModelSpec


def build(input_shape: tuple[int, ...], num_classes: int, **options: Any) -> Any:
    from torch import nn
    from torchvision.models import resnet18

    if len(input_shape) != 3:
        raise ValueError(f"resnet18 needs image inputs (channels, height, width), got shape {input_shape}")
    model = resnet18(num_classes=num_classes, norm_layer=lambda c: nn.GroupNorm(min(32, c // 2), c))
    model.conv1 = nn.Conv2d(input_shape[0], 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()  # small images (CIFAR-style): keep resolution
    return model


MODEL = ModelSpec("resnet18", build, inputs=("images",), needs="convolves over images", order=40)
