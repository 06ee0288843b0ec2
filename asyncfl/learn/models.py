"""Models of the learning world: logistic regression, MLP, LeNet-5 and ResNet-18 (GroupNorm).

ResNet-18 uses GroupNorm instead of BatchNorm: batch statistics would mix clients in a batched
trainer and are a known problem under non-IID federated data (Hsieh et al., 2020).
"""

from __future__ import annotations

import math

import torch
from torch import nn


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int, hidden: int = 200) -> nn.Module:
    features = math.prod(input_shape)
    if name == "logreg":
        return nn.Sequential(nn.Flatten(), nn.Linear(features, num_classes))
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))
    if name == "lenet5":
        return _lenet5(input_shape, num_classes)
    if name == "resnet18":
        return _resnet18(input_shape, num_classes)
    raise ValueError(f"unknown model {name!r}; available: logreg, mlp, lenet5, resnet18")


def _lenet5(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """LeCun et al. (1998) with ReLU and max-pooling; small inputs (digits' 8x8) keep padding in conv2."""
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


def _resnet18(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    from torchvision.models import resnet18

    if len(input_shape) != 3:
        raise ValueError(f"resnet18 needs image inputs (channels, height, width), got shape {input_shape}")
    model = resnet18(num_classes=num_classes, norm_layer=lambda c: nn.GroupNorm(min(32, c // 2), c))
    model.conv1 = nn.Conv2d(input_shape[0], 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()  # small images (CIFAR-style): keep resolution
    return model


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
