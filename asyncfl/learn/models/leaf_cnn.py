"""``leaf_cnn``: LEAF's FEMNIST model (Caldas et al. 2018, "LEAF: A Benchmark for Federated Settings",
``models/femnist/cnn.py`` of its code): two 5x5 convolutions of 32 and 64 channels ("same" padding), each
followed by ReLU and 2x2 max-pooling, a dense layer of 2048 ReLU units and the classifier; 6,603,710
parameters on FEMNIST's 1x28x28 images and 62 classes.

It is a chain of Conv2d / ReLU / MaxPool2d / Flatten / Linear, so ``trainer.executor: auto`` trains it
with the fused convolution kernel (:mod:`asyncfl.learn.fused_conv`)."""

from __future__ import annotations

from typing import Any

from asyncfl.learn.models._base import ModelSpec


def build(input_shape: tuple[int, ...], num_classes: int, **options: Any) -> Any:
    """Padding 2 keeps a 5x5 convolution's size ("same", as LEAF's TensorFlow layers): 28 -> 14 -> 7 after the pools."""
    import torch
    from torch import nn

    if len(input_shape) != 3:
        raise ValueError(f"leaf_cnn needs image inputs (channels, height, width), got shape {input_shape}")
    body = nn.Sequential(
        nn.Conv2d(input_shape[0], 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
    )  # fmt: skip
    with torch.no_grad():
        flat = body(torch.zeros(1, *input_shape)).shape[1]
    return nn.Sequential(body, nn.Linear(flat, 2048), nn.ReLU(), nn.Linear(2048, num_classes))


MODEL = ModelSpec("leaf_cnn", build, inputs=("images",), needs="convolves over images", order=45)
