"""Models of the learning world: logistic regression, MLP, LeNet-5, ResNet-18 (GroupNorm) and a 1-D CNN.

ResNet-18 uses GroupNorm instead of BatchNorm: batch statistics would mix clients in a batched
trainer and are a known problem under non-IID federated data (Hsieh et al., 2020).
"""

from __future__ import annotations

import math

import torch
from torch import nn


def build_model(
    name: str, input_shape: tuple[int, ...], num_classes: int, hidden: int = 200, layers: int = 1
) -> nn.Module:
    """``hidden`` and ``layers`` shape the mlp only: ``layers`` ReLU layers of ``hidden`` units each."""
    features = math.prod(input_shape)
    if name == "logreg":
        return nn.Sequential(nn.Flatten(), nn.Linear(features, num_classes))
    if name == "mlp":
        body: list[nn.Module] = [nn.Flatten()]
        for width_in in [features] + [hidden] * (layers - 1):
            body += [nn.Linear(width_in, hidden), nn.ReLU()]
        return nn.Sequential(*body, nn.Linear(hidden, num_classes))
    if name == "lenet5":
        return _lenet5(input_shape, num_classes)
    if name == "resnet18":
        return _resnet18(input_shape, num_classes)
    if name == "cnn1d":
        return _cnn1d(input_shape, num_classes)
    raise ValueError(f"unknown model {name!r}; available: logreg, mlp, lenet5, resnet18, cnn1d")


class _AsSignal(nn.Module):
    """``[n, length]`` or ``[n, 1, length]`` to ``[n, 1, length]``: the channel axis a Conv1d needs."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], 1, x.shape[-1])


def _cnn1d(input_shape: tuple[int, ...], num_classes: int, channels: int = 25) -> nn.Module:
    """The MNIST-1D paper's convolutional baseline (Greydanus 2020, ``ConvBase`` of its code): three
    ReLU convolutions of 25 channels (kernel 5 then 3, 3; stride 2, padding 1) and a linear layer;
    5,210 parameters on 40-point signals."""
    if len(input_shape) not in (1, 2) or (len(input_shape) == 2 and input_shape[0] != 1):
        raise ValueError(f"cnn1d needs one-channel 1-D signals (length,) or (1, length), got shape {input_shape}")
    body = nn.Sequential(
        _AsSignal(),
        nn.Conv1d(1, channels, 5, stride=2, padding=1), nn.ReLU(),
        nn.Conv1d(channels, channels, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv1d(channels, channels, 3, stride=2, padding=1), nn.ReLU(),
        nn.Flatten(),
    )  # fmt: skip
    with torch.no_grad():
        flat = body(torch.zeros(1, *input_shape)).shape[1]
    return nn.Sequential(body, nn.Linear(flat, num_classes))


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
